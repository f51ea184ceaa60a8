"""Distributed reads and conversions on a Ray cluster.

Needs Ray with Ray Data (``pip install "ray[data]"``); importing this module
without it raises ImportError.

* :func:`read` gives a ``ray.data.Dataset`` of files of any format the
  package opens (local paths the workers see, or URLs). Each file is cut into
  record ranges at its blocks or chunks (:meth:`dataformats.Dataset.splits`),
  and each range is one read task that opens the file and reads only those
  records of the requested columns.
* :func:`convert` converts many files in parallel across the cluster, one
  output per input, exactly as ``dataformats convert`` does, and returns a
  summary.

Example::

    import ray, dataformats.ray
    ray.init()
    ds = dataformats.ray.read(["s3://bucket/a.idv", "s3://bucket/b.idv"], columns=["Label"])
    print(ds.groupby("Label").count().take_all())
    summary = dataformats.ray.convert(ctf_files, "out/", to="cntk")
"""

from __future__ import annotations

import os
import posixpath
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
import ray
import ray.data
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask

import dataformats

__all__ = ["read", "convert", "PATH_COLUMN", "RECORD_COLUMN"]

PathLike = Union[str, "os.PathLike[str]"]

#: The column :func:`read` adds with ``provenance=True``: the file's path.
PATH_COLUMN = "_path"
#: The column :func:`read` adds with ``provenance=True``: the record's number
#: in its file.
RECORD_COLUMN = "_record"

# Records per block a read task yields (blocks larger than this are cut).
_BLOCK_ROWS = 65536


