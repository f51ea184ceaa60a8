//! BLZ (blz 0.6) and bcolz (1.x) root directories: compressed arrays
//! (`carray`/`barray`) and tables (`ctable`/`btable`) on disk.
//!
//! An array directory holds `meta/storage` and `meta/sizes` (JSON), an
//! optional `__attrs__`, and `data/__<i>.blp`: one Blosc chunk per file behind
//! a 16-byte header, `chunklen` atoms each, the last one (the leftover) holding
//! only the atoms that remain. A table directory holds `__rootdirs__` (the
//! column names) and one array directory per column. See
//! `bloscpack-blz.md` §3 for the layout and §6.3 for the checks, which
//! [`BlzDir::with_options`] applies in that order (every chunk decoded with
//! [`Checks::EveryChunk`]).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use dataformats_core::Limits;
use dataformats_core::codec::blosc::{self, BloscHeader};
use serde_json::Value;

use crate::dtype::{Dtype, Field, Scalar};
use crate::error::{Error, ErrorKind, Result};

/// Where a BLZ/bcolz directory's files are read from: the local
/// filesystem ([`LocalFiles`]), or elsewhere (the facade reads directories
/// in object storage, named by a URL prefix, through this trait). Paths are
/// the directory's root joined with the names inside it.
pub trait Files: Send + Sync + std::fmt::Debug {
    /// Whether `path` is a file.
    fn is_file(&self, path: &Path) -> bool;
    /// Whether `path` is a directory.
    fn is_dir(&self, path: &Path) -> bool;
    /// The size of file `path`.
    fn len(&self, path: &Path) -> std::io::Result<u64>;
    /// The whole of file `path` (exactly [`len`](Files::len) bytes).
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>>;
    /// The names of the entries directly inside directory `path`.
    fn list(&self, path: &Path) -> std::io::Result<Vec<String>>;
}

/// The local filesystem.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalFiles;

impl Files for LocalFiles {
    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
    fn len(&self, path: &Path) -> std::io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn list(&self, path: &Path) -> std::io::Result<Vec<String>> {
        std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }
}

/// The files of a directory, shared by its arrays.
type Shared = std::sync::Arc<dyn Files>;

fn local() -> Shared {
    std::sync::Arc::new(LocalFiles)
}

pub use crate::blz_write::{
    ArrayOptions, CArrayWriter, ColumnData, TableWriter, create_array, create_table, python_json,
    storage_dtype_string,
};

/// Which library's layout a directory follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// blz 0.6: `bparams` in `meta/storage`, `dirs` in `__rootdirs__`.
    Blz06,
    /// bcolz 1.x (and bcolz-zipline): `cparams`, no `dirs`.
    Bcolz,
}

impl Layout {
    /// `"blz-0.6"` or `"bcolz-1.x"`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Blz06 => "blz-0.6",
            Layout::Bcolz => "bcolz-1.x",
        }
    }

    /// What the library calls an array (`barray` / `carray`).
    pub fn array_kind(self) -> &'static str {
        match self {
            Layout::Blz06 => "barray",
            Layout::Bcolz => "carray",
        }
    }

    /// What the library calls a table (`btable` / `ctable`).
    pub fn table_kind(self) -> &'static str {
        match self {
            Layout::Blz06 => "btable",
            Layout::Bcolz => "ctable",
        }
    }
}

/// Size of a chunk file's own header (`blpk`, version 1, 3 reserved bytes, i64 nchunks = 1).
pub const CHUNK_FILE_HEADER: u64 = 16;

/// One needed chunk file of an array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkFile {
    /// File name (`__3.blp`).
    pub name: String,
    /// Full path.
    pub path: PathBuf,
    /// File size.
    pub file_size: u64,
    /// The Blosc header of its chunk.
    pub blosc: BloscHeader,
    /// Atoms (rows) it holds.
    pub items: u64,
    /// Index of its first atom.
    pub first_item: u64,
}

