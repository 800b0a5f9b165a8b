"""SwappingCache: following a path or a pointer file to newly published cache files."""

import os
import threading

import pytest

import larder_cache


def build(path, generation, **extra):
    """A file whose every value says which generation it is."""
    with larder_cache.Builder(path, name=f"gen{generation}") as b:
        b.insert("generation", generation)
        b.insert("label", f"file {generation}")
        b.insert("vector", [float(generation)] * 3)
        for k, v in extra.items():
            b.insert(k, v)


def publish_pointer(pointer, text):
    tmp = pointer.with_name(pointer.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, pointer)


def test_rename_onto_path_swaps_on_refresh(tmp_path):
    live = tmp_path / "live.lcache"
    build(live, 1)
    sw = larder_cache.SwappingCache(live)
    assert sw.path == live and not sw.is_pointer
    before = sw.current()
    assert isinstance(before, larder_cache.Cache)
    vector_before = before.get_f64_list("vector")
    assert sw["generation"] == 1 and sw.get("label") == "file 1"
    assert "generation" in sw and "missing" not in sw and len(sw) == 3
    assert sw.get("missing") is None and sw.get("missing", 7) == 7
    with pytest.raises(KeyError):
        sw["missing"]
    assert sw.refresh() is False
    assert sw.current() is before  # the same object until a swap

    # Build elsewhere, then rename onto the watched path.
    build(tmp_path / "next.lcache", 2, extra="only in 2")
    os.replace(tmp_path / "next.lcache", live)
    assert sw["generation"] == 1  # nothing changes before refresh()
    assert sw.refresh() is True
    assert sw.refresh() is False

    # Old lookups finish on the old mapping; new ones use the new file.
    assert before["generation"] == 1 and before.name == "gen1"
    assert vector_before == [1.0, 1.0, 1.0]
    after = sw.current()
    assert after is not before and after["generation"] == 2 and after.name == "gen2"
    assert sw["extra"] == "only in 2" and len(sw) == 4
    assert sw["vector"] == [2.0, 2.0, 2.0]
    assert sw["vector"].cache.name == "gen2"
    assert "gen2" in repr(sw)


def test_builder_publishing_onto_the_path_swaps(tmp_path):
    # Builder writes beside the path and renames into place, so building in place publishes.
    live = tmp_path / "live.lcache"
    build(live, 1)
    sw = larder_cache.SwappingCache(str(live))
    build(live, 2)
    assert sw.refresh() is True
    assert sw["generation"] == 2


def test_pointer_file(tmp_path):
    for g in (1, 2):
        build(tmp_path / f"v{g}.lcache", g)
    (tmp_path / "garbage.lcache").write_bytes(b"not a cache file" * 8)
    pointer = tmp_path / "CURRENT"
    publish_pointer(pointer, "v1.lcache\n")  # relative to the pointer's directory

    sw = larder_cache.SwappingCache(pointer=pointer)
    assert sw.is_pointer and sw.path == pointer
    held = sw.current()
    assert sw["generation"] == 1
    assert sw.refresh() is False

    publish_pointer(pointer, str(tmp_path / "v2.lcache"))  # absolute works too
    assert sw.refresh() is True
    assert sw["generation"] == 2 and held["generation"] == 1

    # A bad target raises, and the current file stays in service.
    publish_pointer(pointer, "garbage.lcache")
    with pytest.raises(larder_cache.CorruptFile):
        sw.refresh()
    publish_pointer(pointer, "missing.lcache")
    with pytest.raises(FileNotFoundError):
        sw.refresh()
    publish_pointer(pointer, "\n")
    with pytest.raises(OSError, match="empty"):
        sw.refresh()
    assert sw["generation"] == 2

    publish_pointer(pointer, "v1.lcache")
    assert sw.refresh() is True
    assert sw["generation"] == 1


def test_open_errors(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        larder_cache.SwappingCache(tmp_path / "missing.lcache")
    assert e.value.filename == str(tmp_path / "missing.lcache")
    with pytest.raises(FileNotFoundError):
        larder_cache.SwappingCache(pointer=tmp_path / "NO-POINTER")
    (tmp_path / "garbage.lcache").write_bytes(b"not a cache file" * 8)
    publish_pointer(tmp_path / "BAD", "garbage.lcache")
    with pytest.raises(larder_cache.CorruptFile):
        larder_cache.SwappingCache(pointer=tmp_path / "BAD")
    with pytest.raises(larder_cache.CorruptFile):
        larder_cache.SwappingCache(tmp_path / "garbage.lcache")
    with pytest.raises(TypeError):
        larder_cache.SwappingCache()
    with pytest.raises(TypeError):
        larder_cache.SwappingCache(tmp_path / "a", pointer=tmp_path / "b")


def test_readers_see_whole_files_while_a_writer_publishes(tmp_path):
    live = tmp_path / "live.lcache"
    build(live, 0)
    sw = larder_cache.SwappingCache(live)
    stop = threading.Event()
    errors = []

    def reader():
        last = 0
        try:
            while not stop.is_set():
                c = sw.current()
                g = c["generation"]
                # Every value of one Cache comes from one file.
                assert c["label"] == f"file {g}" and c["vector"] == [float(g)] * 3
                assert g >= last
                last = g
        except Exception as e:  # noqa: BLE001 - re-raised below on the main thread
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    threads.append(threading.Thread(target=sw.refresh))
    for t in threads:
        t.start()
    for g in range(1, 6):
        build(live, g)
        sw.refresh()
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    assert sw["generation"] == 5
