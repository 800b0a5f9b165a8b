"""Float lists: zero-copy, read-only buffers over the mapping that keep the cache alive."""

import gc

import numpy as np
import pytest

import larder_cache


@pytest.fixture
def floats(tmp_path):
    p = tmp_path / "floats.lcache"
    with larder_cache.Builder(p) as b:
        b.insert("f64", [0.5, -1.25, 3.0, 1e300])
        b.insert_f32_list("f32", np.array([1.5, -2.25, 4.0], dtype=np.float32))
        b.insert("big", np.arange(100_000, dtype=np.float64))
        b.insert_f64_list("empty", [])
    return larder_cache.open(p)


def test_frombuffer_reads_the_numbers(floats):
    a = np.frombuffer(floats["f64"], dtype=np.float64)
    assert a.tolist() == [0.5, -1.25, 3.0, 1e300]
    b = np.frombuffer(floats.get_f32_list("f32"), dtype=np.float32)
    assert b.tolist() == [1.5, -2.25, 4.0]
    big = np.frombuffer(floats["big"], dtype=np.float64)
    assert big.sum() == sum(range(100_000))


def test_asarray_takes_the_dtype_from_the_buffer_format(floats):
    assert np.asarray(floats["f64"]).dtype == np.float64
    assert np.asarray(floats["f32"]).dtype == np.float32


def test_no_copy_two_lookups_share_memory(floats):
    a = np.frombuffer(floats["big"], dtype=np.float64)
    b = np.frombuffer(floats.get_f64_list("big"), dtype=np.float64)
    # Both arrays point into the same mapping, so numpy sees the same memory.
    assert np.shares_memory(a, b)
    assert a.ctypes.data == b.ctypes.data
    assert a.ctypes.data % 8 == 0  # aligned in the file, so aligned in memory
    c = np.frombuffer(floats["f64"], dtype=np.float64)
    assert not np.shares_memory(a, c)


def test_buffer_is_read_only(floats):
    a = np.frombuffer(floats["f64"], dtype=np.float64)
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0] = 1.0
    with pytest.raises(ValueError):
        a.setflags(write=True)
    m = memoryview(floats["f64"])
    assert m.readonly
    with pytest.raises(TypeError):
        m[0] = 1.0


def test_memoryview_format_shape_and_values(floats):
    m = memoryview(floats["f64"])
    assert (m.format, m.itemsize, m.ndim, m.shape, m.strides) == ("d", 8, 1, (4,), (8,))
    assert m.c_contiguous and m.nbytes == 32
    assert m.tolist() == [0.5, -1.25, 3.0, 1e300]
    m32 = memoryview(floats["f32"])
    assert (m32.format, m32.itemsize, m32.shape) == ("f", 4, (3,))
    assert m32.tolist() == [1.5, -2.25, 4.0]
    assert bytes(m32) == np.array([1.5, -2.25, 4.0], dtype="<f4").tobytes()


def test_empty_list(floats):
    e = floats["empty"]
    assert len(e) == 0 and e.tolist() == [] and e == []
    assert np.frombuffer(e, dtype=np.float64).size == 0
    assert memoryview(e).nbytes == 0


def test_sequence_behaviour(floats):
    v = floats["f64"]
    assert len(v) == 4 and v.itemsize == 8 and v.typecode == "d"
    assert v[0] == 0.5 and v[-1] == 1e300
    with pytest.raises(IndexError):
        v[4]
    with pytest.raises(IndexError):
        v[-5]
    assert list(v) == [0.5, -1.25, 3.0, 1e300]
    assert v == [0.5, -1.25, 3.0, 1e300] and v != [0.5]
    assert v != (0.5, -1.25, 3.0, 1e300)  # like a list, unequal to a tuple
    assert v == floats.get_f64_list("f64")
    assert repr(floats["f32"]) == "FloatList('f', [1.5, -2.25, 4.0])"
    assert v.cache is not None


def test_views_keep_the_cache_alive(tmp_path):
    p = tmp_path / "alive.lcache"
    with larder_cache.Builder(p) as b:
        b.insert("v", np.arange(1000, dtype=np.float64))
    c = larder_cache.open(p)
    arr = np.frombuffer(c["v"], dtype=np.float64)
    view = memoryview(c["v"])
    del c
    gc.collect()
    p.unlink()  # unlinking is fine: the mapping holds the inode
    gc.collect()
    assert arr.sum() == sum(range(1000))
    assert view[999] == 999.0
