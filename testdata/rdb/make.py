#!/usr/bin/env python3
"""Make the golden RDB files in this directory with a real redis-server (7.0.15).

Run from anywhere: `python3 testdata/rdb/make.py` (needs redis-server on PATH and the
`redis` package). For each file it starts redis-server on a temporary directory, fills it,
runs SAVE and copies dump.rdb here, and writes `<name>.expected`: one line per key, read back
from the server, in the form

    <db> TAB <key> TAB <type> TAB <OBJECT ENCODING> TAB <PEXPIRETIME> TAB <items>

where every byte string (key, items) is `x` followed by its hex, and items are: a string's
value; a list's elements in order; a hash's field and value pairs, by field; a set's members,
sorted; a sorted set's member and score pairs, in rank order (scores as Python's repr).

Files:
- dump.rdb: every type in its compact and full encodings (low listpack/intset limits, listed
  in LIMITS below, which the Rust tests load with), integer and LZF-compressed strings, a
  list with LZF-compressed quicklist nodes, keys in databases 0, 1 and 15, keys with
  deadlines, binary keys; maxmemory-policy allkeys-lru, so every key has an IDLE opcode.
- nochecksum.rdb: `rdbchecksum no` (CRC field 0) and `rdbcompression no`, allkeys-lfu (FREQ
  opcodes), default limits.
- empty.rdb: no keys.
- stream.rdb: a string key and a stream key.
- function.rdb: a function library (FUNCTION2 opcode) before the keys.

Corrupt variants, made from those files (`make.py corrupt` remakes only these):
- dump-truncated.rdb: dump.rdb cut in the middle of a value (at byte 6000).
- dump-badcrc.rdb: dump.rdb with the last byte of its checksum flipped.
- dump-badvalue.rdb: dump.rdb with set_int's intset width set to 3, checksum recomputed, so
  the value decoder (not the checksum) must catch it.
- nochecksum-badvalue.rdb: nochecksum.rdb with the size field of key h's listpack changed.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))

# The limits dump.rdb is written under (also in crates/larder-persist/src/rdb/file/tests.rs).
LIMITS = {
    "hash-max-listpack-entries": "8",
    "hash-max-listpack-value": "16",
    "set-max-intset-entries": "8",
    "zset-max-listpack-entries": "8",
    "zset-max-listpack-value": "16",
    "list-max-listpack-size": "4",
}

# Deadlines far in the future, fixed so that the expected files do not change between runs.
AT_2100 = 4102444800000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(tmp, config):
    port = free_port()
    args = ["redis-server", "--port", str(port), "--dir", tmp, "--save", "",
            "--appendonly", "no", "--databases", "16"]
    for k, v in config.items():
        args += ["--" + k, v]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(100):
        try:
            r.ping()
            return proc, port
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("redis-server did not start")


def x(b):
    if isinstance(b, str):
        b = b.encode()
    return "x" + b.hex()


def expected_lines(port):
    lines = []
    for db in range(16):
        r = redis.Redis(port=port, db=db)
        for key in sorted(r.keys()):
            t = r.type(key).decode()
            enc = r.object("encoding", key).decode()
            at = r.execute_command("PEXPIRETIME", key)
            if t == "string":
                items = [r.get(key)]
            elif t == "list":
                items = r.lrange(key, 0, -1)
            elif t == "hash":
                items = [b for f, v in sorted(r.hgetall(key).items()) for b in (f, v)]
            elif t == "set":
                items = sorted(r.smembers(key))
            elif t == "zset":
                items = [b for m, s in r.zrange(key, 0, -1, withscores=True)
                         for b in (m, repr(s))]
            else:
                items = []
            lines.append("\t".join([str(db), x(key), t, enc, str(at),
                                    " ".join(x(i) for i in items)]))
    return lines


def save(name, config, fill, expected=True):
    tmp = tempfile.mkdtemp()
    proc, port = start(tmp, config)
    try:
        fill(port)
        r = redis.Redis(port=port)
        r.save()
        shutil.copy(os.path.join(tmp, "dump.rdb"), os.path.join(HERE, name + ".rdb"))
        if expected:
            with open(os.path.join(HERE, name + ".expected"), "w") as f:
                f.write("# Made by make.py from redis-server's own replies; see there.\n")
                for line in expected_lines(port):
                    f.write(line + "\n")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp)


def noise(n, seed):
    """n bytes that LZF cannot compress (a linear congruential sequence)."""
    out = bytearray()
    v = seed
    for _ in range(n):
        v = (v * 1103515245 + 12345) & 0x7FFFFFFF
        out.append((v >> 16) & 0xFF)
    return bytes(out)


def fill_full(port):
    r = redis.Redis(port=port)
    # Strings: INT8/16/32 encodings, integers that stay text, LZF, raw, binary.
    for k, v in [("s_int8", "12"), ("s_neg", "-5"), ("s_int16", "-1000"),
                 ("s_int32", "100000"), ("s_int_min32", "-2147483648"),
                 ("s_big_int", "12345678901"), ("s_lead0", "012"), ("s_minus0", "-0"),
                 ("s_empty", ""), ("s_raw", "hello world"),
                 ("s_21", "abcdefghijklmnopqrstu")]:
        r.set(k, v)
    r.set("s_lzf", b"a" * 1000)
    r.set("s_lzf_text", b"the quick brown fox jumps over the lazy dog; " * 20)
    r.set("s_noise", noise(3000, 7))
    r.set("s_bytes", bytes(range(256)))
    r.set(b"\x00\xffbinary key\r\n", b"\x00value\xff")
    # Lists: several listpack nodes of 4, integers of every listpack width, long elements.
    r.rpush("l_small", "a", "1", "-1", "1000000", "hello")
    r.rpush("l_ints", *[str(v) for v in (0, 127, -4096, 4095, -32768, 32767, -8388608,
                                          8388607, -2**31, 2**31 - 1, -2**63, 2**63 - 1)])
    r.rpush("l_big", *[f"element-{i}" for i in range(100)])
    r.rpush("l_long", *[bytes([65 + i]) * 300 for i in range(6)])
    r.lpush("l_pushed_left", *[str(i) for i in range(10)])
    r.rpush("l_one", "only")
    r.rpush("l_noise", noise(5000, 3), "tail")
    # A list whose quicklist nodes are LZF-compressed in memory (saved as they are).
    r.config_set("list-compress-depth", "1")
    r.rpush("l_compressed", *[b"x" * 40 + str(i).encode() for i in range(40)])
    r.config_set("list-compress-depth", "0")
    # Hashes: listpack (small), hashtable (too many fields; a value too long).
    r.hset("h_small", mapping={"f1": "v1", "f2": "2", "n": "-300"})
    r.hset("h_big", mapping={f"field{i}": f"value{i}" for i in range(20)})
    r.hset("h_longval", mapping={"f": "v" * 100, "g": "1"})
    r.hset("h_lzf", mapping={f"k{i}": "yyyyyyyyyy" for i in range(6)})
    # Sets: intset (widths 2, 4, 8), hashtable (too many; strings).
    r.sadd("set_int", 1, 2, 3, -7, 300)
    r.sadd("set_int32", 70000, -70000, 1)
    r.sadd("set_int64", 2**40, -(2**62), 5)
    r.sadd("set_int_big", *range(100, 120))
    r.sadd("set_str", "a", "b", "c", "hello")
    r.sadd("set_mixed", "1", "2", "x")
    # Sorted sets: listpack (scores integer, fractional, huge, inf), skiplist.
    r.zadd("z_small", {"a": 1, "b": 2.5, "c": -3, "d": float("inf"), "e": float("-inf"),
                       "f": 1e300, "g": 0.1, "h": 2**62})
    r.zadd("z_big", {f"m{i}": i * 1.5 for i in range(20)})
    r.zadd("z_longmember", {"m" * 50: 1, "n": 2})
    # Deadlines (fixed absolute times).
    r.set("ttl_string", "v")
    r.pexpireat("ttl_string", AT_2100)
    r.hset("ttl_hash", mapping={"a": "1"})
    r.pexpireat("ttl_hash", AT_2100 + 123)
    r.rpush("ttl_list", "a", "b")
    r.pexpireat("ttl_list", AT_2100 + 1000)
    # Other databases; db 1 reuses names from db 0 with other values.
    r1 = redis.Redis(port=port, db=1)
    r1.set("s_raw", "db one")
    r1.sadd("set_str", "one")
    r1.set("only_in_1", "1")
    r15 = redis.Redis(port=port, db=15)
    r15.set("last_db", "15")
    r15.zadd("z15", {"a": 1})
    r15.set("ttl15", "x")
    r15.pexpireat("ttl15", AT_2100 + 15)


def fill_small(port):
    r = redis.Redis(port=port)
    r.set("s", "plain")
    r.set("n", "42")
    r.set("long", b"z" * 200)  # not compressed: rdbcompression no
    r.rpush("l", *[str(i) for i in range(300)])
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.sadd("set", 1, 2, 3)
    r.sadd("set_s", "p", "q")
    r.zadd("z", {"a": 1.5})
    r.set("ttl", "t")
    r.pexpireat("ttl", AT_2100)
    redis.Redis(port=port, db=3).set("in3", "three")


def fill_stream(port):
    r = redis.Redis(port=port)
    r.set("a_string", "before the stream")
    r.xadd("events", {"f": "v"}, id="1-1")


def fill_function(port):
    r = redis.Redis(port=port)
    r.execute_command("FUNCTION", "LOAD",
                      "#!lua name=mylib\n"
                      "redis.register_function('myfunc', function(keys, args) return 1 end)")
    r.set("k", "v")


def crc64(data):
    """Redis's CRC-64 (Jones polynomial, reflected, initial value 0, no final xor)."""
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x95AC9329AC4BC9B5 if crc & 1 else 0)
    return crc


