"""Errors: corrupt and unknown-version golden files, I/O errors, builder misuse."""

import errno
import shutil

import pytest

import larder_cache
from conftest import GOLDEN


def test_exception_hierarchy():
    assert issubclass(larder_cache.CorruptFile, ValueError)
    assert issubclass(larder_cache.UnsupportedVersion, ValueError)
    assert issubclass(larder_cache.TypeMismatch, TypeError)
    assert not issubclass(larder_cache.UnsupportedVersion, larder_cache.CorruptFile)


def test_truncated_file_raises_corrupt_file():
    with pytest.raises(larder_cache.CorruptFile, match="truncated"):
        larder_cache.open(GOLDEN / "v1-truncated.lcache")


def test_bad_header_checksum_raises_corrupt_file():
    with pytest.raises(larder_cache.CorruptFile, match="header checksum"):
        larder_cache.open(GOLDEN / "v1-bad-header.lcache")


def test_bit_flip_is_caught_by_verify():
    # The flip is inside a value, so the header is intact and open succeeds.
    c = larder_cache.open(GOLDEN / "v1-bitflip.lcache")
    with pytest.raises(larder_cache.CorruptFile, match="data checksum mismatch"):
        c.verify()
    # Lookups still never crash: every key gives a value or an error.
    for key in ["bytes", "str", "i64", "f64", "f32_list", "f64_list", "str_list", "shared_1"]:
        try:
            c.get(key)
        except (larder_cache.CorruptFile, larder_cache.TypeMismatch):
            pass


def test_unknown_version_raises_unsupported_version():
    with pytest.raises(larder_cache.UnsupportedVersion, match="version 2") as e:
        larder_cache.open(GOLDEN / "v2-unknown-version.lcache")
    assert not isinstance(e.value, larder_cache.CorruptFile)


def test_not_a_cache_file(tmp_path):
    p = tmp_path / "x.lcache"
    p.write_bytes(b"hello, world" * 100)
    with pytest.raises(larder_cache.CorruptFile, match="not a larder cache file"):
        larder_cache.open(p)
    empty = tmp_path / "empty.lcache"
    empty.write_bytes(b"")
    with pytest.raises(larder_cache.CorruptFile):
        larder_cache.open(empty)


def test_missing_file_raises_file_not_found(tmp_path):
    missing = tmp_path / "nope.lcache"
    with pytest.raises(FileNotFoundError) as e:
        larder_cache.open(missing)
    assert e.value.errno == errno.ENOENT
    assert e.value.filename == str(missing)


def test_directory_raises_os_error(tmp_path):
    with pytest.raises(OSError):
        larder_cache.open(tmp_path)


def test_every_byte_flip_is_an_exception_not_a_crash(tmp_path):
    """Flips each byte of the golden file in turn; every call must return or raise."""
    original = (GOLDEN / "v1-all-types.lcache").read_bytes()
    p = tmp_path / "flip.lcache"
    expected = (larder_cache.CorruptFile, larder_cache.UnsupportedVersion, TypeError)
    for i in range(len(original)):
        data = bytearray(original)
        data[i] ^= 0xFF
        p.write_bytes(bytes(data))
        try:
            c = larder_cache.open(p)
        except expected:
            continue
        for call in (
            lambda: [c.get(k) for k in ("str", "f32_list", "str_list", "bytes", "i64")],
            lambda: list(c.items()),
            c.verify,
        ):
            try:
                call()
            except expected:
                pass
        del c
        p.unlink()  # a new inode each round: never rewrite a mapped file in place


def test_builder_into_missing_directory_raises_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        larder_cache.Builder(tmp_path / "no" / "such" / "dir.lcache")


def test_builder_after_finish_raises(tmp_path):
    b = larder_cache.Builder(tmp_path / "a.lcache")
    b.insert("k", 1)
    b.finish()
    with pytest.raises(ValueError, match="already finished"):
        b.insert("k", 2)
    with pytest.raises(ValueError, match="already finished"):
        b.finish()


def test_builder_rejects_unsupported_values(tmp_path):
    b = larder_cache.Builder(tmp_path / "a.lcache")
    for bad in (None, {"a": 1}, object(), [1.0, "x"], ["x", 1.0], [None]):
        with pytest.raises(TypeError):
            b.insert("k", bad)
    with pytest.raises(OverflowError):
        b.insert("k", 2**63)
    with pytest.raises(TypeError, match="str or bytes"):
        b.insert(1, "v")
    with pytest.raises(ValueError, match="exceeds the limit"):
        b.insert("k" * 70_000, "v")
    b.abort()


def test_builder_name_too_long(tmp_path):
    b = larder_cache.Builder(tmp_path / "a.lcache", name="n" * 300)
    with pytest.raises(ValueError, match="name"):
        b.finish()
    assert not (tmp_path / "a.lcache").exists()


def test_duplicates_policy(tmp_path):
    with pytest.raises(ValueError, match="duplicates"):
        larder_cache.Builder(tmp_path / "a.lcache", duplicates="first")
    b = larder_cache.Builder(tmp_path / "a.lcache", duplicates="error")
    b.insert("k", 1)
    b.insert("k", 2)
    with pytest.raises(ValueError, match="duplicate key"):
        b.finish()
    assert not (tmp_path / "a.lcache").exists()


def test_copied_golden_file_reads_the_same(tmp_path):
    p = tmp_path / "copy.lcache"
    shutil.copy(GOLDEN / "v1-all-types.lcache", p)
    assert larder_cache.open(p).get_int("i64") == -9_007_199_254_740_993
