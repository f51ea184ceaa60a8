//! Format detection by magic number, directory layout, and (for the one text
//! format) extension.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::Result;

/// A file format this workspace knows about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Format {
    /// ML.NET binary dataview (`.idv`).
    Idv,
    /// A Bloscpack file (`.blp`).
    Bloscpack,
    /// A BLZ or bcolz carray/ctable root directory.
    Blz,
    /// CNTK binary format (CBF).
    Cntk,
    /// CNTK text format (CTF), recognised by its `.ctf` extension.
    Ctf,
    /// MLDF 1.x.
    Mldf,
    /// TurboLoader TBL (v2; v1 files are detected so the reader can refuse them by version).
    Tbl2,
    /// FFCV `.beton` (file version 2), read-only; no magic number, so it is
    /// recognised by its extension or a plausible header.
    Ffcv,
}

/// How many leading bytes [`detect_bytes`] looks at.
pub const SNIFF_LEN: usize = 16;

const IDV_MAGIC: &[u8] = b"CML\0DVB\0";
const BLOSCPACK_MAGIC: &[u8] = b"blpk";
/// The u64 0x636E746B5F62696E ("cntk_bin") stored little-endian.
const CNTK_MAGIC: &[u8] = b"nib_ktnc";
/// The first five bytes of the MLDF magic: enough to send a file with a
/// damaged magic (a line-ending conversion, the 8-byte draft layout) to the
/// MLDF reader, which says exactly what is wrong.
const MLDF_MAGIC: &[u8] = b"\x89MLDF";
const TBL_MAGIC: &[u8] = b"TBL";

impl Format {
    /// Every format, in a fixed order.
    pub const ALL: [Format; 8] = [
        Format::Idv,
        Format::Bloscpack,
        Format::Blz,
        Format::Cntk,
        Format::Ctf,
        Format::Mldf,
        Format::Tbl2,
        Format::Ffcv,
    ];