/// Parses a `meta/storage` dtype string (`str(numpy.dtype)`).
pub fn parse_storage_dtype(s: &str) -> Result<Dtype> {
    let unsupported = |m: String| Error::new(ErrorKind::Unsupported, m);
    let bad = |m: String| Error::new(ErrorKind::BadMetadata, m);
    let t = s.trim();
    if t.starts_with('[') {
        return Dtype::parse_python_literal(t).map_err(|e| bad(format!("dtype {s:?}: {e}")));
    }
    if t.starts_with('{') || t.starts_with('(') {
        return Err(unsupported(format!(
            "dtype {s:?}: dict-literal and subarray dtypes are not supported"
        )));
    }
    let (name, unit) = match t.split_once('[') {
        Some((n, u)) => (n, Some(u.trim_end_matches(']'))),
        None => (t, None),
    };
    let typestr = match name {
        "bool" => "|b1".to_string(),
        "int8" => "|i1".to_string(),
        "uint8" => "|u1".to_string(),
        "int16" => "<i2".to_string(),
        "int32" => "<i4".to_string(),
        "int64" => "<i8".to_string(),
        "uint16" => "<u2".to_string(),
        "uint32" => "<u4".to_string(),
        "uint64" => "<u8".to_string(),
        "float16" => "<f2".to_string(),
        "float32" => "<f4".to_string(),
        "float64" => "<f8".to_string(),
        "complex64" => "<c8".to_string(),
        "complex128" => "<c16".to_string(),
        "datetime64" => unit.map_or("<M8".to_string(), |u| format!("<M8[{u}]")),
        "timedelta64" => unit.map_or("<m8".to_string(), |u| format!("<m8[{u}]")),
        "object" | "float128" | "complex256" => {
            return Err(unsupported(format!("dtype {s:?} is not supported")));
        }
        _ if t.starts_with(['<', '>', '|', '=']) => t.to_string(),
        _ => return Err(bad(format!("dtype {s:?} is not a numpy type"))),
    };
    let scalar = if typestr == "<M8" || typestr == "<m8" {
        // Generic datetime/timedelta without a unit.
        Scalar::parse_typestr(&format!("{typestr}[s]")).map(|mut s| {
            s.unit = None;
            s
        })
    } else {
        Scalar::parse_typestr(&typestr)
    };
    match scalar {
        Ok(s) => Ok(Dtype::Scalar(s)),
        Err(e) if e.0.contains("object") => Err(unsupported(format!("dtype {s:?}: {e}"))),
        Err(e) => Err(bad(format!("dtype {s:?}: {e}"))),
    }
}

fn read_json(files: &dyn Files, path: &Path, limits: &Limits) -> Result<Value> {
    let len = files.len(path).map_err(|e| Error::from(e).in_file(path))?;
    limits
        .check_alloc("JSON file", len)
        .map_err(|e| Error::from(e).in_file(path))?;
    let bytes = read_exact(files, path, len)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| Error::new(ErrorKind::BadJson, "not UTF-8").in_file(path))?;
    serde_json::from_str(text)
        .map_err(|e| Error::new(ErrorKind::BadJson, format!("not JSON: {e}")).in_file(path))
}

fn chunk_name(i: u64) -> String {
    format!("__{i}.blp")
}

/// A BLZ/bcolz array directory.
#[derive(Debug, Clone)]
pub struct CArray {
    files: Shared,
    root: PathBuf,
    layout: Layout,
    storage: Value,
    sizes: Value,
    attrs: Value,
    dtype: Dtype,
    shape: Vec<u64>,
    chunklen: u64,
    atomsize: u64,
    chunks: Vec<ChunkFile>,
    stale: Vec<String>,
    limits: Limits,
}

