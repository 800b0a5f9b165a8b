"""The ACL command family with redis-py in RESP2 and RESP3: SETUSER, GETUSER, LIST, USERS,
DELUSER, CAT, GENPASS, LOG, DRYRUN, SAVE, LOAD, and users refused with NOPERM.

Every test here also runs with --target=redis: the expectations are Redis 7.0.15's.
"""

from __future__ import annotations

import hashlib

import pytest
import redis

NOPERM_CMD = "this user has no permissions to run the '{}' command"
NOPERM_KEY = "this user has no permissions to access one of the keys used as arguments"
NOPERM_CHANNEL = "this user has no permissions to access one of the channels used as arguments"


@pytest.fixture
def acl(r):
    """`r`, with every user but `default` removed and ACL LOG emptied afterwards."""
    yield r
    admin = r
    for name in admin.execute_command("ACL", "USERS"):
        if name != b"default":
            admin.execute_command("ACL", "DELUSER", name)
    admin.execute_command("ACL", "SETUSER", "default", "on", "nopass", "~*", "&*", "+@all")
    admin.execute_command("ACL", "LOG", "RESET")


def acl_cmd(r, *args):
    return r.execute_command("ACL", *args)


def as_map(v) -> dict:
    """A RESP3 map or a RESP2 flat list of pairs as a dict."""
    if isinstance(v, dict):
        return v
    return dict(zip(v[::2], v[1::2]))


def sha(p: str) -> str:
    return hashlib.sha256(p.encode()).hexdigest()


def error_of(r, *args) -> str:
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def test_setuser_getuser_list(acl):
    assert acl_cmd(acl, "SETUSER", "alice", "on", ">p1", "~cache:*", "%R~ro:*", "&news",
                   "+get", "+@hash", "(~other +set)") == b"OK"
    u = as_map(acl_cmd(acl, "GETUSER", "alice"))
    assert set(u[b"flags"]) == {b"on"}
    assert list(u[b"passwords"]) == [sha("p1").encode()]
    assert u[b"commands"] == b"-@all +@hash +get"
    assert u[b"keys"] == b"~cache:* %R~ro:*"
    assert u[b"channels"] == b"&news"
    sel = [as_map(s) for s in u[b"selectors"]]
    assert sel == [{b"commands": b"-@all +set", b"keys": b"~other", b"channels": b""}]
    line = (f"user alice on #{sha('p1')} ~cache:* %R~ro:* resetchannels &news -@all +@hash "
            f"+get (~other resetchannels -@all +set)").encode()
    assert line in acl_cmd(acl, "LIST")
    assert acl_cmd(acl, "GETUSER", "nobody") is None
    assert acl_cmd(acl, "USERS") == [b"alice", b"default"]


def test_setuser_changes_and_resets(acl):
    acl_cmd(acl, "SETUSER", "bob", "on", ">a", ">b", "allkeys", "allchannels", "allcommands")
    acl_cmd(acl, "SETUSER", "bob", "<a", "-@dangerous", "+flushdb")
    u = as_map(acl_cmd(acl, "GETUSER", "bob"))
    assert list(u[b"passwords"]) == [sha("b").encode()]
    assert u[b"commands"].startswith(b"+@all -")
    assert acl_cmd(acl, "DRYRUN", "bob", "flushdb") == b"OK"
    assert acl_cmd(acl, "DRYRUN", "bob", "flushall") == (
        b"This user has no permissions to run the 'flushall' command")
    assert u[b"keys"] == b"~*" and u[b"channels"] == b"&*"
    acl_cmd(acl, "SETUSER", "bob", "reset")
    u = as_map(acl_cmd(acl, "GETUSER", "bob"))
    assert set(u[b"flags"]) == {b"off", b"sanitize-payload"}
    assert (u[b"commands"], u[b"keys"], u[b"channels"]) == (b"-@all", b"", b"")
    acl_cmd(acl, "SETUSER", "bob", "nopass")
    assert set(as_map(acl_cmd(acl, "GETUSER", "bob"))[b"flags"]) == {
        b"off", b"nopass", b"sanitize-payload"}


@pytest.mark.parametrize("rule,why", [
    ("bogus", "Syntax error"),
    ("+nosuchcommand", "Unknown command or category name in ACL"),
    ("+@nosuchcategory", "Unknown command or category name in ACL"),
    ("<never-set", "The password you are trying to remove from the user does not exist"),
    ("#0123", "The password hash must be exactly 64 characters and contain only lowercase "
              "hexadecimal characters"),
    ("+config|get|x", "Allowing first-arg of a subcommand is not supported"),
])
def test_setuser_errors_change_nothing(acl, rule, why):
    acl_cmd(acl, "SETUSER", "carol", "on", ">pw", "+get")
    before = acl_cmd(acl, "LIST")
    msg = error_of(acl, "ACL", "SETUSER", "carol", "off", rule)
    assert msg == f"Error in ACL SETUSER modifier '{rule}': {why}"
    assert acl_cmd(acl, "LIST") == before