def corrupt():
    def read(name):
        with open(os.path.join(HERE, name), "rb") as f:
            return bytearray(f.read())

    def write(name, data):
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)

    dump = read("dump.rdb")
    write("dump-truncated.rdb", dump[:6000])
    bad = bytearray(dump)
    bad[-1] ^= 0x01
    write("dump-badcrc.rdb", bad)
    # SET_INTSET (11), key "set_int", blob length 18, then the intset's width (u32 LE).
    at = dump.index(b"\x0b\x07set_int\x12") + 10
    assert dump[at:at + 4] == b"\x02\x00\x00\x00", dump[at:at + 4]
    bad = bytearray(dump)
    bad[at] = 3
    bad[-8:] = crc64(bad[:-8]).to_bytes(8, "little")
    write("dump-badvalue.rdb", bad)
    small = read("nochecksum.rdb")
    # HASH_LISTPACK (16), key "h", blob length, then the listpack's total size (u32 LE).
    at = small.index(b"\x10\x01h") + 4
    bad = bytearray(small)
    bad[at] ^= 0x01
    write("nochecksum-badvalue.rdb", bad)


def main():
    if sys.argv[1:] == ["corrupt"]:
        corrupt()
        return
    save("dump", {**LIMITS, "maxmemory-policy": "allkeys-lru"}, fill_full)
    save("nochecksum", {"rdbchecksum": "no", "rdbcompression": "no",
                        "maxmemory-policy": "allkeys-lfu"}, fill_small)
    save("empty", {}, lambda port: None)
    save("stream", {}, fill_stream, expected=False)
    save("function", {}, fill_function, expected=False)
    corrupt()


if __name__ == "__main__":
    main()
