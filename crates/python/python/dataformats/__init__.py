"""Open the binary file formats ML datasets are stored in, from Python.

ML.NET IDV, Bloscpack and BLZ/bcolz, CNTK binary (CBF), MLDF, TurboLoader
TBL v2 and FFCV files open in one line and come out as pyarrow tables and
record batches, NumPy arrays, or shuffled, sharded batches for a training
loop::

    import dataformats
    ds = dataformats.open("train.idv")
    table = ds.to_arrow(columns=["Label", "Features"])
    x = ds.column_numpy("Features")           # a view of the file when it can be
    for batch in dataformats.Loader("train.tbl", batch_size=256, shuffle=True):
        ...

Everything is decoded in Rust with the GIL released; values stored
uncompressed stay views of the file's memory map in pyarrow and NumPy.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa

from . import _native
from ._native import FormatError

__all__ = ["Dataset", "FormatError", "Loader", "convert", "detect", "open"]

PathLike = Union[str, "os.PathLike[str]"]

_TENSOR_META = b"ARROW:extension:metadata"


class _Array:
    """Hands pyarrow a batch through the Arrow PyCapsule interface."""

    __slots__ = ("_capsules",)

    def __init__(self, capsules: Tuple[Any, Any]) -> None:
        self._capsules = capsules

    def __arrow_c_array__(self, requested_schema: Any = None) -> Tuple[Any, Any]:
        return self._capsules


class _Stream:
    __slots__ = ("_capsule",)

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._capsule


class _Schema:
    __slots__ = ("_capsule",)

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __arrow_c_schema__(self) -> Any:
        return self._capsule


def _batch(capsules: Tuple[Any, Any]) -> pa.RecordBatch:
    return pa.record_batch(_Array(capsules))


def _rows(rows: Optional[Union[range, slice, Tuple[Optional[int], Optional[int]]]]):
    """`rows` as (start, end), either may be None; a step is refused."""
    if rows is None:
        return None, None
    if isinstance(rows, (range, slice)):
        if rows.step not in (None, 1):
            raise ValueError("rows must be contiguous (step 1)")
        return rows.start, rows.stop
    start, end = rows
    return start, end


def _shape(field: pa.Field, width: int) -> Tuple[int, ...]:
    """The tensor shape of a fixed-size-list field (from the
    `arrow.fixed_shape_tensor` metadata), else (width,)."""
    meta = field.metadata or {}
    if _TENSOR_META in meta:
        try:
            shape = tuple(json.loads(meta[_TENSOR_META])["shape"])
            if int(np.prod(shape)) == width:
                return shape
        except (ValueError, KeyError, TypeError):
            pass
    return (width,)


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def _to_numpy(array: pa.Array, field: pa.Field) -> Any:
    """A column as NumPy where it has a NumPy form: numbers (a view when
    pyarrow can give one), tensors as (rows, *shape) arrays; text, bytes
    and nested values as lists of Python objects."""
    t = array.type
    if pa.types.is_fixed_size_list(t) and _numeric(t.value_type) and array.null_count == 0:
        values = array.flatten()
        if values.null_count == 0:
            flat = values.to_numpy(zero_copy_only=False)
            return flat.reshape((len(array),) + _shape(field, t.list_size))
    if (_numeric(t) or pa.types.is_boolean(t)) and array.null_count == 0:
        return array.to_numpy(zero_copy_only=False)
    if (pa.types.is_timestamp(t) or pa.types.is_duration(t)) and array.null_count == 0:
        return array.to_numpy(zero_copy_only=False)
    return array.to_pylist()


def _record(batch: pa.RecordBatch, j: int) -> Dict[str, Any]:
    """Row `j` of a batch as a dict of `_cell` values."""
    return {f.name: _cell(batch.column(k), f, j) for k, f in enumerate(batch.schema)}


def _cell(array: pa.Array, field: pa.Field, i: int) -> Any:
    """Value `i` of a column as Python: numbers, text, bytes, None;
    numeric lists and tensors as NumPy arrays."""
    t = array.type
    if not array[i].is_valid:
        return None
    if pa.types.is_fixed_size_list(t) and _numeric(t.value_type):
        one = array.slice(i, 1)
        values = one.flatten()
        if values.null_count == 0:
            return values.to_numpy(zero_copy_only=False).reshape(_shape(field, t.list_size))
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and _numeric(t.value_type):
        values = array[i].values
        if values.null_count == 0:
            return values.to_numpy(zero_copy_only=False)
    return array[i].as_py()


class Dataset:
    """A file of any supported format, opened with :func:`open`."""

    def __init__(self, native: Any, path: str) -> None:
        self._native = native
        self._path = path
        self._schema: Optional[pa.Schema] = None

    @property
    def path(self) -> str:
        """The path it was opened from."""
        return self._path

    @property
    def format(self) -> str:
        """The format's name: idv, mldf, cntk, tbl2, bloscpack, blz or ffcv."""
        return self._native.format

    @property
    def version(self) -> str:
        """The file's format version."""
        return self._native.version

    @property
    def num_rows(self) -> int:
        """The number of records."""
        return self._native.num_rows

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema, fixed for the file (the same as
        ``dataformats schema FILE`` prints); each field's metadata keeps the
        format's own type under ``dataformats.type``."""
        if self._schema is None:
            self._schema = pa.schema(_Schema(self._native.schema_capsule()))
        return self._schema

    def to_arrow(
        self,
        columns: Optional[Sequence[str]] = None,
        rows: Optional[Union[range, slice, Tuple[Optional[int], Optional[int]]]] = None,
        threads: Optional[int] = None,
    ) -> pa.Table:
        """The records (``rows``: a range, slice or (start, end) pair) of
        ``columns`` (all when None) as a pyarrow Table, decoded on
        ``threads`` threads (None: every core). The table's chunks follow
        the file's blocks or chunks, so that each is decoded once."""
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        start, end = _rows(rows)
        cols = None if columns is None else list(columns)
        capsule = self._native.read_stream(cols, start, end, threads=threads or 0)
        return pa.RecordBatchReader.from_stream(_Stream(capsule)).read_all()

    def iter_batches(
        self,
        batch_size: int = 65536,
        columns: Optional[Sequence[str]] = None,
        rows: Optional[Union[range, slice, Tuple[Optional[int], Optional[int]]]] = None,
    ) -> Iterator[pa.RecordBatch]:
        """The records as pyarrow RecordBatches of ``batch_size`` rows, in
        order; only ``columns`` are decoded."""
        start, end = _rows(rows)
        cols = None if columns is None else list(columns)
        it = self._native.batches(cols, start, end, batch_size)
        while True:
            capsules = it.next()
            if capsules is None:
                return
            yield _batch(capsules)

    def column_numpy(self, name: str, threads: Optional[int] = None) -> Any:
        """Column ``name`` as a NumPy array: a read-only view of the file's
        memory when its values are fixed-width and stored uncompressed (and
        aligned), else decoded once, fixed-width values of compressed blocks
        and chunks on ``threads`` threads (None: every core). Tensors come
        as (rows, *shape); text, bytes and nested values as an object
        array."""
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        batch = _batch(self._native.read_column(name, threads or 0))
        out = _to_numpy(batch.column(0), batch.schema.field(0))
        if isinstance(out, list):
            arr = np.empty(len(out), dtype=object)
            arr[:] = out
            return arr
        return out

    def splits(self, parts: int) -> List[Tuple[int, int]]:
        """At most ``parts`` consecutive ``(start, end)`` record ranges that
        cover every record once, cut where the file's blocks or chunks start
        (so no block is decoded by two of them): units of parallel work, as
        :func:`dataformats.ray.read` uses them."""
        if parts < 1:
            raise ValueError(f"parts must be at least 1, not {parts}")
        return [tuple(r) for r in self._native.splits(parts)]

    def validate(self) -> None:
        """Checks every byte the way the format's validator does; raises
        :class:`FormatError` for a damaged file."""
        self._native.validate()

    def __len__(self) -> int:
        return self.num_rows

    def __getitem__(self, i: int) -> Dict[str, Any]:
        """Record ``i`` (negative counts from the end) as a dict."""
        n = self.num_rows
        if not isinstance(i, int):
            raise TypeError("records are indexed by int; use to_arrow(rows=...) for ranges")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"record {i} of {n}")
        return _record(_batch(self._native.read_batch(i, i + 1)), 0)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        for batch in self.iter_batches(batch_size=4096):
            for j in range(batch.num_rows):
                yield _record(batch, j)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream interface: ``pyarrow.table(ds)``,
        ``polars.from_arrow(ds)`` and DuckDB take the dataset directly."""
        return self._native.stream_capsule()

    def __arrow_c_schema__(self) -> Any:
        return self._native.schema_capsule()

    def __repr__(self) -> str:
        return (
            f"<dataformats.Dataset {self.format} {self.version}: "
            f"{self.num_rows} records, {len(self.schema)} columns, {self._path!r}>"
        )


def open(path: PathLike) -> Dataset:  # noqa: A001 (the package's verb)
    """Opens ``path`` (a file, or a BLZ/bcolz directory), whatever its
    format; raises :class:`FormatError` when it cannot."""
    p = os.fspath(path)
    return Dataset(_native.open(p), p)


def detect(path: PathLike) -> Optional[str]:
    """The format of ``path`` by its magic number or layout (``idv``,
    ``mldf``, ``bloscpack``, ``blz``, ``ffcv``, ...), or None."""
    return _native.detect(os.fspath(path))


# Options that the command line repeats once per value.
_REPEATED = {"stream", "column"}


def _argv(src: PathLike, dst: PathLike, options: Dict[str, Any]) -> List[str]:
    argv = [os.fspath(src), os.fspath(dst)]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif key in _REPEATED and isinstance(value, (list, tuple)):
            for v in value:
                argv += [flag, str(v)]
        elif key == "columns" and isinstance(value, (list, tuple)):
            argv += [flag, ",".join(value)]
        elif key == "range" and isinstance(value, (list, tuple, range, slice)):
            start, end = _rows(value if not isinstance(value, list) else tuple(value))
            argv += [flag, f"{'' if start is None else start}..{'' if end is None else end}"]
        elif isinstance(value, os.PathLike):
            argv += [flag, os.fspath(value)]
        else:
            argv += [flag, str(value)]
    return argv


def convert(src: PathLike, dst: PathLike, **options: Any) -> Dict[str, Any]:
    """Converts ``src`` into ``dst`` (the format from its extension, or
    ``to=``), exactly as ``dataformats convert SRC DST`` does: the command
    line's options are keyword arguments (``to="parquet"``, ``columns=[...]``,
    ``range=(0, 100)``, ``limit=10``, ``lossy=True``, ``clevel=0``,
    ``codec="zstd"``, ``no_compress=True``, ``stream=["x:dense:3"]``,
    ``append=True``, ...). Returns what happened (records, changes,
    warnings); the output appears only when the conversion succeeded."""
    return _native.convert(_argv(src, dst, options))


def _worker() -> Tuple[int, int]:
    """(worker id, number of workers) inside a torch DataLoader worker
    process, without importing torch; (0, 1) elsewhere."""
    data = sys.modules.get("torch.utils.data")
    info = getattr(data, "get_worker_info", None)
    w = info() if callable(info) else None
    if w is None:
        return 0, 1
    return int(w.id), int(w.num_workers)


_TORCH_LOADERS: Dict[type, type] = {}


class Loader:
    """Batches of a dataset for a training loop: dicts of NumPy arrays
    (numbers and tensors as arrays, text and blobs such as images as lists),
    shuffled per epoch with ``seed`` (the same order on every rank), split
    into ``world_size`` shards (rank ``rank`` reads positions ``rank``,
    ``rank + world_size``, ... of the epoch's order), decoded on Rust
    threads ahead of the loop.

    Every record is read exactly once per epoch across ranks; shards differ
    by at most one record, or with ``drop_last`` every rank reads exactly
    ``len(ds) // world_size`` records and the last incomplete batch is
    dropped. Inside torch DataLoader workers each worker takes every
    ``num_workers``-th batch of the shard, so no record repeats. When torch
    is already imported, the loader is a ``torch.utils.data.IterableDataset``
    (torch itself is never imported here).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> "Loader":
        base = getattr(sys.modules.get("torch.utils.data"), "IterableDataset", None)
        if cls is Loader and isinstance(base, type):
            cls = _TORCH_LOADERS.setdefault(base, type("Loader", (Loader, base), {}))
        return object.__new__(cls)

    def __init__(
        self,
        path: PathLike,
        batch_size: int,
        columns: Optional[Sequence[str]] = None,
        shuffle: bool = False,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
        num_threads: Optional[int] = None,
        with_index: bool = False,
    ) -> None:
        self._native = _native.Loader(
            os.fspath(path),
            batch_size,
            None if columns is None else list(columns),
            shuffle,
            seed,
            rank,
            world_size,
            drop_last,
            num_threads,
        )
        self.with_index = with_index

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch ``epoch``: a new order when shuffling, the same on
        every rank for the same seed."""
        self._native.set_epoch(epoch)

    @property
    def epoch(self) -> int:
        """The current epoch."""
        return self._native.epoch

    def indices(self, worker: int = 0, num_workers: int = 1) -> List[int]:
        """The records this rank (and worker) reads this epoch, in order."""
        return self._native.indices(worker, num_workers)

    def __len__(self) -> int:
        """Batches this rank reads per epoch."""
        return len(self._native)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        worker, workers = _worker()
        it = self._native.batches(worker, workers)
        while True:
            item = it.next()
            if item is None:
                return
            capsules, index = item
            batch = _batch(capsules)
            out: Dict[str, Any] = {
                f.name: _to_numpy(batch.column(k), f) for k, f in enumerate(batch.schema)
            }
            if self.with_index:
                out["__index__"] = np.asarray(index, dtype=np.int64)
            yield out