impl CArray {
    /// Opens the array directory at `root`: reads and checks the meta files
    /// and every needed chunk file's headers (no chunk is decoded).
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(&local(), root.as_ref(), Limits::default(), false)
    }

    fn open_with(files: &Shared, root: &Path, limits: Limits, deep: bool) -> Result<Self> {
        let fs = files.as_ref();
        // Step 2: the meta files.
        let storage_p = root.join("meta").join("storage");
        let sizes_p = root.join("meta").join("sizes");
        for p in [&storage_p, &sizes_p] {
            if !fs.is_file(p) {
                return Err(Error::new(ErrorKind::MissingFile, "missing").in_file(p));
            }
        }
        let storage = read_json(fs, &storage_p, &limits)?;
        let sizes = read_json(fs, &sizes_p, &limits)?;
        let attrs_p = root.join("__attrs__");
        let attrs = if fs.is_file(&attrs_p) {
            read_json(fs, &attrs_p, &limits)?
        } else {
            Value::Object(Default::default())
        };

        // Step 3: meta content.
        let MetaInfo {
            layout,
            dtype,
            chunklen,
            shape,
            len,
            atomsize,
        } = meta_info(&storage, &sizes, &storage_p, &sizes_p)?;

        // Step 4: every needed file exists.
        let data = root.join("data");
        let needed = len.div_ceil(chunklen);
        limits.check_count("chunk files", needed)?;
        for i in 0..needed {
            let p = data.join(chunk_name(i));
            if !fs.is_file(&p) {
                return Err(Error::new(
                    ErrorKind::MissingFile,
                    format!("chunk file {i} is missing"),
                )
                .in_chunk(i)
                .in_file(&p));
            }
        }
        let mut stale: Vec<(u64, String)> = Vec::new();
        if let Ok(names) = fs.list(&data) {
            for n in names {
                if let Some(i) = n
                    .strip_prefix("__")
                    .and_then(|r| r.strip_suffix(".blp"))
                    .and_then(|d| d.parse::<u64>().ok())
                    && i >= needed
                {
                    stale.push((i, n));
                }
            }
        }
        stale.sort();

        // Step 5: each needed file.
        let mut chunks = Vec::new();
        let mut scratch = Vec::new();
        for i in 0..needed {
            let path = data.join(chunk_name(i));
            let first_item = i * chunklen;
            let items = chunklen.min(len - first_item);
            let bytes = read_chunk_file(fs, &path, &limits)?;
            let cf = check_chunk_file(
                &bytes,
                &path,
                i,
                first_item..first_item + items,
                atomsize,
                &limits,
                deep.then_some(&mut scratch),
            )?;
            chunks.push(cf);
        }
        Ok(CArray {
            files: files.clone(),
            root: root.to_path_buf(),
            layout,
            storage,
            sizes,
            attrs,
            dtype,
            shape,
            chunklen,
            atomsize,
            chunks,
            stale: stale.into_iter().map(|(_, n)| n).collect(),
            limits,
        })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// blz 0.6 or bcolz.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// `meta/storage` as read.
    pub fn storage(&self) -> &Value {
        &self.storage
    }

    /// `meta/sizes` as read.
    pub fn sizes(&self) -> &Value {
        &self.sizes
    }

    /// User attributes (`__attrs__`; `{}` when absent).
    pub fn attrs(&self) -> &Value {
        &self.attrs
    }

    /// The element type.
    pub fn dtype(&self) -> &Dtype {
        &self.dtype
    }

    /// The dtype string as stored.
    pub fn dtype_storage_string(&self) -> &str {
        self.storage
            .get("dtype")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The array shape (first dimension = length).
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Number of atoms (rows).
    pub fn len(&self) -> u64 {
        self.shape.first().copied().unwrap_or(0)
    }

    /// True when the array has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Atoms per chunk file.
    pub fn chunklen(&self) -> u64 {
        self.chunklen
    }

    /// Bytes per atom (itemsize × the trailing dimensions).
    pub fn atomsize(&self) -> u64 {
        self.atomsize
    }

    /// The needed chunk files, in order.
    pub fn chunks(&self) -> &[ChunkFile] {
        &self.chunks
    }

    /// Files in `data/` past the needed ones (left by a trim), ignored.
    pub fn stale_files(&self) -> &[String] {
        &self.stale
    }

    /// Payload size in bytes.
    pub fn nbytes(&self) -> u64 {
        self.len() * self.atomsize
    }

    /// Decodes chunk file `i` into `dst` (exactly its `items × atomsize` bytes).
    pub fn read_chunk_into(&self, i: usize, dst: &mut [u8]) -> Result<()> {
        let c = self.chunks.get(i).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("chunk {i} does not exist"),
            )
        })?;
        let bytes = read_chunk_file(self.files.as_ref(), &c.path, &self.limits)?;
        let chunk = bytes.get(CHUNK_FILE_HEADER as usize..).unwrap_or_default();
        blosc::decompress_into(chunk, dst, 1)
            .map_err(|e| crate::error::codec(e, i as u64, CHUNK_FILE_HEADER).in_file(&c.path))?;
        Ok(())
    }

    /// Decodes atoms `first .. first + dst.len() / atomsize` into `dst`,
    /// opening only the chunk files that hold them.
    pub fn read_atoms_into(&self, first: u64, dst: &mut [u8]) -> Result<()> {
        let a = self.atomsize.max(1);
        if !(dst.len() as u64).is_multiple_of(a) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "buffer is not a whole number of atoms",
            ));
        }
        let count = dst.len() as u64 / a;
        let end = first
            .checked_add(count)
            .filter(|&e| e <= self.len())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "atoms {first}..+{count} are outside the {} rows",
                        self.len()
                    ),
                )
            })?;
        let mut scratch = Vec::new();
        let mut i = first;
        while i < end {
            let ci = (i / self.chunklen) as usize;
            let c = self
                .chunks
                .get(ci)
                .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "chunk index"))?;
            let stop = end.min(c.first_item + c.items);
            let out = dst
                .get_mut(((i - first) * a) as usize..((stop - first) * a) as usize)
                .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "range arithmetic"))?;
            if i == c.first_item && stop == c.first_item + c.items {
                self.read_chunk_into(ci, out)?;
            } else {
                scratch.resize((c.items * a) as usize, 0);
                self.read_chunk_into(ci, &mut scratch)?;
                let from = ((i - c.first_item) * a) as usize;
                out.copy_from_slice(scratch.get(from..from + out.len()).unwrap_or_default());
            }
            i = stop;
        }
        Ok(())
    }

    /// Decodes the whole array.
    pub fn read_all(&self) -> Result<Vec<u8>> {
        let mut v = self.limits.alloc_zeroed("array", self.nbytes())?;
        self.read_atoms_into(0, &mut v)?;
        Ok(v)
    }
}

