"""Immutable, memory-mapped, typed key-value cache files (larder).

A cache file is built once with :class:`Builder`, then opened read-only with :func:`open` by any
number of processes, which share one copy of it in the page cache. Lookups take about 100 ns.
:class:`SwappingCache` follows a path or a pointer file to newly published files. The format is
specified in larder's ``docs/cache-format.md``.
"""

import os
import pathlib
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Literal, SupportsFloat, SupportsIndex, TypeVar, final, overload

from typing_extensions import Buffer

__version__: str
FORMAT_VERSION: int
"""The cache file format version this module reads and writes."""

Key = str | bytes
"""Keys are ``str`` (looked up by their UTF-8 bytes) or ``bytes``; ``"a"`` and ``b"a"`` are the
same key."""

Value = bytes | str | int | float | bool | list[str] | FloatList
"""What a lookup returns, by stored type."""

_T = TypeVar("_T")

class CorruptFile(ValueError):
    """The file is not a larder cache file, is truncated, or fails a bounds or checksum check."""

class UnsupportedVersion(ValueError):
    """The file was written by a format version (or with feature flags) this reader does not
    understand. Rebuild the file or upgrade larder_cache."""

class TypeMismatch(TypeError):
    """A typed getter asked for a type other than the one stored for the key."""

def open(path: str | os.PathLike[str]) -> Cache:
    """Opens the cache file at ``path`` and maps it read-only. O(1): the header is checked,
    the rest is checked lazily (every read is bounds-checked) or by :meth:`Cache.verify`.

    Raises ``OSError`` (``FileNotFoundError``, ...), :class:`CorruptFile` or
    :class:`UnsupportedVersion`."""

@final
class Cache:
    """An open, memory-mapped, read-only cache file.

    Works like a read-only mapping: ``cache[key]``, ``key in cache``, ``len(cache)``,
    ``iter(cache)``, ``keys()``, ``values()``, ``items()``. Values come back as ``bytes``,
    ``str``, ``int``, ``float``, ``bool``, ``list[str]``, or a zero-copy :class:`FloatList`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Same as :func:`open`."""
    def get(self, key: Key, default: _T | None = None) -> Value | _T | None:
        """The value stored for ``key``, or ``default`` when absent."""
    def __getitem__(self, key: Key) -> Value:
        """The value stored for ``key``; ``KeyError`` when absent."""
    def __contains__(self, key: Key) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> CacheIterator[str | bytes]: ...
    def keys(self) -> CacheIterator[str | bytes]:
        """The keys, in index order (stable for a file, otherwise arbitrary): ``str`` when the
        key is valid UTF-8, else ``bytes``."""
    def values(self) -> CacheIterator[Value]: ...
    def items(self) -> CacheIterator[tuple[str | bytes, Value]]: ...
    def get_str(self, key: Key) -> str | None:
        """A ``str`` value, None when absent; :class:`TypeMismatch` for another type."""
    def get_bytes(self, key: Key) -> bytes | None:
        """A ``bytes`` value (a ``str`` value is returned as its UTF-8 bytes)."""
    def get_int(self, key: Key) -> int | None:
        """An ``i64`` value."""
    def get_float(self, key: Key) -> float | None:
        """An ``f64`` value."""
    def get_bool(self, key: Key) -> bool | None:
        """A ``bool`` value."""
    def get_f32_list(self, key: Key) -> FloatList | None:
        """A ``list<f32>`` value as a zero-copy :class:`FloatList` (typecode ``"f"``)."""
    def get_f64_list(self, key: Key) -> FloatList | None:
        """A ``list<f64>`` value as a zero-copy :class:`FloatList` (typecode ``"d"``)."""
    def get_str_list(self, key: Key) -> list[str] | None:
        """A ``list<str>`` value."""
    def value_type(
        self, key: Key
    ) -> (
        Literal["bytes", "str", "i64", "f64", "bool", "list<f32>", "list<f64>", "list<str>"]
        | None
    ):
        """The stored type of ``key``, or None when absent."""
    def info(self) -> dict[str, int | str | bool | pathlib.Path]:
        """Facts from the header: ``path``, ``name``, ``format_version``, ``created_unix_ms``,
        ``key_count``, ``value_count``, ``dedup``, ``file_bytes``, ``data_bytes``,
        ``index_bytes``, ``bucket_count``, ``offset_width_bytes``, ``displaced_keys``,
        ``probe_max``, ``raw_key_bytes``, ``raw_value_bytes``, ``dedup_saved_bytes``."""
    def verify(self) -> None:
        """Checks every checksum and index entry (O(file size), releases the GIL).
        Raises :class:`CorruptFile` on the first problem."""
    @property
    def path(self) -> pathlib.Path:
        """The path the cache was opened from."""
    @property
    def name(self) -> str:
        """The name given at build time."""
    def __reduce__(self) -> tuple[type[Cache], tuple[pathlib.Path]]:
        """Pickles as its path: unpickling (in another process, say) maps the file anew."""

