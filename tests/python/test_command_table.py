"""Table guardrail: every command the server lists in COMMAND LIST is exercised by at least one
test in tests/python. Adding a command to larder's table without a test fails here.

A command counts as exercised when some test file has a string literal that starts with its
name (case-insensitive), e.g. "GET", 'incrbyfloat' or "CLIENT KILL"; a subcommand
(`client|kill`) needs its container's name and its own name as literals in one file.
"""

import re
from pathlib import Path

import pytest

TEST_DIR = Path(__file__).resolve().parent


def _test_sources() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(TEST_DIR.glob("test_*.py"))
            if p.name != Path(__file__).name}


def _literal(name: str) -> re.Pattern:
    # A quote, the name, then the closing quote or a space (the literal may go on with args).
    return re.compile(r"""[bf]?(['"])""" + re.escape(name) + r"""(\1|\s)""", re.IGNORECASE)


def _exercised(name: str, sources: dict[str, str]) -> bool:
    if "|" in name:
        parent, sub = name.split("|", 1)
        joined = _literal(f"{parent} {sub}")
        return any(
            joined.search(text) or (_literal(parent).search(text) and _literal(sub).search(text))
            for text in sources.values())
    pattern = _literal(name)
    return any(pattern.search(text) for text in sources.values())


@pytest.mark.larder_only
def test_every_listed_command_has_a_test(server):
    names = [n.decode() for n in server.raw().call("COMMAND", "LIST")]
    assert names, "COMMAND LIST is empty"
    sources = _test_sources()
    missing = sorted(n for n in names if not _exercised(n, sources))
    assert not missing, (
        f"{len(missing)} command(s) in larder's table have no test under tests/python: "
        f"{', '.join(missing)}")


@pytest.mark.larder_only
def test_command_table_is_consistent(server):
    c = server.raw()
    names = [n.decode() for n in c.call("COMMAND", "LIST")]
    assert len(names) == len(set(names)), "duplicate names in COMMAND LIST"
    top_level = [n for n in names if "|" not in n]
    assert c.call("COMMAND", "COUNT") == len(top_level)
    infos = c.call("COMMAND", "INFO", *top_level)
    for name, entry in zip(top_level, infos):
        assert entry is not None, f"COMMAND INFO has no entry for {name}"
        assert entry[0].decode() == name
        arity = entry[1]
        assert arity != 0, f"{name}: arity 0"
        flags = set(entry[2])
        assert not ({"readonly", "write"} <= flags), f"{name}: both readonly and write"
        for sub in entry[9]:
            assert sub[0].decode() in names, f"subcommand {sub[0]!r} missing from COMMAND LIST"


def test_guardrail_matcher():
    sources = {"a.py": 'r.call("CLIENT", "KILL", x)\nraw.call("incrbyfloat k 1")\n"GETEX"'}
    assert _exercised("client|kill", sources)
    assert _exercised("incrbyfloat", sources)
    assert _exercised("getex", sources)
    assert not _exercised("get", sources)
    assert not _exercised("client|list", sources)


def _flatten(entries: list, out: dict) -> dict:
    """COMMAND's entries by name, subcommands as entries of their own (without the nested
    list), so a difference names the subcommand."""
    for e in entries:
        out[e[0]] = e[:9]
        _flatten(e[9] or [], out)
    return out


@pytest.mark.larder_only
def test_command_info_is_redis_s_for_every_command_both_have(server, redis_factory):
    # Flags, key positions, ACL categories, tips and key specs, field for field; the
    # commands only one of them has are the cluster and module families and larder's queues.
    redis = redis_factory()
    theirs = _flatten(redis.raw().call("COMMAND"), {})
    ours = _flatten(server.raw().call("COMMAND"), {})
    common = sorted(set(theirs) & set(ours))
    assert len(common) > 300
    fields = ["name", "arity", "flags", "first", "last", "step", "categories", "tips",
              "key specs"]
    differ = [f"{n.decode()} {fields[i]}: redis {x!r}, larder {y!r}"
              for n in common for i, (x, y) in enumerate(zip(theirs[n], ours[n])) if x != y]
    assert differ == []
    only_redis = {n.decode().split("|")[0] for n in set(theirs) - set(ours)}
    assert only_redis <= {"asking", "cluster", "failover", "lolwut", "migrate", "module",
                          "readonly", "readwrite", "restore-asking"}