/// What `meta/storage` and `meta/sizes` say, checked (step 3 of the order).
struct MetaInfo {
    layout: Layout,
    dtype: Dtype,
    chunklen: u64,
    shape: Vec<u64>,
    len: u64,
    atomsize: u64,
}

fn meta_info(storage: &Value, sizes: &Value, storage_p: &Path, sizes_p: &Path) -> Result<MetaInfo> {
    let bad = |m: String, p: &Path| Error::new(ErrorKind::BadMetadata, m).in_file(p);
    let st = storage
        .as_object()
        .ok_or_else(|| bad("meta/storage is not an object".into(), storage_p))?;
    let layout = if st.contains_key("cparams") {
        Layout::Bcolz
    } else if st.contains_key("bparams") {
        Layout::Blz06
    } else {
        return Err(bad(
            "meta/storage has neither cparams nor bparams".into(),
            storage_p,
        ));
    };
    let dtype_s = st
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("meta/storage has no dtype string".into(), storage_p))?;
    let dtype = parse_storage_dtype(dtype_s).map_err(|e| e.in_file(storage_p))?;
    let chunklen = st
        .get("chunklen")
        .and_then(Value::as_u64)
        .filter(|&c| c > 0)
        .ok_or_else(|| bad("chunklen is not a positive int".into(), storage_p))?;
    let shape = sizes
        .get("shape")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| bad("meta/sizes shape is not a non-empty list".into(), sizes_p))?
        .iter()
        .map(|d| {
            d.as_u64().ok_or_else(|| {
                bad(
                    "meta/sizes shape holds a value that is not an int >= 0".into(),
                    sizes_p,
                )
            })
        })
        .collect::<Result<Vec<u64>>>()?;
    let len = shape.first().copied().unwrap_or(0);
    let atomsize = shape
        .iter()
        .skip(1)
        .try_fold(dtype.itemsize() as u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad("atom size overflows".into(), sizes_p))?;
    let nbytes = sizes
        .get("nbytes")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("meta/sizes has no nbytes".into(), sizes_p))?;
    if len.checked_mul(atomsize) != Some(nbytes) {
        return Err(Error::new(
            ErrorKind::SizeMismatch,
            format!("meta/sizes nbytes {nbytes} != {len} atoms x {atomsize} bytes"),
        )
        .in_file(sizes_p));
    }

    Ok(MetaInfo {
        layout,
        dtype,
        chunklen,
        shape,
        len,
        atomsize,
    })
}

