//! URLs in place of paths: objects in S3, GCS, Azure or behind HTTP(S)
//! (the `remote` feature, through `dataformats-remote`).
//!
//! Every function of this crate that takes a path also takes a URL
//! (`s3://bucket/key`, `gs://`, `az://`, `http(s)://`, `file://`):
//!
//! * files with a typed view (IDV, CBF, Bloscpack, MLDF, TBL v2, FFCV) are
//!   read by byte ranges: opening reads the header and tables, and each
//!   batch fetches only the blocks, chunks or samples it needs;
//! * inputs that a conversion reads whole as a stream (CTF, tar, `.npy`,
//!   CSV, JSON lines, Parquet, Arrow IPC) are first downloaded to a
//!   temporary file, since every byte is needed anyway;
//! * an output URL is written to a temporary file and uploaded when the
//!   conversion has succeeded; the object appears only when complete.
//!
//! A BLZ/bcolz directory cannot be a URL yet. Without the `remote` feature
//! a URL is refused with an error that says so.

use std::path::{Path, PathBuf};

use crate::core::Source;
use crate::dataset::Error;

/// True when `path` is written as a URL (`scheme://...`), not a local path.
///
/// ```
/// use std::path::Path;
/// assert!(dataformats::remote::is_url(Path::new("s3://bucket/train.tbl")));
/// assert!(!dataformats::remote::is_url(Path::new("data/train.tbl")));
/// ```
pub fn is_url(path: &Path) -> bool {
    path.to_str()
        .and_then(|s| s.split_once("://"))
        .is_some_and(|(scheme, _)| {
            scheme.len() >= 2
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
        })
}

fn failed(url: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: url.display().to_string(),
        source,
    }
}

/// The bytes at `path`: a local file mapped into memory (it must not
/// change while open), or the object at a URL read by byte ranges.
pub fn source(path: &Path) -> Result<Source, Error> {
    if !is_url(path) {
        // SAFETY: the facade documents that files must not change while open.
        return unsafe { Source::map(path) }.map_err(|x| failed(path, std::io::Error::other(x)));
    }
    remote_source(path)
}

/// The bytes at `path` for a reader that copies each byte it needs once
/// into a buffer of its own (a conversion decoding every chunk): a local
/// file read by positioned reads, not mapped, or the object at a URL read
/// by byte ranges. Reading a chunk into a buffer costs about what the page
/// faults of a mapping cost, and the buffer is then in the core's cache for
/// the digest and the decode (docs/performance.md).
pub fn source_for_copies(path: &Path) -> Result<Source, Error> {
    if !is_url(path) {
        return Source::open(path).map_err(|x| failed(path, std::io::Error::other(x)));
    }
    remote_source(path)
}

/// The format of the object at `url`, from its first bytes (one ranged
/// read) and its name's extension.
pub(crate) fn detect(url: &Path) -> Result<Option<crate::Format>, Error> {
    match remote_source(url) {
        Ok(src) => detect_source(&src, url),
        // No object of that name: a BLZ/bcolz directory is a prefix.
        #[cfg(feature = "bloscpack")]
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            match PrefixFiles::list(url) {
                Ok(Some(files)) if files.is_blz() => Ok(Some(crate::Format::Blz)),
                _ => Err(failed(url, source)),
            }
        }
        Err(e) => Err(e),
    }
}

/// The format of `src`, the object at `url`, from its first bytes and
/// its name's extension.
pub(crate) fn detect_source(src: &Source, url: &Path) -> Result<Option<crate::Format>, Error> {
    let n = src.len().min(crate::SNIFF_LEN as u64);
    let head = src
        .read_vec(0, n, &crate::core::Limits::default())
        .map_err(|e| failed(url, std::io::Error::other(e)))?;
    Ok(crate::detect::detect_head(&head, url))
}

/// The object at `url` as a source read by byte ranges.
fn remote_source(url: &Path) -> Result<Source, Error> {
    #[cfg(feature = "remote")]
    {
        let text = url.to_str().unwrap_or_default();
        dataformats_remote::open(text).map_err(|e| failed(url, e.into_io()))
    }
    #[cfg(not(feature = "remote"))]
    Err(no_remote(url))
}

