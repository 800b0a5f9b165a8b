"""The ACL table test: users x commands x keys x channels, larder's ACL DRYRUN answer against
redis-server 7.0.15's for every cell, and a smaller set of cells that really runs the
commands as those users: a NOPERM from DRYRUN if and only if a NOPERM from the run, and a
refused command writes nothing.

larder_only: each test starts its own redis-server as the reference, next to the larder under
test.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
import redis

from conftest import Server

pytestmark = pytest.mark.larder_only

# Users: command rules, %R~ / %W~ / ~ key patterns, & channel patterns, selectors.
USERS: dict[str, list[str]] = {
    "u_all": ["~*", "&*", "+@all"],
    "u_none": [],
    "u_keys": ["+@all", "~a:*", "%R~r:*", "%W~w:*", "~lit", "~x?y", "resetchannels", "&ch:*"],
    "u_rw": ["+@read", "+@write", "+@keyspace", "%R~src:*", "%W~dst:*", "&news.*"],
    "u_cmds": ["+get", "+set", "+@list", "-lpush", "+client|id", "+config|get", "+eval",
               "~*", "allchannels"],
    "u_sel": ["+get", "~a:*", "(+set ~w:*)", "(%R~r:* +@all &ch:*)"],
    "u_chan": ["+@pubsub", "+@connection", "resetchannels", "&foo", "&bar*"],
    "u_cat": ["+@all", "-@dangerous", "-@scripting", "~*", "&*"],
    "u_wonly": ["+@all", "%W~*", "%R~r:*", "~lit", "&*"],
}

# Keys matching the first, a middle, the last or no pattern of the users above.
KEYS = ["a:1", "r:1", "w:1", "lit", "xzy", "src:1", "dst:1", "zz"]
PAIRS = [(a, b) for a in ["a:1", "r:1", "w:1", "src:1", "dst:1", "zz"]
         for b in ["a:1", "r:1", "w:1", "src:1", "dst:1", "zz"]]
TRIPLES = [("a:1", "r:1", "w:1"), ("w:1", "a:1", "a:1"), ("w:1", "r:1", "r:1"),
           ("dst:1", "src:1", "src:1"), ("dst:1", "src:1", "zz"), ("a:1", "a:1", "a:1"),
           ("w:1", "w:1", "r:1"), ("zz", "r:1", "a:1"), ("lit", "xzy", "a:1"),
           ("dst:1", "dst:1", "src:1"), ("r:1", "a:1", "w:1"), ("a:1", "zz", "zz")]
CHANNELS = ["foo", "bar1", "bar*", "ch:1", "news.x", "zzz"]

# Command templates: K1..K3 are keys, C1/C2 channels. Every key-spec shape (index ranges,
# keyword searches, keynum, the getkeys procs and their fallbacks) and every family.
COMMANDS = """
get K1|set K1 v|set K1 v GET|set K1 v ex 10 get|getdel K1|getex K1 ex 10|incr K1|append K1 x
strlen K1|setrange K1 0 x|getrange K1 0 1|mget K1 K2|mset K1 1 K2 2|msetnx K1 1 K2 2|lcs K1 K2
del K1 K2|unlink K1 K2 K3|exists K1|touch K1 K2|type K1|ttl K1|expire K1 10|persist K1
rename K1 K2|renamenx K1 K2|copy K1 K2|copy K1 K2 db 1 replace|move K1 1|dump K1
object encoding K1|object freq K1|memory usage K1
lpush K1 x|rpush K1 x|lrange K1 0 -1|lpos K1 x|lmove K1 K2 left right|rpoplpush K1 K2
blpop K1 K2 1|brpop K1 1|blmove K1 K2 left left 1|lmpop 1 K1 left|lmpop 2 K1 K2 right
blmpop 1 2 K1 K2 left|lmpop 2x K1 K2 left
hset K1 f v|hget K1 f|hgetall K1|hincrby K1 f 1|hdel K1 f
sadd K1 m|smembers K1|sinter K1 K2|sinterstore K1 K2 K3|sintercard 2 K1 K2|smove K1 K2 m
sunionstore K1 K2|sdiff K1 K2 K3
zadd K1 1 m|zrange K1 0 -1|zrangestore K1 K2 0 -1|zunionstore K1 2 K2 K3|zinterstore K1 1 K2
zunionstore K1 2x K2 K3|zunionstore K1 3 K2 K3|zinter 2 K1 K2|zintercard 1 K1|zdiff 2 K1 K2
zdiffstore K1 2 K2 K3|zmpop 2 K1 K2 min|bzmpop 1 1 K1 min|bzpopmin K1 K2 1|zunion 0 K1
bitfield K1 get u8 0|bitfield K1 set u8 0 1|bitfield K1 get u8 0 incrby u8 0 1|bitfield K1 x
bitfield_ro K1 get u8 0|bitop and K1 K2 K3|bitcount K1|setbit K1 0 1|getbit K1 0|bitpos K1 1
pfadd K1 a|pfcount K1 K2|pfmerge K1 K2
geoadd K1 0 0 m|geodist K1 a b|georadius K1 0 0 1 km|georadius K1 0 0 1 km store K2
georadius K1 0 0 1 km storedist K2|georadius K1 0 0 1 km store|georadius_ro K1 0 0 1 km
georadiusbymember K1 m 1 km store K2|geosearch K1 frommember m bybox 1 1 km
geosearchstore K1 K2 frommember m bybox 1 1 km
xadd K1 * f v|xlen K1|xrange K1 - +|xread count 1 streams K1 K2 0 0|xread streams K1 0
xread streams K1 K2 0|xreadgroup group g c streams K1 0|xreadgroup group g c count 1 streams K1 K2 > >
xinfo stream K1|xgroup create K1 g $|xack K1 g 0-1|xdel K1 0-1|xtrim K1 maxlen 1
sort K1|sort K1 by w_* get o_* store K2|sort K1 store K2 store K3|sort K1 limit 0 1 store K2
sort K1 get store K2|sort_ro K1|sort_ro K1 by x
eval x 2 K1 K2|eval x 0|eval x 2x K1 K2|eval_ro x 1 K1|evalsha x 1 K1|fcall f 1 K1
fcall_ro f 2 K1 K2
publish C1 m|spublish C1 m|subscribe C1 C2|ssubscribe C1|psubscribe C1 C2|unsubscribe C1
punsubscribe C1|pubsub channels
ping|echo x|client id|client setname n|config get maxmemory|flushdb|keys *|scan 0|dbsize
select 0|watch K1 K2|multi|randomkey|swapdb 0 1|info|acl whoami|time
"""


def templates() -> list[list[str]]:
    out = []
    for line in COMMANDS.strip().splitlines():
        out.extend(t.split() for t in line.split("|"))
    return out


def fill(template: list[str]) -> list[list[str]]:
    """Every filling of a template's keys and channels from the pools."""
    nkeys = sum(1 for w in template if w in ("K1", "K2", "K3"))
    nchan = sum(1 for w in template if w in ("C1", "C2"))
    key_sets = {0: [()], 1: [(k,) for k in KEYS], 2: PAIRS, 3: TRIPLES}[nkeys]
    chan_sets = {0: [()], 1: [(c,) for c in CHANNELS],
                 2: list(itertools.product(CHANNELS, repeat=2))}[nchan]
    out = []
    for ks in key_sets:
        for cs in chan_sets:
            names = {f"K{i + 1}": k for i, k in enumerate(ks)}
            names.update({f"C{i + 1}": c for i, c in enumerate(cs)})
            out.append([names.get(w, w) for w in template])
    return out