    /// The short name used on the command line and in sidecars
    /// (`idv`, `bloscpack`, `blz`, `cntk`, `ctf`, `mldf`, `tbl2`, `ffcv`).
    pub const fn name(self) -> &'static str {
        match self {
            Format::Idv => "idv",
            Format::Bloscpack => "bloscpack",
            Format::Blz => "blz",
            Format::Cntk => "cntk",
            Format::Ctf => "ctf",
            Format::Mldf => "mldf",
            Format::Tbl2 => "tbl2",
            Format::Ffcv => "ffcv",
        }
    }

    /// The format called `name` (as [`Format::name`] spells it).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// A one-line description.
    pub const fn description(self) -> &'static str {
        match self {
            Format::Idv => "ML.NET binary dataview",
            Format::Bloscpack => "Bloscpack compressed array file",
            Format::Blz => "BLZ/bcolz compressed array directory",
            Format::Cntk => "CNTK binary format (CBF)",
            Format::Ctf => "CNTK text format (CTF)",
            Format::Mldf => "MLDF 1.0 (FFCV-style ML data format)",
            Format::Tbl2 => "TurboLoader TBL v2",
            Format::Ffcv => "FFCV .beton (read-only)",
        }
    }

    /// The crate that reads and writes this format.
    pub const fn crate_name(self) -> &'static str {
        match self {
            Format::Idv => "dataformats-idv",
            Format::Bloscpack | Format::Blz => "dataformats-bloscpack",
            Format::Cntk | Format::Ctf => "dataformats-cntk",
            Format::Mldf | Format::Ffcv => "dataformats-mldf",
            Format::Tbl2 => "dataformats-tbl2",
        }
    }

    /// The usual file extension (without the dot); `None` for directories.
    pub const fn extension(self) -> Option<&'static str> {
        match self {
            Format::Idv => Some("idv"),
            Format::Bloscpack => Some("blp"),
            Format::Blz => None,
            Format::Cntk => Some("bin"),
            Format::Ctf => Some("ctf"),
            Format::Mldf => Some("mldf"),
            Format::Tbl2 => Some("tbl"),
            Format::Ffcv => Some("beton"),
        }
    }

    /// True when this build of the facade includes the format's crate.
    pub const fn is_available(self) -> bool {
        match self {
            Format::Bloscpack | Format::Blz => cfg!(feature = "bloscpack"),
            Format::Tbl2 => cfg!(feature = "tbl2"),
            Format::Cntk => cfg!(feature = "cntk"),
            Format::Idv => cfg!(feature = "idv"),
            Format::Mldf => cfg!(feature = "mldf"),
            Format::Ffcv => cfg!(feature = "ffcv"),
            // CTF is text without stream definitions: the cntk crate
            // converts it to CBF (`dataformats convert x.ctf y.bin`).
            Format::Ctf => cfg!(feature = "cntk"),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Recognises a format from the first bytes of a file (at least
/// [`SNIFF_LEN`] of them where the file has that many).
///
/// Only magic numbers count here; CTF, which has none, is recognised by
/// [`detect`] through its extension.
pub fn detect_bytes(head: &[u8]) -> Option<Format> {
    if head.starts_with(IDV_MAGIC) {
        Some(Format::Idv)
    } else if head.starts_with(BLOSCPACK_MAGIC) {
        Some(Format::Bloscpack)
    } else if head.starts_with(CNTK_MAGIC) {
        Some(Format::Cntk)
    } else if head.starts_with(MLDF_MAGIC) {
        Some(Format::Mldf)
    } else if head.starts_with(TBL_MAGIC) && matches!(head.get(3), Some(1 | 2)) {
        Some(Format::Tbl2)
    } else {
        None
    }
}

/// True when `head` (at least 16 bytes) reads as a plausible FFCV header:
/// version 2, at least one field, and a power-of-two page size of at least
/// 2 MiB. FFCV has no magic number, so this is a guess that only counts
/// after every magic number has failed to match.
pub fn looks_like_ffcv(head: &[u8]) -> bool {
    match head {
        [2, 0, f0, f1, p0, p1, p2, p3, ..] if head.len() >= 16 => {
            let page = u32::from_le_bytes([*p0, *p1, *p2, *p3]);
            u16::from_le_bytes([*f0, *f1]) > 0 && page.is_power_of_two() && page >= 1 << 21
        }
        _ => false,
    }
}

/// Recognises a BLZ/bcolz root directory: a ctable (`__rootdirs__`) or a
/// carray (a `meta/` or `data/` subdirectory).
pub fn detect_dir(path: &Path) -> Option<Format> {
    if !path.is_dir() {
        return None;
    }
    let has = |p: &str| path.join(p).exists();
    if has("__rootdirs__")
        || (has("meta") && path.join("meta").is_dir())
        || path.join("data").is_dir()
    {
        Some(Format::Blz)
    } else {
        None
    }
}

/// Detects the format of the file or directory at `path` (or of the
/// object at a URL, with the `remote` feature: [`crate::remote`]).
///
/// Returns `Ok(None)` when nothing matches, and an I/O error when the path
/// cannot be read.
pub fn detect(path: impl AsRef<Path>) -> Result<Option<Format>> {
    let path = path.as_ref();
    if crate::remote::is_url(path) {
        return Ok(crate::remote::detect(path).map_err(std::io::Error::other)?);
    }
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Ok(detect_dir(path));
    }
    let mut head = [0u8; SNIFF_LEN];
    let mut file = File::open(path)?;
    let mut n = 0;
    while n < head.len() {
        let buf = head.get_mut(n..).unwrap_or_default();
        match file.read(buf) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(detect_head(head.get(..n).unwrap_or_default(), path))
}

/// The format of a file whose first bytes are `head` (up to [`SNIFF_LEN`])
/// and whose name is `path`: by magic number, then by extension (CTF,
/// FFCV), then by a plausible FFCV header.
pub(crate) fn detect_head(head: &[u8], path: &Path) -> Option<Format> {
    if let Some(f) = detect_bytes(head) {
        return Some(f);
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("ctf") => Some(Format::Ctf),
        Some("beton") => Some(Format::Ffcv),
        _ if looks_like_ffcv(head) => Some(Format::Ffcv),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magics() {
        assert_eq!(detect_bytes(b"CML\0DVB\0\x01\0"), Some(Format::Idv));
        assert_eq!(detect_bytes(b"nib_ktnc\x01\0\0\0"), Some(Format::Cntk));
        assert_eq!(detect_bytes(b"TBL\x01"), Some(Format::Tbl2));
        assert_eq!(detect_bytes(b"TBL\x03"), None);
        // A damaged MLDF magic still goes to the MLDF reader, which names the damage.
        assert_eq!(
            detect_bytes(b"\x89MLDF\n\x1a\n"),
            Some(Format::Mldf),
            "CRLF-damaged MLDF magic"
        );
        assert_eq!(detect_bytes(b"\x89MLDX\r\n\x1a\n"), None);
        assert_eq!(detect_bytes(b""), None);
        assert_eq!(detect_bytes(b"bl"), None);
        let mut ffcv = [0u8; 16];
        ffcv[0] = 2;
        ffcv[2] = 3;
        ffcv[4..8].copy_from_slice(&(1u32 << 21).to_le_bytes());
        assert!(looks_like_ffcv(&ffcv));
        ffcv[6] = 0x30; // not a power of two
        assert!(!looks_like_ffcv(&ffcv));
        assert!(!looks_like_ffcv(&ffcv[..8]), "too short to judge");
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
    }

    #[test]
    fn files_and_directories() {
        let dir = std::env::temp_dir().join(format!("df-detect-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("carray/meta")).unwrap();
        std::fs::create_dir_all(dir.join("table")).unwrap();
        std::fs::create_dir_all(dir.join("plain")).unwrap();
        std::fs::write(dir.join("table/__rootdirs__"), b"{}").unwrap();
        std::fs::write(dir.join("x.tbl"), b"TBL\x02\x02\0\0\0").unwrap();
        std::fs::write(dir.join("x.ctf"), b"0 |a 1 2\n").unwrap();
        std::fs::write(dir.join("x.txt"), b"0 |a 1 2\n").unwrap();
        std::fs::write(dir.join("x.beton"), b"").unwrap();
        std::fs::write(dir.join("empty.blp"), b"").unwrap();
        assert_eq!(detect(dir.join("carray")).unwrap(), Some(Format::Blz));
        assert_eq!(detect(dir.join("table")).unwrap(), Some(Format::Blz));
        assert_eq!(detect(dir.join("plain")).unwrap(), None);
        assert_eq!(detect(dir.join("x.tbl")).unwrap(), Some(Format::Tbl2));
        assert_eq!(detect(dir.join("x.ctf")).unwrap(), Some(Format::Ctf));
        assert_eq!(detect(dir.join("x.txt")).unwrap(), None);
        assert_eq!(detect(dir.join("x.beton")).unwrap(), Some(Format::Ffcv));
        assert_eq!(
            detect(dir.join("empty.blp")).unwrap(),
            None,
            "no magic, no guess"
        );
        assert!(detect(dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