/// Checks meta files given as bytes (for fuzzing and tools): JSON, then the
/// step-3 rules. Returns (length, atom size, chunklen).
pub fn check_meta_bytes(storage: &[u8], sizes: &[u8]) -> Result<(u64, u64, u64)> {
    let parse = |b: &[u8], name: &str| -> Result<Value> {
        let t = std::str::from_utf8(b)
            .map_err(|_| Error::new(ErrorKind::BadJson, format!("{name} is not UTF-8")))?;
        serde_json::from_str(t)
            .map_err(|e| Error::new(ErrorKind::BadJson, format!("{name} is not JSON: {e}")))
    };
    let (st, si) = (parse(storage, "meta/storage")?, parse(sizes, "meta/sizes")?);
    let m = meta_info(&st, &si, Path::new("meta/storage"), Path::new("meta/sizes"))?;
    Ok((m.len, m.atomsize, m.chunklen))
}

fn read_chunk_file(files: &dyn Files, path: &Path, limits: &Limits) -> Result<Vec<u8>> {
    let size = files.len(path).map_err(|e| Error::from(e).in_file(path))?;
    limits.check_alloc("chunk file", size)?;
    read_exact(files, path, size)
}

/// File `path`, which must hold `len` bytes (a file that changed size
/// since it was listed is an error, never a short value).
fn read_exact(files: &dyn Files, path: &Path, len: u64) -> Result<Vec<u8>> {
    let bytes = files.read(path).map_err(|e| Error::from(e).in_file(path))?;
    if bytes.len() as u64 != len {
        return Err(Error::new(
            ErrorKind::Truncated,
            format!("read {} bytes of a {len}-byte file", bytes.len()),
        )
        .in_file(path));
    }
    Ok(bytes)
}

/// Step 5 of the BLZ check order for chunk file `i`, holding `atoms`.
fn check_chunk_file(
    bytes: &[u8],
    path: &Path,
    i: u64,
    atoms: std::ops::Range<u64>,
    atomsize: u64,
    limits: &Limits,
    decode: Option<&mut Vec<u8>>,
) -> Result<ChunkFile> {
    let (first_item, items) = (atoms.start, atoms.end - atoms.start);
    let h = check_chunk_bytes(bytes, path, i, items, atomsize, limits, decode)?;
    Ok(ChunkFile {
        name: chunk_name(i),
        path: path.to_path_buf(),
        file_size: bytes.len() as u64,
        blosc: h,
        items,
        first_item,
    })
}