@final
class SwappingCache:
    """A cache that moves to a newer file when one is published, without blocking readers.

    ``SwappingCache(path)`` watches a cache file that is replaced by renaming a new file onto
    it (:class:`Builder` publishes that way). ``SwappingCache(pointer=p)`` watches a pointer
    file: a text file holding the path of the current cache file (relative to the pointer's
    directory unless absolute), published by writing a new pointer file and renaming it over.

    Nothing changes until :meth:`refresh`. :meth:`current` returns the current file as a
    :class:`Cache`, which keeps reading that file after later swaps (old lookups finish on the
    old mapping); ``sw[key]``, ``sw.get(key)``, ``key in sw`` and ``len(sw)`` go through the
    current file. Raises like :func:`open` when the file cannot be opened.
    """

    @overload
    def __init__(self, path: str | os.PathLike[str]) -> None: ...
    @overload
    def __init__(self, *, pointer: str | os.PathLike[str]) -> None: ...
    def refresh(self) -> bool:
        """Checks the watched path or pointer file once and swaps if it names a different file;
        returns whether it swapped. A file that fails to open (missing, corrupt, an empty
        pointer) raises ``OSError`` or :class:`CorruptFile` and the current file stays in
        service. Releases the GIL while it looks at the files."""
    def current(self) -> Cache:
        """The current file; the same object until the next swap."""
    def get(self, key: Key, default: _T | None = None) -> Value | _T | None:
        """``current().get(key, default)``."""
    def __getitem__(self, key: Key) -> Value:
        """``current()[key]``; ``KeyError`` when absent."""
    def __contains__(self, key: Key) -> bool: ...
    def __len__(self) -> int: ...
    @property
    def path(self) -> pathlib.Path:
        """The watched cache file, or the pointer file."""
    @property
    def is_pointer(self) -> bool:
        """Whether :attr:`path` is a pointer file."""

@final
class CacheIterator(Iterator[_T]):
    """Iterator over a cache's keys, values or items; keeps the cache open."""

    def __iter__(self) -> CacheIterator[_T]: ...
    def __next__(self) -> _T: ...

@final
class FloatList(Buffer):
    """A read-only list of floats viewed in place in the file (no copy).

    Supports the buffer protocol, so ``numpy.frombuffer(v, dtype=numpy.float32)`` (for typecode
    ``"f"``; ``numpy.float64`` for ``"d"``), ``numpy.asarray(v)`` and ``memoryview(v)`` read the
    numbers where they lie. Keeps its cache open while it, or an array made from it, exists.
    """

    @property
    def typecode(self) -> Literal["f", "d"]:
        """``"f"`` for 32-bit floats, ``"d"`` for 64-bit floats (as in the ``array`` module)."""
    @property
    def itemsize(self) -> Literal[4, 8]: ...
    @property
    def cache(self) -> Cache:
        """The cache the numbers live in."""
    def tolist(self) -> list[float]:
        """The numbers, copied into a list."""
    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> float: ...
    def __iter__(self) -> Iterator[float]: ...
    def __eq__(self, other: object) -> bool:
        """``tolist() == other``: equal to a list with the same numbers, or to another
        FloatList (like a list, never equal to a tuple)."""
    def __buffer__(self, flags: int, /) -> memoryview: ...

@final
class Builder:
    """Builds a cache file at ``path``; usable as a context manager.

    Records stream to a temporary file beside ``path``; :meth:`finish` writes the index and the
    header and renames the file into place, so readers see the old file or the complete new one.
    Leaving a ``with`` block finishes the build; an exception inside it aborts the build.

    ``dedup=True`` stores repeated values once. ``duplicates="last"`` lets the last insert of a
    key win; ``"error"`` makes :meth:`finish` raise ``ValueError`` instead.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        dedup: bool = False,
        *,
        duplicates: Literal["last", "error"] = "last",
    ) -> None: ...
    def insert(
        self,
        key: Key,
        value: str
        | bytes
        | bytearray
        | bool
        | int
        | float
        | list[float]
        | tuple[float, ...]
        | list[str]
        | tuple[str, ...]
        | FloatList
        | Buffer
        | SupportsIndex
        | SupportsFloat,
    ) -> None:
        """Adds ``key`` with ``value``, typed from its Python type: ``bool`` → bool, ``int`` →
        i64, ``float`` → f64, ``str`` → str, ``bytes``/``bytearray`` → bytes, a list or tuple
        of numbers → list<f64>, of ``str`` → list<str> (an empty list → list<str>), a
        :class:`FloatList` or a 1-D float32/float64 buffer (numpy array) → list<f32>/list<f64>.
        Raises ``TypeError`` for anything else and ``OverflowError`` for ints outside i64."""
    def insert_f32_list(self, key: Key, values: Iterable[SupportsFloat] | Buffer) -> None:
        """Adds ``key`` with a list<f32> (a float32 buffer is read without a Python loop)."""
    def insert_f64_list(self, key: Key, values: Iterable[SupportsFloat] | Buffer) -> None:
        """Adds ``key`` with a list<f64>."""
    def insert_str_list(self, key: Key, values: Iterable[str]) -> None:
        """Adds ``key`` with a list<str>."""
    def finish(self) -> dict[str, int]:
        """Writes the index and header, syncs, renames the file into place; returns the build
        statistics: ``key_count``, ``duplicate_keys``, ``value_count``, ``deduped_values``,
        ``dedup_saved_bytes``, ``raw_key_bytes``, ``raw_value_bytes``, ``data_bytes``,
        ``index_bytes``, ``file_bytes``, ``build_ms``."""
    def abort(self) -> None:
        """Abandons the build: removes the temporary file, leaves ``path`` untouched."""
    @property
    def inserted(self) -> int:
        """Number of inserts so far."""
    @property
    def path(self) -> pathlib.Path: ...
    @property
    def stats(self) -> dict[str, int] | None:
        """What :meth:`finish` returned, or None before the build finished."""
    def __enter__(self) -> Builder: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]: ...