def _paths(paths: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise ValueError("no files to read")
    return out


def _unify(schemas: List[Tuple[str, pa.Schema]]) -> pa.Schema:
    """One schema for files of different formats: every column of every file
    (in the order first seen), nullable, its type promoted when files differ
    (int32 and int64 give int64, vectors of different lengths a variable
    list, ...); the format's field metadata kept when
    every file that has the column agrees on it."""
    fields: Dict[str, List[Tuple[str, pa.Field]]] = {}
    for path, schema in schemas:
        for f in schema:
            fields.setdefault(f.name, []).append((path, f))
    out = []
    for name, seen in fields.items():
        first = seen[0][1]
        if len(seen) < len(schemas):
            # Missing from some files: those records hold a null, whose
            # nested values must be allowed to be null too.
            seen = [(p, _relaxed(f)) for p, f in seen]
            first = seen[0][1]
        if all(f.equals(first, check_metadata=True) for _, f in seen):
            out.append(first.with_nullable(True))
            continue
        lists = _lists(name, [f for _, f in seen])
        if lists is not None:
            out.append(lists)
            continue
        bare = [pa.schema([f.remove_metadata().with_nullable(True)]) for _, f in seen]
        try:
            merged = pa.unify_schemas(bare, promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            kinds = ", ".join(f"{p}: {f.type}" for p, f in seen)
            raise ValueError(
                f"column {name!r} has types that do not merge ({kinds}); read these files separately"
            ) from e
        out.append(merged.field(0))
    return pa.schema(out)


def _relaxed(f: pa.Field) -> pa.Field:
    """``f`` with every nested field nullable (an extension type becomes
    its storage type, which can then hold nulls)."""

    def relax(t: pa.DataType) -> pa.DataType:
        if isinstance(t, pa.ExtensionType):
            return relax(t.storage_type)
        if pa.types.is_struct(t):
            return pa.struct([pa.field(c.name, relax(c.type), True, c.metadata) for c in t])
        if pa.types.is_fixed_size_list(t):
            return pa.list_(pa.field(t.value_field.name, relax(t.value_type), True), t.list_size)
        if pa.types.is_list(t):
            return pa.list_(pa.field(t.value_field.name, relax(t.value_type), True))
        if pa.types.is_large_list(t):
            return pa.large_list(pa.field(t.value_field.name, relax(t.value_type), True))
        return t

    return f.with_type(relax(f.type))


def _lists(name: str, fields: List[pa.Field]) -> Optional[pa.Field]:
    """Vectors of different lengths with one element type (fixed-size
    lists of sizes 5 and 10, or a fixed-size and a variable list): one
    variable-length list of that element type. None for anything else."""
    items = []
    for f in fields:
        t = f.type
        if not (pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t)):
            return None
        items.append(t.value_field)
    first = items[0]
    if not all(i.type == first.type for i in items):
        return None
    nullable = any(i.nullable for i in items)
    return pa.field(name, pa.list_(first.with_nullable(nullable)), True)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: missing ones as nulls,
    others cast to the merged type."""
    cols = []
    for f in schema:
        i = table.schema.get_field_index(f.name)
        if i < 0:
            cols.append(pa.nulls(table.num_rows, f.type))
            continue
        c = table.column(i)
        if isinstance(c.type, pa.ExtensionType) and not isinstance(f.type, pa.ExtensionType):
            c = pa.chunked_array([x.storage for x in c.chunks], c.type.storage_type)
        cols.append(c if c.type == f.type else c.cast(f.type))
    return pa.Table.from_arrays(cols, schema=schema)


class _Files(Datasource):
    """A Ray Data datasource over files of any format dataformats reads."""

    def __init__(self, paths: List[str], columns: Optional[List[str]], provenance: bool) -> None:
        self._paths = paths
        self._columns = columns
        self._provenance = provenance
        rows: List[int] = []
        schemas: List[Tuple[str, pa.Schema]] = []
        for p in paths:
            d = dataformats.open(p)
            s = d.schema
            if columns is not None:
                missing = [c for c in columns if s.get_field_index(c) < 0]
                if missing:
                    raise ValueError(f"{p}: no column {missing[0]!r}; its columns are {s.names}")
                s = pa.schema([s.field(c) for c in columns])
            rows.append(d.num_rows)
            schemas.append((p, s))
        self._rows = rows
        schema = _unify(schemas)
        if provenance:
            for name in (PATH_COLUMN, RECORD_COLUMN):
                if schema.get_field_index(name) >= 0:
                    raise ValueError(f"a file has a column {name!r}: read it with provenance=False")
            schema = schema.append(pa.field(PATH_COLUMN, pa.string(), False))
            schema = schema.append(pa.field(RECORD_COLUMN, pa.uint64(), False))
        self._schema = schema

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def estimate_inmemory_data_size(self) -> Optional[int]:
        return None

    def get_name(self) -> str:
        return "dataformats"

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: Optional[int] = None, data_context: Any = None
    ) -> List[ReadTask]:
        total = max(1, sum(self._rows))
        parallelism = max(1, parallelism)
        tasks = []
        for path, n in zip(self._paths, self._rows):
            if n == 0:
                continue
            # Each file's share of the tasks, by its records.
            parts = max(1, round(parallelism * n / total))
            for start, end in dataformats.open(path).splits(parts):
                meta = BlockMetadata(
                    num_rows=end - start,
                    size_bytes=None,
                    exec_stats=None,
                    input_files=(path,),
                )
                tasks.append(
                    ReadTask(
                        _reader(path, start, end, self._columns, self._schema, self._provenance),
                        meta,
                        schema=self._schema,
                        per_task_row_limit=per_task_row_limit,
                    )
                )
        return tasks


def _reader(
    path: str,
    start: int,
    end: int,
    columns: Optional[List[str]],
    schema: pa.Schema,
    provenance: bool,
):
    """The read function of one task: records ``start..end`` of ``path``."""

    def read() -> Iterator[pa.Table]:
        d = dataformats.open(path)
        at = start
        for batch in d.iter_batches(batch_size=_BLOCK_ROWS, columns=columns, rows=(start, end)):
            t = _conform(pa.Table.from_batches([batch]), schema)
            if provenance:
                t = t.set_column(
                    schema.get_field_index(PATH_COLUMN),
                    pa.field(PATH_COLUMN, pa.string(), False),
                    pa.array([path] * batch.num_rows, pa.string()),
                )
                t = t.set_column(
                    schema.get_field_index(RECORD_COLUMN),
                    pa.field(RECORD_COLUMN, pa.uint64(), False),
                    pa.array(range(at, at + batch.num_rows), pa.uint64()),
                )
            at += batch.num_rows
            yield t
        if at != end:
            raise dataformats.FormatError(f"{path}: records {start}..{end} gave {at - start} records")

    return read


def read(
    paths: Union[PathLike, Sequence[PathLike]],
    columns: Optional[Sequence[str]] = None,
    *,
    provenance: bool = False,
    override_num_blocks: Optional[int] = None,
    ray_remote_args: Optional[Dict[str, Any]] = None,
) -> "ray.data.Dataset":
    """A ``ray.data.Dataset`` of the records of ``paths`` (files, BLZ/bcolz
    directories or URLs of any format :func:`dataformats.open` reads; every
    worker must be able to open them).

    Only ``columns`` (all when None) are read; every file must have them.
    Files of different formats are read as one schema: every column of
    every file, nullable, types promoted where files differ.
    ``provenance=True`` adds the columns ``_path`` (the file) and
    ``_record`` (the record's number in it). ``override_num_blocks`` sets
    the number of read tasks (default: Ray's choice); each file is cut into
    about its share of them at block or chunk starts. The files' headers
    are read here, on the caller, to plan the tasks.
    """
    cols = None if columns is None else list(columns)
    source = _Files(_paths(paths), cols, provenance)
    return ray.data.read_datasource(
        source,
        override_num_blocks=override_num_blocks,
        ray_remote_args=ray_remote_args,
    )


# Each conversion target `to=` takes (the command line's name and its
# aliases): the command line's name and the output's extension.
_TARGETS = {
    "mldf": ("mldf", ".mldf"),
    "tbl": ("tbl", ".tbl"),
    "tbl2": ("tbl", ".tbl"),
    "cntk": ("cntk", ".bin"),
    "cbf": ("cntk", ".bin"),
    "idv": ("idv", ".idv"),
    "blp": ("blp", ".blp"),
    "bloscpack": ("blp", ".blp"),
    "bcolz": ("bcolz", ".bcolz"),
    "blz": ("bcolz", ".blz"),
    "parquet": ("parquet", ".parquet"),
    "arrow": ("arrow", ".arrow"),
    "arrows": ("arrows", ".arrows"),
    "csv": ("csv", ".csv"),
    "jsonl": ("jsonl", ".jsonl"),
    "ctf": ("ctf", ".ctf"),
    "tar": ("tar", ".tar"),
    "npy": ("npy", ".npy"),
}


def _output(src: str, output_dir: str, ext: str) -> str:
    name = posixpath.basename(src.rstrip("/")) if "://" in src else os.path.basename(src.rstrip(os.sep))
    stem = name.rsplit(".", 1)[0] if "." in name else name
    if "://" in output_dir:
        return output_dir.rstrip("/") + "/" + stem + ext
    return os.path.join(output_dir, stem + ext)


@ray.remote(num_cpus=1)
def _convert_one(src: str, dst: str, options: Dict[str, Any]) -> Dict[str, Any]:
    node = ray.get_runtime_context().get_node_id()
    try:
        report = dataformats.convert(src, dst, **options)
    except Exception as e:  # reported in the summary, never lost
        return {
            "input": src,
            "output": dst,
            "ok": False,
            "error": str(e),
            "kind": getattr(e, "kind", type(e).__name__),
            "node": node,
        }
    return {"input": src, "output": dst, "ok": True, "node": node, **report}


def convert(
    inputs: Union[PathLike, Sequence[PathLike]],
    output_dir: PathLike,
    to: str,
    *,
    errors: str = "raise",
    **options: Any,
) -> Dict[str, Any]:
    """Converts every file of ``inputs`` to format ``to`` in parallel across
    the cluster (one task of one CPU per file), writing ``output_dir/<name
    without extension>.<to's extension>`` for each, exactly as
    ``dataformats convert IN OUT --to TO`` does (the other keyword
    arguments are its options, as for :func:`dataformats.convert`).
    ``output_dir`` may be a URL; a local one is made if missing, and must be
    a directory every worker sees.

    Returns a summary: ``converted`` and ``failed`` (counts), ``records``
    (all written), and ``files``: one dict per input, in input order, with
    its ``input``, ``output``, ``ok``, ``node`` (the Ray node that ran it)
    and, for a success, the conversion's
    report (``records``, ``changes``, ...), for a failure its ``error``.
    With ``errors="raise"`` (the default), a failure raises RuntimeError
    after every task has ended, naming the inputs that failed; with
    ``errors="report"`` the summary is returned as it is.
    """
    if errors not in ("raise", "report"):
        raise ValueError(f"errors is 'raise' or 'report', not {errors!r}")
    target = _TARGETS.get(to.lower())
    if target is None:
        raise ValueError(f"unknown target {to!r}; one of {sorted(_TARGETS)}")
    to, ext = target
    srcs = _paths(inputs)
    out_dir = os.fspath(output_dir)
    dsts = [_output(s, out_dir, ext) for s in srcs]
    seen: Dict[str, str] = {}
    for s, d in zip(srcs, dsts):
        if d in seen:
            raise ValueError(f"{seen[d]} and {s} would both be written to {d}")
        seen[d] = s
    if "://" not in out_dir:
        os.makedirs(out_dir, exist_ok=True)
    opts = dict(options, to=to)
    refs = [_convert_one.remote(s, d, opts) for s, d in zip(srcs, dsts)]
    files = ray.get(refs)
    ok = [f for f in files if f["ok"]]
    failed = [f for f in files if not f["ok"]]
    summary = {
        "converted": len(ok),
        "failed": len(failed),
        "records": sum(int(f.get("records", 0)) for f in ok),
        "files": files,
    }
    if failed and errors == "raise":
        lines = "; ".join(f"{f['input']}: {f['error']}" for f in failed[:10])
        raise RuntimeError(f"{len(failed)} of {len(files)} conversions failed: {lines}")
    return summary