/// Step 5 for one chunk file's bytes: header, sizes, Blosc rules, and (with
/// `decode`) the decode itself; returns the chunk's Blosc header.
pub fn check_chunk_bytes(
    bytes: &[u8],
    path: &Path,
    i: u64,
    items: u64,
    atomsize: u64,
    limits: &Limits,
    decode: Option<&mut Vec<u8>>,
) -> Result<BloscHeader> {
    let e = |k: ErrorKind, m: String, at: u64| Error::new(k, m).in_chunk(i).at(at).in_file(path);
    let size = bytes.len() as u64;
    let h = crate::parse::blz_chunk_file(bytes, i).map_err(|x| x.in_file(path))?;
    if h.cbytes < 16 {
        return Err(e(
            ErrorKind::ChunkHeaderInvalid,
            format!("cbytes {} is less than 16", h.cbytes),
            16,
        ));
    }
    let room = size - CHUNK_FILE_HEADER;
    if u64::from(h.cbytes) > room {
        return Err(e(
            ErrorKind::Truncated,
            format!(
                "cbytes {} but only {room} byte(s) follow the header",
                h.cbytes
            ),
            16,
        ));
    }
    if u64::from(h.cbytes) < room {
        return Err(e(
            ErrorKind::SizeMismatch,
            format!("{} byte(s) after the chunk", room - u64::from(h.cbytes)),
            16,
        ));
    }
    let want = items.saturating_mul(atomsize);
    if u64::from(h.nbytes) != want {
        return Err(e(
            ErrorKind::SizeMismatch,
            format!(
                "chunk holds {} byte(s), {items} atoms of {atomsize} bytes need {want}",
                h.nbytes
            ),
            16,
        ));
    }
    h.check()
        .map_err(|x| crate::error::codec(x, i, 16).in_file(path))?;
    if let Some(scratch) = decode {
        let n = limits.check_alloc("chunk", u64::from(h.nbytes))?;
        scratch.resize(n, 0);
        let chunk = bytes.get(CHUNK_FILE_HEADER as usize..).unwrap_or_default();
        blosc::decompress_into(chunk, scratch, 1)
            .map_err(|x| crate::error::codec(x, i, 16).in_file(path))?;
    }
    Ok(h)
}

/// A BLZ/bcolz table directory.
#[derive(Debug, Clone)]
pub struct CTable {
    root: PathBuf,
    layout: Layout,
    rootdirs: Value,
    attrs: Value,
    names: Vec<String>,
    columns: Vec<CArray>,
}