/// The object at `url` whose length a listing gave as `len`, read by byte
/// ranges without asking its length again (one request fewer for each file
/// of a directory in object storage); an object of another length since
/// fails its first read.
#[cfg(feature = "bloscpack")]
fn listed_source(url: &Path, len: u64) -> Result<Source, Error> {
    #[cfg(feature = "remote")]
    {
        let text = url.to_str().unwrap_or_default();
        dataformats_remote::open_listed(text, len).map_err(|e| failed(url, e.into_io()))
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = len;
        Err(no_remote(url))
    }
}

#[cfg(not(feature = "remote"))]
fn no_remote(url: &Path) -> Error {
    Error::Unsupported {
        format: None,
        message: format!(
            "{}: this build reads no URLs; enable the facade's `remote` feature",
            url.display()
        ),
    }
}

/// Whether a URL input of format `from` is read by byte ranges (a file
/// with a typed view) rather than downloaded whole first (text, tables,
/// `.npy`, tars: inputs read as one stream).
pub(crate) fn by_ranges(from: Option<crate::Format>) -> bool {
    from.is_some_and(|f| f.is_available() && f != crate::Format::Ctf)
}

/// A local copy of the object at `url`, for inputs read whole as a
/// stream; it is deleted when dropped.
pub(crate) struct Staged {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Staged {
    /// Where the copy is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Downloads the object at `url` into a temporary file of the same name,
/// piece by piece (memory stays at one piece).
pub(crate) fn stage(url: &Path) -> Result<Staged, Error> {
    use std::io::Write;
    let src = remote_source(url)?;
    let dir = tempfile::tempdir().map_err(|e| failed(url, e))?;
    let name = url.file_name().unwrap_or(std::ffi::OsStr::new("object"));
    let path = dir.path().join(name);
    let file = std::fs::File::create(&path).map_err(|e| failed(url, e))?;
    let mut out = std::io::BufWriter::new(file);
    const PIECE: u64 = 8 << 20;
    let mut buf = vec![0u8; PIECE.min(src.len()) as usize];
    let mut at = 0u64;
    while at < src.len() {
        let n = PIECE.min(src.len() - at) as usize;
        let piece = buf.get_mut(..n).unwrap_or_default();
        src.read_at(at, piece)
            .map_err(|e| failed(url, std::io::Error::other(e)))?;
        out.write_all(piece).map_err(|e| failed(url, e))?;
        at += n as u64;
    }
    out.flush().map_err(|e| failed(url, e))?;
    Ok(Staged { _dir: dir, path })
}

/// A local file standing in for an output URL until [`Output::finish`]
/// uploads it.
pub(crate) struct Output {
    url: PathBuf,
    staged: Option<Staged>,
}

impl Output {
    /// For `output`: itself when it is a local path, else a temporary file
    /// of the same name.
    pub(crate) fn new(output: &Path) -> Result<Self, Error> {
        if !is_url(output) {
            return Ok(Output {
                url: output.to_path_buf(),
                staged: None,
            });
        }
        #[cfg(not(feature = "remote"))]
        return Err(no_remote(output));
        #[cfg(feature = "remote")]
        {
            let dir = tempfile::tempdir().map_err(|e| failed(output, e))?;
            let name = output.file_name().unwrap_or(std::ffi::OsStr::new("output"));
            let path = dir.path().join(name);
            Ok(Output {
                url: output.to_path_buf(),
                staged: Some(Staged { _dir: dir, path }),
            })
        }
    }

    /// Where to write.
    pub(crate) fn path(&self) -> &Path {
        self.staged.as_ref().map_or(&self.url, Staged::path)
    }

    /// Uploads the written file when the output is a URL.
    pub(crate) fn finish(self) -> Result<(), Error> {
        let Some(staged) = self.staged else {
            return Ok(());
        };
        #[cfg(feature = "remote")]
        {
            let text = self.url.to_str().unwrap_or_default();
            dataformats_remote::upload(staged.path(), text)
                .map(|_| ())
                .map_err(|e| failed(&self.url, e.into_io()))
        }
        #[cfg(not(feature = "remote"))]
        {
            drop(staged);
            Err(no_remote(&self.url))
        }
    }
}

/// Objects under a prefix of at most this many: a BLZ/bcolz directory is
/// listed whole when opened.
#[cfg(all(feature = "bloscpack", feature = "remote"))]
const MAX_PREFIX_OBJECTS: usize = 1_000_000;

/// A BLZ/bcolz directory in object storage: the objects under a URL
/// prefix, listed once when opened; each file is fetched whole when read.
#[cfg(feature = "bloscpack")]
#[derive(Debug)]
pub(crate) struct PrefixFiles {
    /// The prefix's URL, as the directory's root path.
    root: PathBuf,
    /// Each object's name below the prefix (`meta/storage`) and size.
    files: std::collections::BTreeMap<String, u64>,
}

#[cfg(feature = "bloscpack")]
impl PrefixFiles {
    /// Lists the objects under `url`; `None` when there are none.
    pub(crate) fn list(url: &Path) -> Result<Option<Self>, Error> {
        #[cfg(feature = "remote")]
        {
            let text = url.to_str().unwrap_or_default().trim_end_matches('/');
            let listed = dataformats_remote::list(text, MAX_PREFIX_OBJECTS)
                .map_err(|e| failed(url, e.into_io()))?;
            if listed.is_empty() {
                return Ok(None);
            }
            Ok(Some(PrefixFiles {
                root: PathBuf::from(text),
                files: listed.into_iter().collect(),
            }))
        }
        #[cfg(not(feature = "remote"))]
        Err(no_remote(url))
    }