def cells() -> list[tuple[str, list[str]]]:
    return [(user, argv) for user in USERS for t in templates() for argv in fill(t)]


def client(srv: Server, user: str | None = None) -> redis.Redis:
    auth = {"username": user, "password": "pw"} if user else {}
    return redis.Redis(host="127.0.0.1", port=srv.port, protocol=2, socket_timeout=60, **auth)


def create_users(c: redis.Redis) -> None:
    for name, rules in USERS.items():
        assert c.execute_command("ACL", "SETUSER", name, "reset", "on", ">pw", *rules) in (
            b"OK", "OK", True)


def answer(v) -> str:
    if isinstance(v, Exception):
        return f"error: {v}"
    return v.decode() if isinstance(v, bytes) else str(v)


def dryrun_all(c: redis.Redis, table: list[tuple[str, list[str]]]) -> list[str]:
    out: list[str] = []
    for start in range(0, len(table), 2000):
        p = c.pipeline(transaction=False)
        for user, argv in table[start:start + 2000]:
            p.execute_command("ACL", "DRYRUN", user, *argv)
        out.extend(answer(v) for v in p.execute(raise_on_error=False))
    return out


@pytest.fixture
def reference(tmp_path: Path):
    srv = Server("redis", [], None, [], Path(tempfile.mkdtemp(dir=tmp_path)))
    srv.start()
    yield srv
    srv.kill()


