"""A differential test of the Redis door: random sequences of commands go to a real
redis-server 7.0 (Debian's) and to larder, and every reply must be the same RESP frame, type
and error text included, after the normalisations below.

Each sequence is drawn from a seed: FLUSHALL on both, then `LENGTH` commands over a small key
pool (the same names serve every type, so WRONGTYPE and type changes come up) with arguments
drawn to hit edge cases (integers at the limits, floats and infinities, empty strings, indexes
out of range, options in conflict), blocking commands with timeouts short enough to expire,
and keys given 20 ms to live followed by a wait past it (active expiry is off in both servers,
DEBUG SET-ACTIVE-EXPIRE 0, so each such key goes when a command finds it, at the same point
of the sequence in both). Half the seeds speak RESP2 and half RESP3. What the comparison
needs to know of the data (a key's type, its scores) is read from both servers alike, since
a read expires a key past its deadline. A second test
runs the same sequences with `notify-keyspace-events KEA` and a pattern subscriber on each
server, and compares the notifications every command causes, in order.

Normalised, because Redis leaves them unspecified:
- the order of replies that are sets (SMEMBERS, SINTER, HKEYS, HGETALL, KEYS, full SCANs):
  sorted; SORT ... BY of a set or sorted set too (redis-server sorts those from its hash
  table, so elements with equal BY values come in its table's order);
- TTL and PTTL: any remaining time is one value (the two servers' clocks differ by the test's
  own latency);
- a lexicographic range command over a sorted set of mixed scores is not sent (`is_lex`).

Not compared, where larder differs on purpose (README, "Status and compatibility"): OBJECT
ENCODING of a key INCRBYFLOAT or SORT touched (`Loose`).

Commands with random results (SPOP, SRANDMEMBER, HRANDFIELD, RANDOMKEY, ...) are not drawn,
and no key expires while a sequence runs.

A mismatch fails with the seed, the command and every command before it, so it replays:
`python tests/python/test_redis_diff.py --seed N` runs one seed against fresh servers (larder
from target/release or LARDER_BIN, redis-server from PATH), and `--seeds 10000` a longer run
than the suite's.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

import pytest

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from conftest import Frame, RawConn  # noqa: E402

pytestmark = pytest.mark.larder_only

SEEDS = int(os.environ.get("REDIS_DIFF_SEEDS", "150"))
LENGTH = 150
DEBUG = ("--enable-debug-command", "yes")  # for DEBUG SET-ACTIVE-EXPIRE 0

# ---------------------------------------------------------------- argument pools

KEYS = ["k0", "k1", "k2", "k3", "k4"]
MEMBERS = ["a", "b", "c", "d", "e", "f", "1", "2", "10", ""]
INTS = ["0", "1", "-1", "2", "3", "10", "-10", "100", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "007", "+1", " 1", "1 ", "0x10", "",
        "abc", "1.5", "1e3"]
SMALL_INTS = ["0", "1", "2", "3", "-1", "-2", "-3", "5", "-100", "100"]
FLOATS = ["0", "1", "-1", "1.5", "-2.25", "0.1", "1e3", "1e-3", "3.0000000000000004", "inf",
          "-inf", "+inf", "nan", "abc", "", "10.50", "5e400", "-0", ".5", "1."]
SCORES = ["0", "1", "2", "-1", "1.5", "2.5", "inf", "-inf", "+inf", "3", "1e2", "nan", "x",
          "(1", "(2", "(-inf", "(+inf", "((1"]
LEX = ["-", "+", "[a", "(a", "[c", "(c", "[e", "[", "(", "a", "[1", "(10", "[f"]
STRINGS = ["", "a", "hello", "12", "-5", "3.5", "x" * 20, "héllo", "\x00\x01", "1e3"]


# Not a command: the sequence waits 25 ms here, past the 20 ms deadline a PEXPIRE just gave.
# redis-server's PEXPIRE reads the clock twice and deletes the key at once if the deadline
# passed in between (with 1 ms it sometimes does; 20 ms takes a stall a loaded machine
# should not see).
SLEEP = "(sleep)"


class Draw:
    """Random arguments for one sequence (random.Random with the sequence's seed)."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.ttls = 0

    def ttl(self) -> int:
        """A time to live in seconds, 1,000 or more, ten seconds past the last one drawn:
        deadlines set at different moments never tie, so EXPIRE ... GT/LT compares them the
        same way however many milliseconds the servers took in between."""
        self.ttls += 1
        return 1000 + 10 * self.ttls

    def pick(self, pool: list[str]) -> str:
        return self.r.choice(pool)

    def key(self) -> str:
        return self.pick(KEYS)

    def keys(self, lo: int = 1, hi: int = 3) -> list[str]:
        return [self.key() for _ in range(self.r.randint(lo, hi))]

    def member(self) -> str:
        return self.pick(MEMBERS)

    def members(self, lo: int = 1, hi: int = 4) -> list[str]:
        return [self.member() for _ in range(self.r.randint(lo, hi))]

    def int_(self) -> str:
        return self.pick(SMALL_INTS) if self.r.random() < 0.7 else self.pick(INTS)

    def float_(self) -> str:
        return self.pick(FLOATS)

    def string(self) -> str:
        return self.pick(STRINGS) if self.r.random() < 0.8 else self.pick(INTS)

    def maybe(self, p: float, *args: str) -> list[str]:
        return list(args) if self.r.random() < p else []

    def score(self) -> str:
        return self.pick(SCORES[:8]) if self.r.random() < 0.8 else self.pick(SCORES)

    def index(self) -> str:
        return self.pick(["0", "1", "2", "-1", "-2", "5", "-5", "100", "-100", "x"])


# ---------------------------------------------------------------- the commands

def _set(d: Draw) -> list[str]:
    args = ["SET", d.key(), d.string()]
    args += d.maybe(0.2, d.pick(["NX", "XX"]))
    args += d.maybe(0.15, "GET")
    args += d.maybe(0.2, *d.r.choice([["EX", str(d.ttl())], ["PX", str(d.ttl() * 1000)],
                                      ["KEEPTTL"], ["EX", "0"], ["EX", "-1"], ["PX", "x"],
                                      ["EX"]]))
    return args


def _zadd(d: Draw) -> list[str]:
    args = ["ZADD", d.key()]
    args += d.maybe(0.15, d.pick(["NX", "XX"]))
    args += d.maybe(0.15, d.pick(["GT", "LT"]))
    args += d.maybe(0.2, "CH")
    if d.r.random() < 0.15:
        return args + ["INCR", d.score(), d.member()]
    for _ in range(d.r.randint(1, 3)):
        args += [d.score(), d.member()]
    return args


def _zrange(d: Draw) -> list[str]:
    k = d.key()
    mode = d.r.random()
    if mode < 0.4:
        args = ["ZRANGE", k, d.index(), d.index()]
        args += d.maybe(0.3, "REV")
    elif mode < 0.7:
        args = ["ZRANGE", k, d.score(), d.score(), "BYSCORE"]
        args += d.maybe(0.3, "REV")
        args += d.maybe(0.3, "LIMIT", d.index(), d.index())
    else:
        args = ["ZRANGE", k, d.pick(LEX), d.pick(LEX), "BYLEX"]
        args += d.maybe(0.3, "REV")
        args += d.maybe(0.3, "LIMIT", d.index(), d.index())
    args += d.maybe(0.4, "WITHSCORES")
    return args


def _zstore(d: Draw) -> list[str]:
    name = d.pick(["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"])
    keys = d.keys(1, 3)
    args = [name, d.key(), str(len(keys)), *keys]
    if name != "ZDIFFSTORE":
        args += d.maybe(0.3, "WEIGHTS", *[d.pick(["1", "2", "-1", "0.5", "x", "inf"])
                                          for _ in keys])
        args += d.maybe(0.3, "AGGREGATE", d.pick(["SUM", "MIN", "MAX", "AVG"]))
    return args


def _zcombine(d: Draw) -> list[str]:
    name = d.pick(["ZUNION", "ZINTER", "ZDIFF"])
    keys = d.keys(1, 3)
    args = [name, str(len(keys)), *keys]
    if name != "ZDIFF":
        args += d.maybe(0.3, "AGGREGATE", d.pick(["SUM", "MIN", "MAX"]))
    return args + d.maybe(0.5, "WITHSCORES")


def _lmove(d: Draw) -> list[str]:
    return ["LMOVE", d.key(), d.key(), d.pick(["LEFT", "RIGHT"]), d.pick(["LEFT", "RIGHT", "UP"])]


def _expire(d: Draw) -> list[str]:
    name = d.pick(["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
    t = d.pick(["ttl", "ttl", "ttl", "-1", "0", "x", "9223372036854775807"])
    if t == "ttl":
        seconds = d.ttl() + (4_000_000_000 if name.endswith("AT") else 0)
        t = str(seconds * 1000 if name.startswith("P") else seconds)
    return [name, d.key(), t] + d.maybe(0.3, d.pick(["NX", "XX", "GT", "LT", "XX", "BAD"]))


def _setex(d: Draw) -> list[str]:
    name = d.pick(["SETEX", "PSETEX"])
    t = d.pick(["ttl", "ttl", "0", "-1", "x"])
    if t == "ttl":
        t = str(d.ttl() * (1000 if name == "PSETEX" else 1))
    return [name, d.key(), t, d.string()]


def _bitop(d: Draw) -> list[str]:
    op = d.pick(["AND", "OR", "XOR", "NOT", "NOR"])
    srcs = d.keys(1, 3) if op != "NOT" or d.r.random() < 0.2 else [d.key()]
    return ["BITOP", op, d.key(), *srcs]


COMMANDS: list[tuple[float, Callable[[Draw], list[str]]]] = [
    # strings
    (4, _set),
    (2, lambda d: ["GET", d.key()]),
    (1, lambda d: ["GETSET", d.key(), d.string()]),
    (1, lambda d: ["GETDEL", d.key()]),
    (1, lambda d: ["GETEX", d.key()] + d.maybe(0.5, *d.r.choice([["EX", str(d.ttl())],
                                                                  ["PERSIST"], ["PX", "0"],
                                                                  ["EXAT"]]))),
    (1, lambda d: ["SETNX", d.key(), d.string()]),
    (1, lambda d: ["MSET", *sum(([d.key(), d.string()] for _ in range(d.r.randint(1, 3))), [])]),
    (1, lambda d: ["MSETNX", *sum(([d.key(), d.string()] for _ in range(d.r.randint(1, 3))), [])]),
    (1, lambda d: ["MGET", *d.keys()]),
    (2, lambda d: ["APPEND", d.key(), d.string()]),
    (2, lambda d: ["INCR", d.key()]),
    (1, lambda d: ["DECR", d.key()]),
    (2, lambda d: ["INCRBY", d.key(), d.int_()]),
    (1, lambda d: ["DECRBY", d.key(), d.int_()]),
    (2, lambda d: ["INCRBYFLOAT", d.key(), d.float_()]),
    (1, lambda d: ["STRLEN", d.key()]),
    (1, lambda d: ["SETRANGE", d.key(), d.pick(["0", "1", "3", "-1", "x", "10"]), d.string()]),
    (1, lambda d: ["GETRANGE", d.key(), d.index(), d.index()]),
    (1, lambda d: ["SUBSTR", d.key(), d.index(), d.index()]),
    (0.5, lambda d: ["LCS", d.key(), d.key()] + d.maybe(0.3, d.pick(["LEN", "IDX"]))),
    # bitmaps
    (1, lambda d: ["SETBIT", d.key(), d.pick(["0", "1", "7", "8", "15", "100", "-1", "x"]),
                   d.pick(["0", "1", "2"])]),
    (1, lambda d: ["GETBIT", d.key(), d.pick(["0", "1", "7", "100", "-1"])]),
    (1, lambda d: ["BITCOUNT", d.key()] + d.maybe(0.5, d.index(), d.index())
     + d.maybe(0.2, d.pick(["BYTE", "BIT", "BAD"]))),
    (1, lambda d: ["BITPOS", d.key(), d.pick(["0", "1", "2"])] + d.maybe(0.5, d.index())
     + d.maybe(0.3, d.index())),
    (0.5, _bitop),
    # lists
    (3, lambda d: [d.pick(["LPUSH", "RPUSH"]), d.key(), *d.members()]),
    (1, lambda d: [d.pick(["LPUSHX", "RPUSHX"]), d.key(), *d.members()]),
    (2, lambda d: [d.pick(["LPOP", "RPOP"]), d.key()] + d.maybe(0.4, d.index())),
    (2, lambda d: ["LRANGE", d.key(), d.index(), d.index()]),
    (1, lambda d: ["LINDEX", d.key(), d.index()]),
    (1, lambda d: ["LSET", d.key(), d.index(), d.member()]),
    (1, lambda d: ["LINSERT", d.key(), d.pick(["BEFORE", "AFTER", "MIDDLE"]), d.member(),
                   d.member()]),
    (1, lambda d: ["LREM", d.key(), d.index(), d.member()]),
    (1, lambda d: ["LTRIM", d.key(), d.index(), d.index()]),
    (1, lambda d: ["LLEN", d.key()]),
    (1, lambda d: ["LPOS", d.key(), d.member()] + d.maybe(0.3, "RANK", d.index())
     + d.maybe(0.3, "COUNT", d.pick(["0", "1", "2", "-1"]))
     + d.maybe(0.2, "MAXLEN", d.pick(["0", "1", "3"]))),
    (1, _lmove),
    (0.5, lambda d: ["RPOPLPUSH", d.key(), d.key()]),
    (0.5, lambda d: ["LMPOP", "2", d.key(), d.key(), d.pick(["LEFT", "RIGHT"])]
     + d.maybe(0.4, "COUNT", d.pick(["1", "2", "0", "-1"]))),
    # hashes
    (3, lambda d: [d.pick(["HSET", "HMSET"]), d.key(),
                   *sum(([d.member(), d.string()] for _ in range(d.r.randint(1, 3))), [])]),
    (1, lambda d: ["HSETNX", d.key(), d.member(), d.string()]),
    (2, lambda d: ["HGET", d.key(), d.member()]),
    (1, lambda d: ["HMGET", d.key(), *d.members()]),
    (1, lambda d: ["HDEL", d.key(), *d.members()]),
    (1, lambda d: ["HINCRBY", d.key(), d.member(), d.int_()]),
    (1, lambda d: ["HINCRBYFLOAT", d.key(), d.member(), d.float_()]),
    (1, lambda d: ["HGETALL", d.key()]),
    (1, lambda d: [d.pick(["HKEYS", "HVALS", "HLEN"]), d.key()]),
    (1, lambda d: ["HEXISTS", d.key(), d.member()]),
    (1, lambda d: ["HSTRLEN", d.key(), d.member()]),
    # sets
    (3, lambda d: ["SADD", d.key(), *d.members()]),
    (1, lambda d: ["SREM", d.key(), *d.members()]),
    (1, lambda d: ["SMEMBERS", d.key()]),
    (1, lambda d: ["SISMEMBER", d.key(), d.member()]),
    (1, lambda d: ["SMISMEMBER", d.key(), *d.members()]),
    (1, lambda d: ["SCARD", d.key()]),
    (1, lambda d: [d.pick(["SINTER", "SUNION", "SDIFF"]), *d.keys()]),
    (1, lambda d: [d.pick(["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]), d.key(), *d.keys()]),
    (0.5, lambda d: ["SINTERCARD", "2", d.key(), d.key()]
     + d.maybe(0.4, "LIMIT", d.pick(["0", "1", "-1", "x"]))),
    (1, lambda d: ["SMOVE", d.key(), d.key(), d.member()]),
    # sorted sets
    (4, _zadd),
    (1, lambda d: ["ZINCRBY", d.key(), d.score(), d.member()]),
    (1, lambda d: ["ZSCORE", d.key(), d.member()]),
    (1, lambda d: ["ZMSCORE", d.key(), *d.members()]),
    (1, lambda d: ["ZREM", d.key(), *d.members()]),
    (1, lambda d: ["ZCARD", d.key()]),
    (1, lambda d: [d.pick(["ZRANK", "ZREVRANK"]), d.key(), d.member()]),
    (1, lambda d: ["ZCOUNT", d.key(), d.score(), d.score()]),
    (1, lambda d: ["ZLEXCOUNT", d.key(), d.pick(LEX), d.pick(LEX)]),
    (3, _zrange),
    (1, lambda d: ["ZRANGEBYSCORE", d.key(), d.score(), d.score()]
     + d.maybe(0.4, "WITHSCORES") + d.maybe(0.3, "LIMIT", d.index(), d.index())),
    (1, lambda d: ["ZREVRANGEBYSCORE", d.key(), d.score(), d.score()]
     + d.maybe(0.4, "WITHSCORES")),
    (1, lambda d: ["ZRANGEBYLEX", d.key(), d.pick(LEX), d.pick(LEX)]),
    (1, lambda d: ["ZREVRANGE", d.key(), d.index(), d.index()] + d.maybe(0.4, "WITHSCORES")),
    (1, lambda d: [d.pick(["ZPOPMIN", "ZPOPMAX"]), d.key()] + d.maybe(0.4, d.index())),
    (1, lambda d: ["ZREMRANGEBYSCORE", d.key(), d.score(), d.score()]),
    (1, lambda d: ["ZREMRANGEBYRANK", d.key(), d.index(), d.index()]),
    (1, lambda d: ["ZREMRANGEBYLEX", d.key(), d.pick(LEX), d.pick(LEX)]),
    (1, _zstore),
    (1, _zcombine),
    (0.5, lambda d: ["ZRANGESTORE", d.key(), d.key(), d.index(), d.index()]),
    (0.5, lambda d: ["ZMPOP", "2", d.key(), d.key(), d.pick(["MIN", "MAX"])]
     + d.maybe(0.4, "COUNT", d.pick(["1", "2", "0"]))),
    # keys
    (2, lambda d: ["DEL", *d.keys()]),
    (1, lambda d: ["UNLINK", *d.keys()]),
    (1, lambda d: ["EXISTS", *d.keys()]),
    (2, lambda d: ["TYPE", d.key()]),
    (1, lambda d: ["RENAME", d.key(), d.key()]),
    (1, lambda d: ["RENAMENX", d.key(), d.key()]),
    (1, lambda d: ["COPY", d.key(), d.key()] + d.maybe(0.4, "REPLACE")),
    (1, _expire),
    (1, lambda d: ["PERSIST", d.key()]),
    (1, lambda d: [d.pick(["TTL", "PTTL"]), d.key()]),
    (0.5, lambda d: ["KEYS", d.pick(["*", "k*", "k[0-2]", "?1", "x*"])]),
    (0.3, lambda d: ["DBSIZE"]),
    (0.5, lambda d: ["SORT", d.key()] + d.maybe(0.4, "ALPHA") + d.maybe(0.3, "DESC")
     + d.maybe(0.2, "LIMIT", d.index(), d.index()) + d.maybe(0.2, "STORE", d.key())),
    (0.3, lambda d: ["OBJECT", "ENCODING", d.key()]),
    (0.5, lambda d: ["SORT", d.key(), "BY", d.pick(["k*", "k*->a", "w_*"])]
     + d.maybe(0.5, "GET", d.pick(["#", "k*", "k*->a", "k*->b"]))
     + d.maybe(0.3, "ALPHA")),  # no STORE: a set's ties land in an order of its own
    # expiring writes
    (1, _setex),
    # full scans (one call: COUNT covers every key of these small sets)
    (0.5, lambda d: ["SCAN", "0", "COUNT", "1000"] + d.maybe(0.4, "MATCH", d.pick(["k*", "*1"]))
     # Not TYPE none: redis-server 7.0 returns a key that the same SCAN just expired there.
     + d.maybe(0.4, "TYPE", d.pick(["string", "list", "hash", "set", "zset", "stream"]))),
    (0.5, lambda d: [d.pick(["SSCAN", "HSCAN", "ZSCAN"]), d.key(), "0", "COUNT", "1000"]
     + d.maybe(0.3, "MATCH", d.pick(["*", "a*", "1*"]))),
    # HyperLogLog
    (1, lambda d: ["PFADD", d.key(), *d.members(0, 4)]),
    (0.5, lambda d: ["PFCOUNT", *d.keys(1, 2)]),
    (0.3, lambda d: ["PFMERGE", d.key(), *d.keys(1, 2)]),
    # geo
    (1, lambda d: ["GEOADD", d.key()] + d.maybe(0.2, d.pick(["NX", "XX", "CH"]))
     + sum(([d.pick(["13.361389", "15.087269", "-122.4194", "0", "180", "181", "x"]),
             d.pick(["38.115556", "37.502669", "37.7749", "0", "85.05112878", "86"]),
             d.member()] for _ in range(d.r.randint(1, 2))), [])),
    (0.5, lambda d: ["GEODIST", d.key(), d.member(), d.member()]
     + d.maybe(0.5, d.pick(["m", "km", "mi", "ft", "parsecs"]))),
    (0.5, lambda d: [d.pick(["GEOPOS", "GEOHASH"]), d.key(), *d.members()]),
    (0.5, lambda d: ["GEOSEARCH", d.key()]
     + d.r.choice([["FROMMEMBER", d.member()], ["FROMLONLAT", "15", "37"]])
     + d.r.choice([["BYRADIUS", d.pick(["200", "500", "1"]), "km"],
                   ["BYBOX", "400", "400", "km"]])
     + d.maybe(0.5, d.pick(["ASC", "DESC"]))
     + d.maybe(0.3, "COUNT", d.pick(["1", "2", "0"]))
     + d.maybe(0.4, "WITHCOORD") + d.maybe(0.4, "WITHDIST") + d.maybe(0.3, "WITHHASH")),
    # bitfields
    (1, lambda d: ["BITFIELD", d.key()] + sum((d.r.choice([
        ["GET", d.pick(["u8", "i8", "u4", "i16", "u63", "i64", "u64", "x"]),
         d.pick(["0", "1", "#1", "7", "-1"])],
        ["SET", d.pick(["u8", "i8", "u1", "i5"]), d.pick(["0", "#2", "3"]), d.int_()],
        ["INCRBY", d.pick(["u8", "i8", "u2", "i32"]), d.pick(["0", "#1"]), d.int_()],
        ["OVERFLOW", d.pick(["WRAP", "SAT", "FAIL", "BAD"])]]) for _ in range(d.r.randint(1, 3))),
        [])),
    (0.3, lambda d: ["BITFIELD_RO", d.key(), "GET", d.pick(["u8", "i4"]), d.pick(["0", "3"])]),
    # streams (explicit IDs, so both servers hold the same entries)
    (1, lambda d: ["XADD", d.key()] + d.maybe(0.2, "NOMKSTREAM")
     + d.maybe(0.2, "MAXLEN", d.pick(["2", "=3", "0"]))
     + [d.pick(["1-1", "2-0", "3-5", "5", "0-0", "0-1", "1-*", "x", "9-9"]),
        d.member(), d.string()]),
    (0.5, lambda d: [d.pick(["XRANGE", "XREVRANGE"]), d.key(),
                     d.pick(["-", "+", "1", "(1-1", "3"]), d.pick(["+", "-", "5", "2-0"])]
     + d.maybe(0.3, "COUNT", d.pick(["1", "2", "0"]))),
    (0.5, lambda d: ["XLEN", d.key()]),
    (0.3, lambda d: ["XDEL", d.key(), d.pick(["1-1", "2-0", "9-9"])]),
    (0.3, lambda d: ["XTRIM", d.key(), d.pick(["MAXLEN", "MINID"]), d.pick(["1", "2-0", "0"])]),
    (0.3, lambda d: ["XREAD", "COUNT", "2", "STREAMS", d.key(), d.pick(["0", "1-1", "$"])]),
    (0.3, lambda d: ["XGROUP", "CREATE", d.key(), "g", d.pick(["0", "$"])]
     + d.maybe(0.3, "MKSTREAM")),
    (0.3, lambda d: ["XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", d.key(), ">"]),
    (0.3, lambda d: ["XACK", d.key(), "g", d.pick(["1-1", "2-0", "3-5"])]),
    (0.3, lambda d: ["XPENDING", d.key(), "g"]),
    (0.3, lambda d: ["SORT", d.key(), "BY", "nosort"] + d.maybe(0.3, "ALPHA")),
    # blocking commands, with timeouts short enough to time out on an empty key
    (0.3, lambda d: [d.pick(["BLPOP", "BRPOP"]), *d.keys(1, 2),
                     d.pick(["0.01", "0.02", "-1", "x"])]),
    (0.2, lambda d: ["BLMOVE", d.key(), d.key(), d.pick(["LEFT", "RIGHT"]),
                     d.pick(["LEFT", "RIGHT"]), "0.01"]),
    (0.2, lambda d: ["BRPOPLPUSH", d.key(), d.key(), "0.01"]),
    (0.2, lambda d: [d.pick(["BZPOPMIN", "BZPOPMAX"]), *d.keys(1, 2), "0.01"]),
    (0.2, lambda d: ["BLMPOP", "0.01", "2", d.key(), d.key(), d.pick(["LEFT", "RIGHT"])]
     + d.maybe(0.4, "COUNT", d.pick(["1", "2", "0"]))),
    (0.2, lambda d: ["BZMPOP", "0.01", "1", d.key(), d.pick(["MIN", "MAX"])]),
    (0.2, lambda d: ["XREAD", "BLOCK", "10", "STREAMS", d.key(), d.pick(["0", "$", "1-1"])]),
    # a key that expires: then it is gone for every command, found lazily (active expiry
    # is off in both servers, so when it is removed does not depend on timing)
    (0.3, lambda d: [["PEXPIRE", d.key(), "20"], [SLEEP]]),
    # transactions (a block: MULTI, a few commands, EXEC or DISCARD) and scripts
    (1, lambda d: [["MULTI"]] + sequence_of(d, d.r.randint(0, 4))
     + [[d.pick(["EXEC", "EXEC", "EXEC", "DISCARD"])]]),
    (0.2, lambda d: [d.pick(["EXEC", "DISCARD"])]),
    (0.5, lambda d: ["EVAL", d.pick([
        "return redis.call('GET', KEYS[1])",
        "return redis.call('INCR', KEYS[1])",
        "return redis.pcall('LPUSH', KEYS[1], 'x')",
        "return {1, 2.5, 'x', true, false, {err='bad'}}",
        "return redis.call('HGETALL', KEYS[1])",
        "return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
        "return redis.call('TYPE', KEYS[1])",
        "return redis.call('EXISTS', KEYS[1])",
        "return tonumber(redis.call('GET', KEYS[1]) or '0') * 2",
        "return redis.status_reply('FINE')",
        "return redis.error_reply('MY fault')",
        "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('STRLEN', KEYS[1])",
        "return redis.call('NOSUCH')",
    ]), "1", d.key(), d.string()]),
]

WEIGHTS = [w for w, _ in COMMANDS]
MAKERS = [m for _, m in COMMANDS]
UNORDERED = {"SMEMBERS", "SINTER", "SUNION", "SDIFF", "HKEYS", "HVALS", "KEYS"}
SCANS = {"SCAN", "SSCAN"}
PAIR_SCANS = {"HSCAN", "ZSCAN"}
UNORDERED_PAIRS = {"HGETALL"}
TTLS = {"TTL", "PTTL"}


def sequence_of(d: Draw, n: int, blocks: bool = False) -> list[list[str]]:
    """`n` commands drawn by `d` (with `blocks`, a block of several counts as one: a
    transaction, or a deadline and the wait for it; none are drawn inside a transaction)."""
    out: list[list[str]] = []
    while len(out) < n:
        made = d.r.choices(MAKERS, WEIGHTS)[0](d)
        if made and isinstance(made[0], list):
            if blocks:
                out += made
            continue
        out.append(made)
    return out


def sequence(seed: int, length: int = LENGTH) -> list[list[str]]:
    return sequence_of(Draw(seed), length, blocks=True)


# ---------------------------------------------------------------- comparing replies


def plain(f: Frame) -> Any:
    """A frame as nested tuples of (type, value), comparable and sortable."""
    if f.kind in ("*", "~", ">") and f.value is not None:
        return (f.kind, tuple(plain(x) for x in f.value))
    if f.kind in ("%", "|"):
        return (f.kind, tuple((plain(a), plain(b)) for a, b in f.value))
    if f.kind == "," and f.value != f.value:  # NaN
        return (",", "nan")
    return (f.kind, f.value)


class Loose:
    """What a reply may legitimately differ in, known only from the sequence so far."""

    def __init__(self) -> None:
        # Keys whose string or sorted set encoding Redis chose by history larder does not
        # keep: INCRBYFLOAT leaves an "embstr" even for "1" (larder reports by content), and
        # SORT converts a sorted set to "skiplist" for good (larder does not change a value
        # it only reads). OBJECT ENCODING of such a key is not compared.
        self.encoding_by_history: set[str] = set()

    def before(self, cmd: list[str]) -> None:
        name = cmd[0].upper()
        if name in ("INCRBYFLOAT", "SORT") and len(cmd) > 1:
            self.encoding_by_history.add(cmd[1])
        if name in ("RENAME", "RENAMENX", "COPY") and len(cmd) > 2 \
                and cmd[1] in self.encoding_by_history:
            self.encoding_by_history.add(cmd[2])


def normalise(cmd: list[str], f: Frame, ordered_source: bool = True,
              queued: list[tuple[list[str], bool]] | None = None,
              loose: Loose | None = None) -> Any:
    """`ordered_source`: SORT's key is a list, so elements that compare equal keep its order
    (redis-server sorts a set or a sorted set from its hash table, in no order larder can
    share); `queued`: the commands an EXEC runs."""
    name = cmd[0].upper()
    if name == "EXEC" and queued is not None and f.kind == "*" and f.value is not None \
            and len(f.value) == len(queued):
        return ("*", tuple(normalise(c, x, o, loose=loose) for (c, o), x in zip(queued, f.value)))
    p = plain(f)
    if name == "SORT" and "BY" in cmd and not ordered_source and f.kind == "*":
        return ("*", tuple(sorted(p[1], key=repr)))
    if name == "OBJECT" and loose and cmd[2] in loose.encoding_by_history and f.kind == "$":
        return ("$", "encoding not compared")
    if name in TTLS and f.kind == ":" and f.value >= 0:
        return (":", "remaining")
    if name in UNORDERED and f.kind in ("*", "~") and f.value is not None:
        return (f.kind, tuple(sorted(p[1], key=repr)))
    if name in SCANS | PAIR_SCANS and f.kind == "*" and len(f.value) == 2:
        cursor, items = p[1]
        if name in SCANS:
            return ("scan", cursor, tuple(sorted(items[1], key=repr)))
        pairs = zip(items[1][0::2], items[1][1::2])
        return ("scan", cursor, tuple(sorted(pairs, key=repr)))
    if name in UNORDERED_PAIRS:
        if f.kind == "%":
            return ("%", tuple(sorted(p[1], key=repr)))
        if f.kind == "*" and f.value is not None:
            items = p[1]
            pairs = sorted(zip(items[0::2], items[1::2]), key=repr)
            return ("*", tuple(pairs))
    return p


def is_lex(cmd: list[str]) -> bool:
    """A lexicographic range command: over a sorted set whose scores differ, Redis documents
    its result as unspecified (redis-server's skiplist walk then depends on its random node
    levels), so such a command is not sent at all, and none inside MULTI, where the scores
    when EXEC runs it are not known here."""
    name = cmd[0].upper()
    return name in ("ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZLEXCOUNT", "ZREMRANGEBYLEX") \
        or (name in ("ZRANGE", "ZRANGESTORE") and "BYLEX" in cmd)


def mixed_scores(conn: RawConn | Both, key: str) -> bool:
    if conn.call("TYPE", key) != "zset":
        return False
    return len(set(conn.call("ZRANGE", key, "0", "-1", "WITHSCORES")[1::2])) > 1


class Both:
    """A read sent to both servers; the answer is redis-server's."""

    def __init__(self, conns: list[RawConn]) -> None:
        self.conns = conns

    def call(self, *args: str) -> Any:
        return [c.call(*args) for c in self.conns][0]


class Mismatch(AssertionError):
    pass


def subscriber(port: int) -> RawConn:
    """A connection that receives every keyspace and keyevent notification."""
    s = RawConn(port)
    s.call("PSUBSCRIBE", "__key*__:*")
    return s


def events_so_far(s: RawConn) -> list[tuple[bytes, bytes]]:
    """The (channel, message) of every notification before the reply to a PING sent now:
    a server delivers a command's notifications before its reply to the next command."""
    s.send_command("PING")
    out = []
    while True:
        v = [x.value for x in s.read_frame().value]
        if v[0] == b"pong":
            return out
        out.append((v[2], v[3]))


def run_seed(redis_port: int, larder_port: int, seed: int, length: int = LENGTH,
             events: bool = False) -> int:
    """Run one seed's sequence on both servers; raise Mismatch at the first difference.
    With `events`, the keyspace notifications each command causes are compared too (the
    servers must have `notify-keyspace-events` set alike). Returns how many commands ran."""
    cmds = sequence(seed, length)
    protocol = "3" if seed % 2 else "2"
    conns = [RawConn(redis_port), RawConn(larder_port)]
    # Reads what a comparison depends on (a key's type, its scores) from both servers alike:
    # a read expires a key past its deadline, so asking only one would change it alone.
    admin = Both([RawConn(redis_port), RawConn(larder_port)])
    subs = [subscriber(redis_port), subscriber(larder_port)] if events else []
    loose = Loose()
    try:
        for c in conns:
            assert c.call("FLUSHALL") == "OK"
            assert c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == "OK"
            c.call_frame("HELLO", protocol)
        for s in subs:
            events_so_far(s)  # FLUSHALL's
        queued: list[tuple[list[str], bool]] | None = None  # the commands of an open MULTI
        for i, cmd in enumerate(cmds):
            name = cmd[0].upper()
            if cmd == [SLEEP]:
                time.sleep(0.025)
                continue
            if is_lex(cmd) and (queued is not None or mixed_scores(admin, cmd[1])):
                continue  # what it reads or removes is unspecified (see is_lex)
            # Inside MULTI the key's type when EXEC runs the command is not known here.
            ordered = name != "SORT" or (queued is None and admin.call("TYPE", cmd[1]) == "list")
            loose.before(cmd)
            want, got = (normalise(cmd, c.call_frame(*cmd), ordered, queued, loose)
                         for c in conns)
            if name == "MULTI" and queued is None and want == ("+", "OK"):
                queued = []
            elif name in ("EXEC", "DISCARD"):
                queued = None
            elif queued is not None:
                queued.append((cmd, ordered))
            if want == got and subs:
                want, got = (("events",) + tuple(events_so_far(s)) for s in subs)
            if want != got:
                history = "\n".join("  " + " ".join(map(repr, c)) for c in cmds[:i])
                raise Mismatch(
                    f"seed {seed} (RESP{protocol}), command {i}: {' '.join(map(repr, cmd))}\n"
                    f"  redis-server: {want!r}\n  larder:       {got!r}\n"
                    f"after FLUSHALL and:\n{history}")
        return len(cmds)
    finally:
        for c in conns + admin.conns + subs:
            c.close()


def test_random_sequences_reply_as_redis_server_does(start_server, redis_factory) -> None:
    larder = start_server(*DEBUG)
    redis = redis_factory(*DEBUG)
    ran = sum(run_seed(redis.port, larder.port, seed) for seed in range(SEEDS))
    assert ran >= SEEDS * LENGTH  # a transaction block may end past LENGTH
    # Both servers are still there and agree on what is left.
    with RawConn(redis.port) as a, RawConn(larder.port) as b:
        assert a.call("DBSIZE") == b.call("DBSIZE")


def test_random_sequences_notify_as_redis_server_does(start_server, redis_factory) -> None:
    # Two workers: the subscriber and the connection that writes are often on different
    # threads, and each notification must still come before the reply to the next request.
    larder = start_server("--threads", "2", *DEBUG)
    redis = redis_factory(*DEBUG)
    for port in (larder.port, redis.port):
        with RawConn(port) as c:
            assert c.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == "OK"
    ran = sum(run_seed(redis.port, larder.port, seed, events=True) for seed in range(SEEDS))
    assert ran >= SEEDS * LENGTH


def test_a_difference_is_caught() -> None:
    """The comparison is not blind: a reply that differs only in type or order where order
    matters is a mismatch, and a set reply's order is not."""
    lrange = ["LRANGE", "k0", "0", "-1"]
    a = Frame("*", [Frame("$", b"a"), Frame("$", b"b")])
    b = Frame("*", [Frame("$", b"b"), Frame("$", b"a")])
    assert normalise(lrange, a) != normalise(lrange, b)
    assert normalise(["SMEMBERS", "k0"], a) == normalise(["SMEMBERS", "k0"], b)
    assert normalise(["GET", "k0"], Frame("$", b"1")) != normalise(["GET", "k0"], Frame(":", 1))
    assert normalise(["TTL", "k0"], Frame(":", 5)) == normalise(["TTL", "k0"], Frame(":", 6))
    assert normalise(["TTL", "k0"], Frame(":", -1)) != normalise(["TTL", "k0"], Frame(":", 6))


class Processes:
    """Servers for the command-line runs (the suite starts its own through fixtures): each on
    a free port, in a directory of its own; all killed and their files removed at the end."""

    def __init__(self, larder_bin: str) -> None:
        self.larder_bin = larder_bin
        self.work = tempfile.mkdtemp(prefix="redis-diff-")
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "Processes":
        return self

    def __exit__(self, *exc: Any) -> None:
        for p in self.procs:
            p.kill()
            p.wait()
        shutil.rmtree(self.work, ignore_errors=True)

    def start(self, kind: str, *extra: str) -> int:
        """Start a "larder" or a "redis" server with `extra` flags; returns its port."""
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        d = os.path.join(self.work, str(port))
        os.mkdir(d)
        argv = ([self.larder_bin, "--memcached-port", "0", "--http-port", "0",
                 "--appendonly", "no"] if kind == "larder" else
                ["redis-server", "--appendonly", "no"])
        argv += ["--save", "", "--dir", d, "--port", str(port), "--bind", "127.0.0.1", *extra]
        self.procs.append(subprocess.Popen(argv, cwd=d, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL))
        for _ in range(100):
            try:
                RawConn(port).close()
                return port
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"{argv[0]} did not start")


def default_larder_bin() -> str:
    return os.environ.get("LARDER_BIN") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "release", "larder")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, help="run this seed only")
    ap.add_argument("--seeds", type=int, default=10000)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--length", type=int, default=LENGTH)
    ap.add_argument("--events", action="store_true",
                    help="compare the keyspace notifications of every command too")
    ap.add_argument("--larder-bin", default=default_larder_bin())
    ap.add_argument("--larder-args", default="", help="more larder flags, e.g. '--threads 2'")
    a = ap.parse_args()
    with Processes(a.larder_bin) as servers:
        rport = servers.start("redis", *DEBUG)
        lport = servers.start("larder", *DEBUG, *a.larder_args.split())
        if a.events:
            for port in (rport, lport):
                with RawConn(port) as c:
                    c.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        seeds = [a.seed] if a.seed is not None else range(a.first, a.first + a.seeds)
        failures = 0
        for s in seeds:
            try:
                run_seed(rport, lport, s, a.length, a.events)
            except Mismatch as e:
                failures += 1
                # One seed: with the commands before it, to replay by hand.
                print(e if a.seed is not None else str(e).split("\nafter")[0], flush=True)
        print(f"{len(seeds)} seeds, {failures} with a difference")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