def test_setuser_pattern_and_name_errors(acl):
    assert error_of(acl, "ACL", "SETUSER", "d", "allkeys", "~a") == (
        "Error in ACL SETUSER modifier '~a': Adding a pattern after the * pattern (or the "
        "'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start "
        "with an empty list of patterns")
    assert error_of(acl, "ACL", "SETUSER", "d", "allchannels", "&a") == (
        "Error in ACL SETUSER modifier '&a': Adding a pattern after the * pattern (or the "
        "'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' "
        "to start with an empty list of channels")
    assert error_of(acl, "ACL", "SETUSER", "d", "(~a", "+get") == (
        "Unmatched parenthesis in acl selector starting at '(~a'.")
    assert error_of(acl, "ACL", "SETUSER", "a b") == (
        "Usernames can't contain spaces or null characters")
    assert acl_cmd(acl, "USERS") == [b"default"]


def test_deluser(acl):
    acl_cmd(acl, "SETUSER", "e1")
    acl_cmd(acl, "SETUSER", "e2")
    assert error_of(acl, "ACL", "DELUSER", "e1", "default") == (
        "The 'default' user cannot be removed")
    assert acl_cmd(acl, "DELUSER", "e1", "e2", "nobody") == 2
    assert acl_cmd(acl, "USERS") == [b"default"]


def test_cat_and_genpass(acl):
    cats = acl_cmd(acl, "CAT")
    assert len(cats) == 21 and cats[0] == b"keyspace" and cats[-1] == b"scripting"
    fast = acl_cmd(acl, "CAT", "FAST")
    assert b"get" in fast and b"keys" not in fast
    assert b"config|get" in acl_cmd(acl, "CAT", "admin")
    assert error_of(acl, "ACL", "CAT", "nope") == "Unknown category 'nope'"
    p = acl_cmd(acl, "GENPASS")
    assert len(p) == 64 and int(p, 16) >= 0
    assert len(acl_cmd(acl, "GENPASS", "5")) == 2
    assert error_of(acl, "ACL", "GENPASS", "0") == (
        "ACL GENPASS argument must be the number of bits for the output password, a positive "
        "number up to 4096")
    assert error_of(acl, "ACL", "GENPASS", "x") == "value is not an integer or out of range"


def test_dryrun(acl):
    acl_cmd(acl, "SETUSER", "f", "on", "+get", "+publish", "~k*", "&ch")
    assert acl_cmd(acl, "DRYRUN", "f", "get", "k1") == b"OK"
    assert acl_cmd(acl, "DRYRUN", "f", "set", "k1", "v") == (
        b"This user has no permissions to run the 'set' command")
    assert acl_cmd(acl, "DRYRUN", "f", "get", "other") == (
        b"This user has no permissions to access the 'other' key")
    assert acl_cmd(acl, "DRYRUN", "f", "publish", "nope", "m") == (
        b"This user has no permissions to access the 'nope' channel")
    assert error_of(acl, "ACL", "DRYRUN", "nobody", "get", "k") == "User 'nobody' not found"
    assert error_of(acl, "ACL", "DRYRUN", "f", "nosuch") == "Command 'nosuch' not found"
    assert error_of(acl, "ACL", "DRYRUN", "f", "get") == (
        "wrong number of arguments for 'get' command")


def test_auth_as_user_then_noperm_and_log(acl, server, protocol):
    acl_cmd(acl, "SETUSER", "g", "on", ">pw", "+get", "+set", "+publish", "+acl|whoami", "~k*",
            "&ch")
    c = server.client(protocol=protocol, username="g", password="pw")
    assert c.execute_command("ACL", "WHOAMI") == b"g"
    assert c.set("k1", "v") is True
    with pytest.raises(redis.exceptions.NoPermissionError) as e:
        c.execute_command("DEL", "k1")
    assert str(e.value) == NOPERM_CMD.format("del")
    with pytest.raises(redis.exceptions.NoPermissionError) as e:
        c.get("other")
    assert str(e.value) == NOPERM_KEY
    with pytest.raises(redis.exceptions.NoPermissionError) as e:
        c.publish("elsewhere", "m")
    assert str(e.value) == NOPERM_CHANNEL
    # redis-py's CLIENT SETINFO at connect is Redis 7.2's: larder (which has it) logs its
    # refusal, Redis 7.0 answers it as an unknown subcommand.
    entries = [as_map(x) for x in acl_cmd(acl, "LOG")]
    entries = [x for x in entries if x[b"object"] != b"client|setinfo"]
    assert [(x[b"reason"], x[b"object"]) for x in entries] == [
        (b"channel", b"elsewhere"), (b"key", b"other"), (b"command", b"del")]
    first = entries[0]
    assert (first[b"count"], first[b"context"], first[b"username"]) == (1, b"toplevel", b"g")
    assert b"user=g" in first[b"client-info"] and float(first[b"age-seconds"]) >= 0
    with pytest.raises(redis.exceptions.NoPermissionError):
        c.publish("elsewhere", "m")
    assert as_map(acl_cmd(acl, "LOG", "1")[0])[b"count"] == 2
    assert acl_cmd(acl, "LOG", "RESET") == b"OK"
    assert acl_cmd(acl, "LOG") == []