    /// Whether the objects form a BLZ/bcolz root directory, by the rule
    /// [`detect_dir`](crate::detect_dir) applies to a local one: a
    /// `__rootdirs__`, or something inside `meta/` or `data/`.
    pub(crate) fn is_blz(&self) -> bool {
        self.files.contains_key("__rootdirs__")
            || self.below("meta").next().is_some()
            || self.below("data").next().is_some()
    }

    /// The directory's root path (its URL).
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// `path`'s name below the prefix (`""` for the root itself).
    fn name(&self, path: &Path) -> Option<String> {
        let rest = path.strip_prefix(&self.root).ok()?;
        let parts: Vec<&str> = rest
            .components()
            .map(|c| c.as_os_str().to_str())
            .collect::<Option<_>>()?;
        Some(parts.join("/"))
    }

    /// The names strictly below directory `name` (all of them for the root).
    fn below<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a str> + 'a {
        let lead = if name.is_empty() {
            String::new()
        } else {
            format!("{name}/")
        };
        let skip = lead.len();
        self.files
            .range(lead.clone()..)
            .map(|(k, _)| k.as_str())
            .take_while(move |k| k.starts_with(&lead))
            .filter_map(move |k| k.get(skip..))
            .filter(|k| !k.is_empty())
    }
}

#[cfg(feature = "bloscpack")]
impl crate::bloscpack::blz::Files for PrefixFiles {
    fn is_file(&self, path: &Path) -> bool {
        self.name(path).is_some_and(|n| self.files.contains_key(&n))
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.name(path)
            .is_some_and(|n| self.below(&n).next().is_some())
    }
    fn len(&self, path: &Path) -> std::io::Result<u64> {
        self.name(path)
            .and_then(|n| self.files.get(&n).copied())
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such object"))
    }
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let len = self.len(path)?;
        let src = listed_source(path, len).map_err(std::io::Error::other)?;
        let n = usize::try_from(len).map_err(std::io::Error::other)?;
        let mut out = vec![0u8; n];
        src.read_at(0, &mut out).map_err(std::io::Error::other)?;
        Ok(out)
    }
    fn list(&self, path: &Path) -> std::io::Result<Vec<String>> {
        let name = self.name(path).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "outside the prefix")
        })?;
        let mut out: Vec<String> = self
            .below(&name)
            .map(|k| k.split('/').next().unwrap_or(k).to_string())
            .collect();
        out.dedup();
        Ok(out)
    }
}

/// Opens the BLZ/bcolz root directory `path`: a local directory, or the
/// objects under a URL prefix; `deep` checks every chunk.
#[cfg(feature = "bloscpack")]
pub(crate) fn open_blz(
    path: &Path,
    limits: crate::core::Limits,
    deep: bool,
) -> Result<crate::bloscpack::blz::BlzDir, Error> {
    use crate::bloscpack::blz::{BlzDir, Checks, ReadOptions};
    let blz = crate::dataset::fe::<crate::bloscpack::Error>(crate::Format::Blz);
    let checks = if deep {
        Checks::EveryChunk
    } else {
        Checks::Structure
    };
    let opts = ReadOptions::default().limits(limits).checks(checks);
    if !is_url(path) {
        return BlzDir::with_options(path, opts).map_err(blz);
    }
    let files = PrefixFiles::list(path)?.ok_or_else(|| {
        failed(
            path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no object under this prefix"),
        )
    })?;
    let root = files.root().to_path_buf();
    BlzDir::open_in(std::sync::Arc::new(files), &root, opts).map_err(blz)
}
