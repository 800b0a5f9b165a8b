#!/usr/bin/env python3
"""Make the golden FUNCTION DUMP payloads in this directory with a real redis-server (7.0.15).

Run from anywhere: `python3 testdata/functions/make.py` (needs redis-server on PATH and the
`redis` package). For each payload it starts an empty redis-server, FUNCTION LOADs the
libraries, and writes:

- `<name>.dump`: FUNCTION DUMP's reply, byte for byte;
- `<name>.codes`: the libraries' codes in the payload's order, one per line, each in hex.

Payloads:
- empty: no library (the footer alone).
- one: one small library, stored as a plain string.
- unicode: a library whose code, description and reply hold non-ASCII text.
- compressed: a 28 KB library that Redis stores LZF-compressed.
- raw: a 20 KB library of pseudo-random text, too random to compress: a plain string with a
  32-bit length.
- several: three libraries in one payload.

Corrupt payloads (`bad-<name>.dump`, footer recomputed unless the name says otherwise) and
the error FUNCTION RESTORE answers for each on redis-server (the reply without its `-`), in
`bad-<name>.error`:
- bad-crc: one's last checksum byte flipped.
- bad-version: one's RDB version set to 11 (checksum recomputed).
- bad-short: nine bytes.
- bad-type: one's opcode replaced by 0 (a string value's type).
- bad-cut: one's body cut 20 bytes short (the string's length runs past the payload).
- bad-tail: one followed by a lone FUNCTION2 opcode.
- bad-lzf: compressed with its LZF string's original length one more than its data gives.
"""
import os
import random
import socket
import subprocess
import sys
import tempfile
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))

ONE = ("#!lua name=one\n"
       "redis.register_function('one', function(keys, args) return 1 end)")
UNICODE = ("#!lua name=uni\n"
           "-- h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c\u8a9e \U0001f389\n"
           "redis.register_function{function_name='uni', "
           "callback=function() return '\u00fcn\u00ef' end, "
           "description='d\u00e8scription \u2713', flags={'no-writes'}}")
COMPRESSED = "#!lua name=big\n" + "\n".join(
    f"redis.register_function('f{i}', function(keys, args) return {i} end)"
    for i in range(400))
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
RAW = ("#!lua name=raw\n-- "
       + "".join(random.Random(14).choices(ALPHABET, k=20000))
       + "\nredis.register_function('raw', function() return 'raw' end)")
THIRD = ("#!lua name=third\n"
         "local function helper(x) return x * 2 end\n"
         "redis.register_function('double', function(keys, args) "
         "return helper(tonumber(args[1])) end)\n"
         "redis.register_function('triple', function(keys, args) "
         "return 3 * tonumber(args[1]) end)")

PAYLOADS = {
    "empty": [],
    "one": [ONE],
    "unicode": [UNICODE],
    "compressed": [COMPRESSED],
    "raw": [RAW],
    "several": [ONE, UNICODE, THIRD],
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start():
    tmp = tempfile.mkdtemp()
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--dir", tmp, "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(100):
        try:
            r.ping()
            return proc, r
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("redis-server did not start")


def crc64(data):
    """Redis's CRC-64 (Jones polynomial, reflected, initial value 0, no final xor)."""
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x95AC9329AC4BC9B5 if crc & 1 else 0)
    return crc


def footer(body, version=10):
    body = bytes(body) + version.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


def as_dict(reply):
    """A map reply as a dict with bytes keys (redis-py may have made it a dict already)."""
    if not isinstance(reply, dict):
        reply = dict(zip(reply[::2], reply[1::2]))
    return {k.encode() if isinstance(k, str) else k: v for k, v in reply.items()}


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def main():
    proc, r = start()
    try:
        dumps = {}
        for name, codes in PAYLOADS.items():
            r.execute_command("FUNCTION", "FLUSH")
            for code in codes:
                r.execute_command("FUNCTION", "LOAD", code)
            dumps[name] = r.execute_command("FUNCTION", "DUMP")
            write(name + ".dump", dumps[name])
            # FUNCTION LIST walks the libraries in the order FUNCTION DUMP writes them.
            listed = r.execute_command("FUNCTION", "LIST", "WITHCODE")
            ordered = [as_dict(lib)[b"library_code"] for lib in listed]
            assert sorted(ordered) == sorted(c.encode() for c in codes)
            write(name + ".codes", b"".join(c.hex().encode() + b"\n" for c in ordered))
        one = dumps["one"][:-10]
        bad = {
            "crc": dumps["one"][:-1] + bytes([dumps["one"][-1] ^ 1]),
            "version": footer(one, 11),
            "short": dumps["one"][:9],
            "type": footer(b"\x00" + one[1:]),
            "cut": footer(one[:-20]),
            "tail": footer(one + b"\xf5"),
        }
        # FUNCTION2, LZF marker, compressed length (2 bytes), then the original length as
        # 0x80 and a u32 BE: one more than the data decompresses to.
        comp = bytearray(dumps["compressed"][:-10])
        assert comp[:2] == b"\xf5\xc3" and comp[4] == 0x80, comp[:9]
        comp[8] += 1
        bad["lzf"] = footer(comp)
        for name, payload in bad.items():
            write(f"bad-{name}.dump", payload)
            r.execute_command("FUNCTION", "FLUSH")
            try:
                r.execute_command("FUNCTION", "RESTORE", payload)
                error = "OK"
            except redis.ResponseError as e:
                # redis-py drops the reply's "ERR " prefix; every one of these has it.
                error = "ERR " + str(e)
            write(f"bad-{name}.error", (error + "\n").encode())
    finally:
        proc.kill()


if __name__ == "__main__":
    main()
