"""The memcached door's limits where larder differs from memcached 1.6.18 on purpose, each
with its reason (docs/memcached.md, "Limits and error lines"); everything else about the
limits is compared with a real memcached in test_memcached_diff.py.
"""

from __future__ import annotations

import pytest

from test_memcached_diff import Pair, pair_1k, text_exchange  # noqa: F401
from test_memcached_support import packet

pytestmark = pytest.mark.larder_only


def both_text(pair: Pair, payload: bytes) -> tuple[bytes, bytes]:
    return pair.both(lambda port: text_exchange(port, payload))


@pytest.mark.parametrize("line", [
    b"get k\x01ey\r\n",
    b"delete k\x7fey\r\n",
    b"incr k\x02 1\r\n",
    b"touch k\x1b 1\r\n",
    b"mg k\x01 v\r\n",
])
def test_control_bytes_in_keys_are_refused(pair_1k: Pair, line: bytes) -> None:
    """memcached takes any byte but space and newline in a key (a NUL cuts it short);
    larder refuses control bytes, which no client means to send and which would break
    `stats detail dump`, `lru_crawler metadump` and the log lines that show keys."""
    mc, ld = both_text(pair_1k, line)
    assert ld == b"CLIENT_ERROR bad command line format\r\n"
    assert not mc.startswith(b"CLIENT_ERROR")


def test_control_bytes_in_a_stored_key_swallow_the_data(pair_1k: Pair) -> None:
    mc, ld = both_text(pair_1k, b"set k\x01 0 0 3\r\nabc\r\nget k\x01\r\n")
    assert mc == b"STORED\r\nVALUE k\x01 0 3\r\nabc\r\nEND\r\n"
    assert ld == b"CLIENT_ERROR bad command line format\r\n" * 2


def test_invalid_base64_keys_are_refused(pair_1k: Pair) -> None:
    """memcached decodes the whole 4-character groups and drops a partial group after
    them ("abcd_" stores under the 3 bytes of "abcd"); larder refuses keys that are not
    strict base64, so that one item has one name."""
    mc, ld = both_text(pair_1k, b"ms abcd_ 2 b\r\nhi\r\n")
    assert mc == b"HD\r\n"
    assert ld == b"CLIENT_ERROR error decoding key\r\n"


def test_decr_does_not_pad_the_value(pair_1k: Pair) -> None:
    """memcached rewrites a decremented number in place and pads it with spaces to its old
    length ("100" - 1 reads back as "99 "); larder stores the number's digits only, as an
    incr/decr through RESP shows them."""
    mc, ld = both_text(pair_1k, b"set kd 0 0 3\r\n100\r\ndecr kd 1\r\nget kd\r\n")
    assert mc == b"STORED\r\n99\r\nVALUE kd 0 3\r\n99 \r\nEND\r\n"
    assert ld == b"STORED\r\n99\r\nVALUE kd 0 2\r\n99\r\nEND\r\n"


def test_junk_without_newline_closes_at_16k(pair_1k: Pair) -> None:
    """memcached closes a connection once its buffer holds more than 2048 bytes without a
    newline, so a long line survives only if it arrived in one read; larder judges by
    length alone and waits for 16 KiB (memcached's read buffer), so that a line is served
    or refused the same however the network splits it. Either way the close is silent."""
    import socket

    s = socket.create_connection(("127.0.0.1", pair_1k.larder), timeout=2)
    s.sendall(b"x" * 3000)
    s.settimeout(0.2)
    with pytest.raises(socket.timeout):
        s.recv(10)
    s.settimeout(2)
    s.sendall(b"x" * 14000)
    assert s.recv(10) == b""
    s.close()


def test_binary_set_over_the_limit_waits_for_its_key(pair_1k: Pair) -> None:
    """A binary set too large for -I is answered once its extras and key are in (the key
    says which item to drop, the flags how large the item is), not its value."""
    import socket

    pkt = packet("set", b"kb", b"v" * 2000, b"\0\0\0\1\0\0\0\0", opaque=5)
    s = socket.create_connection(("127.0.0.1", pair_1k.larder), timeout=2)
    s.sendall(packet("set", b"kb", b"old", b"\0" * 8))
    assert s.recv(24)[6:8] == b"\x00\x00"
    s.sendall(pkt[:24 + 8 + 2])
    head = s.recv(24)
    assert head[:2] == b"\x81\x01" and head[6:8] == b"\x00\x03"
    assert s.recv(len(b"Too large.")) == b"Too large."
    # The value is dropped as it comes; the old item is gone.
    s.sendall(pkt[24 + 8 + 2:] + packet("get", b"kb"))
    head = s.recv(24)
    assert head[:2] == b"\x81\x00" and head[6:8] == b"\x00\x01"
    s.close()