def test_dryrun_table_matches_redis(start_server, reference):
    subject = start_server()
    table = cells()
    assert len(table) > 10000
    answers = []
    for srv in (subject, reference):
        c = client(srv)
        create_users(c)
        answers.append(dryrun_all(c, table))
    # Every shape of answer is present: allowed, and refused for a command, key, channel.
    kinds = {a.split(" the ")[-1].split("'")[0] if "permissions" in a else a
             for a in answers[1]}
    assert {"OK"} <= kinds
    assert any(a.endswith("' key") for a in answers[1])
    assert any(a.endswith("' channel") for a in answers[1])
    assert any(a.endswith("' command") for a in answers[1])
    diffs = [(user, " ".join(argv), got, want)
             for (user, argv), got, want in zip(table, answers[0], answers[1]) if got != want]
    assert not diffs, f"{len(diffs)} of {len(table)} cells differ, e.g. {diffs[:10]}"


# Cells that run: commands that write, none that blocks or subscribes.
RUN = """
set K1 v|set K1 v GET|incr K1|append K1 x|mset K1 1 K2 2|del K1 K2|rename K1 K2|copy K1 K2
lpush K1 x|rpush K1 x|lmove K1 K2 left right|hset K1 f v|sadd K1 m|sinterstore K1 K2 K3
zadd K1 1 m|zunionstore K1 2 K2 K3|bitfield K1 set u8 0 1|bitop or K1 K2 K3|pfadd K1 a
pfmerge K1 K2|geoadd K1 0 0 m|xadd K1 * f v|sort K1 store K2|setrange K1 0 x
eval x 2 K1 K2|get K1|flushdb|publish C1 m
"""


def test_run_agrees_with_dryrun(start_server):
    srv = start_server()
    admin = client(srv)
    create_users(admin)
    conns = {user: client(srv, user) for user in USERS}
    templates_run = [t.split() for line in RUN.strip().splitlines() for t in line.split("|")]
    refused = ran = 0
    for user in USERS:
        for t in templates_run:
            for argv in fill(t):
                admin.execute_command("FLUSHALL")
                dry = answer(admin.execute_command("ACL", "DRYRUN", user, *argv))
                try:
                    got = answer(conns[user].execute_command(*argv))
                    denied = False
                except redis.exceptions.NoPermissionError as e:
                    got, denied = f"NOPERM {e}", True
                except redis.ResponseError as e:
                    got, denied = f"error: {e}", False
                assert denied == (dry != "OK"), (user, argv, dry, got)
                if denied:
                    refused += 1
                    # Zero accepted commands from an unauthorised client: nothing written.
                    assert admin.execute_command("DBSIZE") == 0, (user, argv)
                else:
                    ran += 1
    assert refused > 100 and ran > 100


def test_getkeysandflags_matches_redis(start_server, reference):
    """The keys and key spec flags ACL checks with (`acl::keys`), seen through COMMAND
    GETKEYSANDFLAGS, for every command shape of the table where both servers find keys (the
    DRYRUN table covers the argument lists COMMAND refuses)."""
    subject = start_server()
    argvs = [argv for t in templates() for argv in fill(t)[:3]]
    answers = []
    for srv in (subject, reference):
        c = client(srv)
        c.set_response_callback("COMMAND", lambda r, **_: r)
        p = c.pipeline(transaction=False)
        for argv in argvs:
            p.execute_command("COMMAND", "GETKEYSANDFLAGS", *argv)
        answers.append([v if isinstance(v, Exception) else
                        [(k, sorted(answer(f) for f in fl)) for k, fl in v]
                        for v in p.execute(raise_on_error=False)])
    compared = 0
    diffs = []
    for argv, got, want in zip(argvs, *answers):
        # Where either refuses the arguments: COMMAND's own checks decide those (larder's
        # reads a numkeys strictly where Redis falls back to its getkeys proc's atoi).
        if isinstance(want, Exception) or isinstance(got, Exception):
            continue
        compared += 1
        if got != want:
            diffs.append((" ".join(argv), got, want))
    assert compared > 300
    assert not diffs, f"{len(diffs)} differ, e.g. {diffs[:10]}"
