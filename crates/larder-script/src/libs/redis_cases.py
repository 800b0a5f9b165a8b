#!/usr/bin/env python3
"""Fills in the expected outputs of the library test cases from a running redis-server.

Each `libs/*/tests.rs` holds cases as `(r#"<lua body>"#, r#"<expected>"#)`. This script runs
every body in redis-server (7.0.15 is the reference) inside `test_prelude.lua`'s `run`, the way
the Rust tests run it in larder, and rewrites the expected text in place:

    redis-server --port 16414 --save '' --daemonize yes
    python3 redis_cases.py 16414 cjson/tests.rs cmsgpack/tests.rs bit/tests.rs structs/tests.rs
"""
import os
import re
import sys

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
PRELUDE = open(os.path.join(HERE, "test_prelude.lua")).read()
CASE = re.compile(r'\(r(#+)"(.*?)"\1,\s*r(#+)"(.*?)"\3\)', re.S)
# cjson's settings live in C for the server's life: put the defaults back after each case.
RESET = """cjson.encode_sparse_array(false, 2, 10) cjson.encode_max_depth(1000)
cjson.decode_max_depth(1000) cjson.encode_number_precision(14)
cjson.encode_invalid_numbers(false) cjson.decode_invalid_numbers(true)
cjson.encode_keep_buffer(true)"""


def raw(text):
    hashes = "#"
    while '"' + hashes in text:
        hashes += "#"
    return f'r{hashes}"{text}"{hashes}'


def main():
    r = redis.Redis(port=int(sys.argv[1]))
    for path in sys.argv[2:]:
        path = os.path.join(HERE, path)
        src = open(path).read()

        def fill(m):
            body = m.group(2)
            got = r.eval(PRELUDE + "\nreturn run(function() " + body + " end)", 0)
            r.eval(RESET, 0)
            return f"({raw(body)}, {raw(got.decode())})"

        filled = CASE.sub(fill, src)
        with open(path, "w") as f:
            f.write(filled)


if __name__ == "__main__":
    main()