impl CTable {
    /// Opens the table directory at `root` (see [`CArray::open`] for each column).
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(&local(), root.as_ref(), Limits::default(), false)
    }

    fn open_with(files: &Shared, root: &Path, limits: Limits, deep: bool) -> Result<Self> {
        let fs = files.as_ref();
        let rp = root.join("__rootdirs__");
        let rootdirs = read_json(fs, &rp, &limits)?;
        let bad = |m: &str| Error::new(ErrorKind::BadMetadata, m.to_string()).in_file(&rp);
        let names: Vec<String> = rootdirs
            .get("names")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("__rootdirs__ has no names list"))?
            .iter()
            .map(|n| {
                n.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad("a column name is not a string"))
            })
            .collect::<Result<_>>()?;
        let dirs = rootdirs.get("dirs");
        let layout = if dirs.is_some() {
            Layout::Blz06
        } else {
            Layout::Bcolz
        };
        let attrs_p = root.join("__attrs__");
        let attrs = if fs.is_file(&attrs_p) {
            read_json(fs, &attrs_p, &limits)?
        } else {
            Value::Object(Default::default())
        };
        let mut columns = Vec::new();
        for n in &names {
            let dir = match dirs {
                Some(d) => d
                    .get(n)
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad(&format!("column {n:?} is missing from dirs")))?,
                None => n.as_str(),
            };
            // A column directory is a plain name inside the table, never a path elsewhere.
            if dir.is_empty() || dir.contains(['/', '\\']) || dir == "." || dir == ".." {
                return Err(bad(&format!(
                    "column directory {dir:?} is not a plain name"
                )));
            }
            let cp = root.join(dir);
            if !fs.is_dir(&cp) {
                return Err(Error::new(
                    ErrorKind::MissingFile,
                    format!("column {n:?} directory is missing"),
                )
                .in_file(&cp));
            }
            columns.push(CArray::open_with(files, &cp, limits, deep)?);
        }
        if let Some(first) = columns.first() {
            for (n, c) in names.iter().zip(&columns) {
                if c.len() != first.len() {
                    return Err(Error::new(
                        ErrorKind::SizeMismatch,
                        format!(
                            "column {n:?} has {} rows, the first column {}",
                            c.len(),
                            first.len()
                        ),
                    )
                    .in_file(root));
                }
            }
        }
        Ok(CTable {
            root: root.to_path_buf(),
            layout,
            rootdirs,
            attrs,
            names,
            columns,
        })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// blz 0.6 or bcolz.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// `__rootdirs__` as read.
    pub fn rootdirs(&self) -> &Value {
        &self.rootdirs
    }

    /// Table attributes.
    pub fn attrs(&self) -> &Value {
        &self.attrs
    }

    /// Column names, in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The columns, in `names` order.
    pub fn columns(&self) -> &[CArray] {
        &self.columns
    }

    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&CArray> {
        self.names
            .iter()
            .position(|n| n == name)
            .and_then(|i| self.columns.get(i))
    }

    /// The number of rows (records).
    pub fn len(&self) -> u64 {
        self.columns.first().map_or(0, CArray::len)
    }

    /// True when the table has no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The packed row type: one field per column, a column of shape
    /// `[n, k, ...]` becoming a subarray field.
    pub fn row_dtype(&self) -> Dtype {
        Dtype::Record(
            self.names
                .iter()
                .zip(&self.columns)
                .map(|(n, c)| Field {
                    name: n.clone(),
                    dtype: c.dtype.clone(),
                    shape: c.shape.get(1..).unwrap_or_default().to_vec(),
                })
                .collect(),
        )
    }

    /// Decodes rows `first .. first + count` as packed records (fields in
    /// `names` order) into `dst`.
    pub fn read_rows_into(&self, first: u64, count: u64, dst: &mut [u8]) -> Result<()> {
        let row = self.columns.iter().map(CArray::atomsize).sum::<u64>();
        if dst.len() as u64 != count.saturating_mul(row) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{count} row(s) of {row} bytes do not fill the buffer"),
            ));
        }
        let mut off = 0u64;
        for c in &self.columns {
            let a = c.atomsize;
            let mut col = vec![0u8; (count * a) as usize];
            c.read_atoms_into(first, &mut col)?;
            for (r, v) in col.chunks_exact(a.max(1) as usize).enumerate() {
                let at = (r as u64 * row + off) as usize;
                if let Some(d) = dst.get_mut(at..at + v.len()) {
                    d.copy_from_slice(v);
                }
            }
            off += a;
        }
        Ok(())
    }

    /// Decodes every row as packed records.
    pub fn read_all(&self) -> Result<Vec<u8>> {
        let row = self.columns.iter().map(CArray::atomsize).sum::<u64>();
        let mut v = Limits::default().alloc_zeroed("table", self.len().saturating_mul(row))?;
        self.read_rows_into(0, self.len(), &mut v)?;
        Ok(v)
    }
}

/// What opening a BLZ/bcolz directory checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checks {
    /// The structure: metadata, sizes and every chunk's header.
    #[default]
    Structure,
    /// The structure, and every chunk decoded.
    EveryChunk,
}

/// How a BLZ/bcolz directory is opened (the shape of every reader's
/// `ReadOptions`: the limits, then what this format adds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Caps on what the directory's files may make us allocate.
    pub limits: Limits,
    /// What opening checks.
    pub checks: Checks,
}

impl ReadOptions {
    /// These options with other limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// These options with other checks.
    #[must_use]
    pub fn checks(mut self, checks: Checks) -> Self {
        self.checks = checks;
        self
    }
}

/// A BLZ/bcolz root directory: an array or a table.
#[derive(Debug, Clone)]
pub enum BlzDir {
    /// An array (`carray`/`barray`).
    Array(CArray),
    /// A table (`ctable`/`btable`).
    Table(CTable),
}