def test_requirepass_is_the_default_users_password(acl):
    assert acl.config_set("requirepass", "s3cret") is True
    try:
        u = as_map(acl_cmd(acl, "GETUSER", "default"))
        assert list(u[b"passwords"]) == [sha("s3cret").encode()]
        assert b"nopass" not in set(u[b"flags"])
    finally:
        acl.config_set("requirepass", "")
    assert b"nopass" in set(as_map(acl_cmd(acl, "GETUSER", "default"))[b"flags"])


def test_load_and_save_need_an_aclfile(acl):
    msg = ("This Redis instance is not configured to use an ACL file. You may want to specify "
           "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you "
           "have a Redis configuration file set) in order to store users in the Redis "
           "configuration.")
    assert error_of(acl, "ACL", "LOAD") == msg
    assert error_of(acl, "ACL", "SAVE") == msg


def test_aclfile_save_and_load(start_server, tmp_path):
    path = tmp_path / "users.acl"
    path.write_text("user default on nopass ~* &* +@all\nuser a on >pw ~* +@all\n")
    srv = start_server("--aclfile", str(path))
    r = srv.client(protocol=2)
    assert srv.client(protocol=2, username="a", password="pw").ping() is True
    assert r.execute_command("ACL", "SETUSER", "b", "on", "nopass", "+get") == b"OK"
    assert r.execute_command("ACL", "SAVE") == b"OK"
    saved = path.read_text()
    assert saved.splitlines() == [x.decode() for x in r.execute_command("ACL", "LIST")]
    path.write_text("user default on nopass ~* &* +@all\nuser c on >x +@all ~*\n")
    assert r.execute_command("ACL", "LOAD") == b"OK"
    assert r.execute_command("ACL", "USERS") == [b"c", b"default"]
    path.write_text("user d on +nosuch\nnot a user line\n")
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("ACL", "LOAD")
    assert str(e.value) == (
        f"{path}:1: Error in applying operation '+nosuch': Unknown command or category name "
        f"in ACL. {path}:2 should start with user keyword followed by the username. "
        "WARNING: ACL errors detected, no change to the previously active ACL rules was "
        "performed")
    assert r.execute_command("ACL", "USERS") == [b"c", b"default"]


def test_config_file_user_lines(start_server, tmp_path):
    srv = start_server(config_text="user alice on >pw ~a* +get\n")
    c = srv.client(protocol=3, username="alice", password="pw")
    assert c.get("a1") is None
    with pytest.raises(redis.exceptions.NoPermissionError):
        c.set("a1", "v")


def test_user_lines_and_aclfile_together_refused(start_server, tmp_path):
    path = tmp_path / "users.acl"
    path.write_text("user default on nopass ~* &* +@all\n")
    code, out = start_server.spawn("--aclfile", str(path),
                                   config_text="user alice on >pw +@all\n")
    assert code != 0
    assert "please define either an ACL file or declare users directly" in out


def test_help(acl):
    lines = acl_cmd(acl, "HELP")
    assert len(lines) == 29
    assert lines[0] == b"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert lines[1] == b"CAT [<category>]"
    assert lines[-2:] == [b"HELP", b"    Prints this help."]


def test_patterns_are_bytes(acl):
    # Patterns that are not UTF-8 are kept and shown byte for byte, as Redis does.
    assert acl_cmd(acl, "SETUSER", "bin", "+get", b"~a\xff*", b"&c\xfe", b"&c\xfd") == b"OK"
    line = [l for l in acl_cmd(acl, "LIST") if l.startswith(b"user bin ")][0]
    assert b" ~a\xff* " in line and b" &c\xfe &c\xfd " in line
    u = as_map(acl_cmd(acl, "GETUSER", "bin"))
    keys = u[b"keys"] if b"keys" in u else u["keys"]
    assert keys == b"~a\xff*"
    assert acl_cmd(acl, "DRYRUN", "bin", "get", b"a\xff1") in (b"OK", "OK")