impl BlzDir {
    /// Opens the root directory at `root` (a table when it has `__rootdirs__`)
    /// with the default [`ReadOptions`]: default limits, the structure checked.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        Self::with_options(root, ReadOptions::default())
    }

    /// Opens the root directory at `root` with `opts`: its limits for every
    /// size read from the directory's files, and its checks
    /// ([`Checks::EveryChunk`] decodes every chunk and reports the first
    /// failure in the order of `bloscpack-blz.md` §6.3).
    pub fn with_options(root: impl AsRef<Path>, opts: ReadOptions) -> Result<Self> {
        Self::open_inner(&local(), root.as_ref(), opts)
    }

    /// [`BlzDir::with_options`] for the root directory at `root` of `files`
    /// (a directory that is not on the local filesystem).
    pub fn open_in(
        files: std::sync::Arc<dyn Files>,
        root: &Path,
        opts: ReadOptions,
    ) -> Result<Self> {
        Self::open_inner(&files, root, opts)
    }

    fn open_inner(files: &Shared, root: &Path, opts: ReadOptions) -> Result<Self> {
        let (limits, deep) = (opts.limits, opts.checks == Checks::EveryChunk);
        if !files.is_dir(root) {
            return Err(Error::new(ErrorKind::MissingFile, "not a directory").in_file(root));
        }
        let rootdirs = root.join("__rootdirs__");
        if files.is_file(&rootdirs) || files.is_dir(&rootdirs) {
            CTable::open_with(files, root, limits, deep).map(BlzDir::Table)
        } else {
            CArray::open_with(files, root, limits, deep).map(BlzDir::Array)
        }
    }

    /// blz 0.6 or bcolz.
    pub fn layout(&self) -> Layout {
        match self {
            BlzDir::Array(a) => a.layout(),
            BlzDir::Table(t) => t.layout(),
        }
    }

    /// `carray`, `barray`, `ctable` or `btable`.
    pub fn kind(&self) -> &'static str {
        match self {
            BlzDir::Array(a) => a.layout().array_kind(),
            BlzDir::Table(t) => t.layout().table_kind(),
        }
    }

    /// Element (array) or row (table) type.
    pub fn dtype(&self) -> Cow<'_, Dtype> {
        match self {
            BlzDir::Array(a) => Cow::Borrowed(a.dtype()),
            BlzDir::Table(t) => Cow::Owned(t.row_dtype()),
        }
    }

    /// Decodes the whole payload (rows packed for tables).
    pub fn read_all(&self) -> Result<Vec<u8>> {
        match self {
            BlzDir::Array(a) => a.read_all(),
            BlzDir::Table(t) => t.read_all(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_dtypes() {
        let t = |s: &str| parse_storage_dtype(s).map(|d| d.to_string());
        assert_eq!(t("float64").unwrap(), "<f8");
        assert_eq!(t("bool").unwrap(), "|b1");
        assert_eq!(t("uint16").unwrap(), "<u2");
        assert_eq!(t("|S12").unwrap(), "|S12");
        assert_eq!(t("<U4").unwrap(), "<U4");
        assert_eq!(t(">i4").unwrap(), ">i4");
        assert_eq!(t("datetime64[ns]").unwrap(), "<M8[ns]");
        assert_eq!(
            t("[('a', '<i4'), ('b', '<f8')]").unwrap(),
            "[('a', '<i4'), ('b', '<f8')]"
        );
        assert_eq!(
            parse_storage_dtype("object").unwrap_err().kind(),
            ErrorKind::Unsupported
        );
        assert_eq!(
            parse_storage_dtype("float128").unwrap_err().kind(),
            ErrorKind::Unsupported
        );
        assert_eq!(
            parse_storage_dtype("('<f4', (3,))").unwrap_err().kind(),
            ErrorKind::Unsupported
        );
        assert_eq!(
            parse_storage_dtype("{'names': []}").unwrap_err().kind(),
            ErrorKind::Unsupported
        );
        assert_eq!(
            parse_storage_dtype("flaot64").unwrap_err().kind(),
            ErrorKind::BadMetadata
        );
    }
}
