//! What a file holds, for a person or a program: the summaries behind
//! `dataformats inspect`, `validate` and `dump`, as library calls.
//!
//! [`inspect`] reads a file's headers and tables and describes them
//! (format, version, layout, columns, chunks, samples); [`validate`] checks
//! the whole file (every structure, checksum and payload) and says what it
//! checked; [`dump`] writes the records in the format's own text or JSON
//! form, or as the typed view's CSV or JSON lines. A [`Description`] is both
//! JSON with stable keys (for programs) and text (for a terminal).
//!
//! Besides every format [`detect`](crate::detect) knows, all three take the
//! inputs only [`convert`](crate::convert) reads: numpy `.npy` files and
//! tar archives (as TurboLoader's converter sees them).
//!
//! ```no_run
//! use dataformats::describe::{InspectOptions, inspect, validate};
//! let d = inspect("train.tbl".as_ref(), &InspectOptions::default())?;
//! println!("{d}");
//! let checked = validate("train.tbl".as_ref(), &mut |done, total| {
//!     eprint!("\r{done}/{total}");
//! })?;
//! println!("{}", checked.json);
//! # Ok::<(), dataformats::DatasetError>(())
//! ```

#[cfg(feature = "bloscpack")]
mod bloscpack;
#[cfg(feature = "cntk")]
mod cntk;
#[cfg(feature = "idv")]
mod idv;
#[cfg(feature = "mldf")]
mod mldf;
#[cfg(feature = "tbl2")]
mod tbl2;

use std::io::Write;
use std::ops::Range;
use std::path::Path;

use serde_json::{Value, json};

use crate::Format;
use crate::convert::{ConvertOptions, Target};
use crate::core::Progress;
use crate::dataset::Error;

/// Appends one formatted line to a `String` (writing to a string cannot fail).
macro_rules! put {
    ($t:expr) => { $t.push('\n') };
    ($t:expr, $($a:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($t, $($a)*);
    }};
}
pub(crate) use put;

/// A summary of a file, as JSON and as text.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Description {
    /// What the file is: a [`Format`]'s name (`idv`, `bloscpack`, ...),
    /// `npy` or `tar` (`formats` for the list [`formats`] gives).
    pub format: &'static str,
    /// The summary as one JSON object (what `dataformats --json` prints).
    pub json: Value,
    /// The summary as lines of text, the first naming the file.
    pub text: String,
    /// What the reader noticed without refusing the file (an MLDF
    /// reserved flag, for example).
    pub warnings: Vec<String>,
}

impl Description {
    fn new(format: &'static str, json: Value, text: String) -> Self {
        Description {
            format,
            json,
            text,
            warnings: Vec::new(),
        }
    }
}

impl std::fmt::Display for Description {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text.trim_end_matches('\n'))
    }
}

/// What [`inspect`] lists.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct InspectOptions {
    /// TBL v2: every sample's index entry and every metadata block, not
    /// only the summary of the index.
    pub all_samples: bool,
}

impl InspectOptions {
    /// With every TBL v2 sample listed.
    pub fn all_samples(mut self, yes: bool) -> Self {
        self.all_samples = yes;
        self
    }
}

/// The form of a [`dump`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DumpForm {
    /// The format's own text: IDV as CSV in ML.NET's text forms, CNTK as
    /// CTF lines, Bloscpack and BLZ as `index<TAB>value` lines (a raw
    /// Bloscpack payload as a hex dump), TBL v2 as one index entry a line,
    /// MLDF and FFCV as JSON lines of their own value forms.
    #[default]
    Text,
    /// The format's own JSON: IDV as JSON lines in ML.NET's text forms,
    /// CNTK, Bloscpack, BLZ and TBL v2 as one JSON array, MLDF and FFCV
    /// as JSON lines.
    Json,
    /// CSV: IDV in ML.NET's text forms, every other format as the typed
    /// view's CSV export.
    Csv,
    /// JSON lines: IDV in ML.NET's text forms, every other format as the
    /// typed view's lossless JSON lines (`docs/arrow.md`).
    JsonLines,
}

/// What [`dump`] writes.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct DumpOptions {
    /// The form.
    pub form: DumpForm,
    /// Only these records (elements for a raw Bloscpack payload, sequences
    /// for CNTK in its own forms); clamped to the file.
    pub rows: Option<Range<u64>>,
}

impl DumpOptions {
    /// A dump in `form` of every record.
    pub fn new(form: DumpForm) -> Self {
        DumpOptions { form, rows: None }
    }

    /// Only records `rows`.
    pub fn rows(mut self, rows: Range<u64>) -> Self {
        self.rows = Some(rows);
        self
    }

    /// The requested range within `0..len`.
    fn clamp(&self, len: u64) -> Range<u64> {
        let r = self.rows.clone().unwrap_or(0..len);
        let end = r.end.min(len);
        r.start.min(end)..end
    }
}

/// What a path is, for [`inspect`], [`validate`] and [`dump`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Format(Format),
    Npy,
    Tar,
}

fn input(path: &Path) -> Result<Input, Error> {
    if let Some(f) = crate::dataset::detect_path(path)? {
        return Ok(Input::Format(f));
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("npy") => Ok(Input::Npy),
        Some("tar") => Ok(Input::Tar),
        _ => Err(Error::Unrecognized {
            what: path.display().to_string(),
        }),
    }
}

/// The refusal of a format this build (or this command) does not read.
fn unsupported(path: &Path, format: Format) -> Error {
    let message = if format == Format::Ctf && format.is_available() {
        format!(
            "{}: CTF text carries no stream definitions, so it is read by converting it: \
             `dataformats convert x.ctf x.bin --stream NAME:dense|sparse:DIM ...` (or --streams FILE)",
            path.display()
        )
    } else if format.is_available() {
        format!(
            "{}: {} ({}) has no summary here",
            path.display(),
            format.name(),
            format.description()
        )
    } else {
        format!(
            "{}: detected {} ({}), but this build does not support it: enable the `{}` feature",
            path.display(),
            format.name(),
            format.description(),
            format.crate_name().trim_start_matches("dataformats-")
        )
    };
    Error::Unsupported {
        format: Some(format),
        message,
    }
}

/// The output's write error.
pub(crate) fn io(source: std::io::Error) -> Error {
    Error::Io {
        path: "the output".into(),
        source,
    }
}

/// A dump's records, written as `index<TAB>value` lines or as the items of
/// one JSON array.
pub(crate) struct Listing<'a> {
    out: std::io::BufWriter<&'a mut dyn Write>,
    json: bool,
    first: bool,
}

impl<'a> Listing<'a> {
    pub(crate) fn new(out: &'a mut dyn Write, json: bool) -> Result<Self, Error> {
        let mut out = std::io::BufWriter::new(out);
        if json {
            out.write_all(b"[").map_err(io)?;
        }
        Ok(Listing {
            out,
            json,
            first: true,
        })
    }

    /// Record `index` with its value.
    pub(crate) fn item(&mut self, index: u64, value: &dyn std::fmt::Display) -> Result<(), Error> {
        let sep = if self.first { "" } else { "," };
        self.first = false;
        if self.json {
            write!(self.out, "{sep}{value}")
        } else {
            writeln!(self.out, "{index}\t{value}")
        }
        .map_err(io)
    }

    /// The output, for text of the format's own shape.
    pub(crate) fn text(&mut self) -> &mut dyn Write {
        &mut self.out
    }

    /// Closes the array and flushes.
    pub(crate) fn finish(mut self) -> Result<(), Error> {
        if self.json {
            self.out.write_all(b"]\n").map_err(io)?;
        }
        self.out.flush().map_err(io)
    }
}

/// The formats this build knows (what `dataformats formats` prints): for
/// each its name, whether this build reads and writes it, its crate, its
/// usual extension (JSON only) and one line about it.
pub fn formats() -> Description {
    let list: Vec<Value> = Format::ALL
        .iter()
        .map(|f| {
            json!({
                "name": f.name(),
                "description": f.description(),
                "crate": f.crate_name(),
                "extension": f.extension(),
                "supported": f.is_available(),
            })
        })
        .collect();
    let mut text = format!(
        "{:<10} {:<9} {:<22} description\n",
        "format", "supported", "crate"
    );
    for f in Format::ALL {
        let supported = if f.is_available() { "yes" } else { "not yet" };
        let (name, krate, about) = (f.name(), f.crate_name(), f.description());
        text.push_str(&format!("{name:<10} {supported:<9} {krate:<22} {about}\n"));
    }
    Description::new("formats", json!({ "formats": list }), text)
}

/// Describes `path`: its format, header, schema and layout.
pub fn inspect(path: &Path, opts: &InspectOptions) -> Result<Description, Error> {
    match input(path)? {
        #[cfg(feature = "bloscpack")]
        Input::Format(Format::Bloscpack) => bloscpack::inspect(path),
        #[cfg(feature = "bloscpack")]
        Input::Format(Format::Blz) => bloscpack::inspect_blz(path),
        #[cfg(feature = "bloscpack")]
        Input::Npy => bloscpack::npy(path, false),
        #[cfg(feature = "tbl2")]
        Input::Format(Format::Tbl2) => tbl2::inspect(path, opts.all_samples),
        #[cfg(feature = "tbl2")]
        Input::Tar => tbl2::tar(path, false),
        #[cfg(feature = "cntk")]
        Input::Format(Format::Cntk) => cntk::inspect(path),
        #[cfg(feature = "idv")]
        Input::Format(Format::Idv) => idv::inspect(path),
        #[cfg(feature = "mldf")]
        Input::Format(Format::Mldf) => mldf::inspect(path),
        Input::Format(f) if f != Format::Ctf && f.is_available() => common_inspect(path),
        Input::Format(f) => Err(unsupported(path, f)),
        #[allow(unreachable_patterns)]
        _ => Err(Error::Unsupported {
            format: None,
            message: format!("{}: this build reads no .npy or tar files", path.display()),
        }),
    }
}

/// Checks every structure, checksum and payload of `path`, reporting
/// `(done, total)` to `progress` (in bytes for Bloscpack and TBL v2, in
/// chunks, blocks or records for the others), and describes what was
/// checked.
pub fn validate(path: &Path, progress: &mut dyn Progress) -> Result<Description, Error> {
    match input(path)? {
        #[cfg(feature = "bloscpack")]
        Input::Format(Format::Bloscpack) => bloscpack::validate(path, progress),
        #[cfg(feature = "bloscpack")]
        Input::Format(Format::Blz) => bloscpack::validate_blz(path),
        #[cfg(feature = "bloscpack")]
        Input::Npy => bloscpack::npy(path, true),
        #[cfg(feature = "tbl2")]
        Input::Format(Format::Tbl2) => tbl2::validate(path, progress),
        #[cfg(feature = "tbl2")]
        Input::Tar => tbl2::tar(path, true),
        #[cfg(feature = "cntk")]
        Input::Format(Format::Cntk) => cntk::validate(path, progress),
        #[cfg(feature = "idv")]
        Input::Format(Format::Idv) => idv::validate(path, progress),
        #[cfg(feature = "mldf")]
        Input::Format(Format::Mldf) => mldf::validate(path, progress),
        Input::Format(f) if f != Format::Ctf && f.is_available() => common_validate(path, progress),
        Input::Format(f) => Err(unsupported(path, f)),
        #[allow(unreachable_patterns)]
        _ => Err(Error::Unsupported {
            format: None,
            message: format!("{}: this build reads no .npy or tar files", path.display()),
        }),
    }
}

/// The decoded bytes of sample `i` of the TBL v2 file at `path` (a path
/// or URL), its CRC-16 checked.
pub fn tbl2_sample(path: &Path, i: u64) -> Result<Vec<u8>, Error> {
    #[cfg(feature = "tbl2")]
    {
        let src = crate::remote::source(path)?;
        let r = crate::tbl2::Reader::with_options(src, Default::default()).map_err(Error::Tbl2)?;
        r.read_sample(usize::try_from(i).unwrap_or(usize::MAX))
            .map(std::borrow::Cow::into_owned)
            .map_err(Error::Tbl2)
    }
    #[cfg(not(feature = "tbl2"))]
    Err(Error::Unsupported {
        format: None,
        message: format!(
            "{}: this build reads no TBL v2 files (sample {i})",
            path.display()
        ),
    })
}

/// Writes the records of `path` to `out` in the form `opts` names.
pub fn dump(path: &Path, opts: &DumpOptions, out: &mut (dyn Write + Send)) -> Result<(), Error> {
    let format = match input(path)? {
        Input::Format(f) => f,
        _ => return typed(path, opts, Target::JsonLines, out),
    };
    match (format, opts.form) {
        #[cfg(feature = "idv")]
        (Format::Idv, form) => idv::dump(path, opts, form, out),
        #[cfg(feature = "export")]
        (_, DumpForm::Csv) => typed(path, opts, Target::Csv, out),
        #[cfg(feature = "export")]
        (_, DumpForm::JsonLines) => typed(path, opts, Target::JsonLines, out),
        #[cfg(feature = "bloscpack")]
        (Format::Bloscpack, form) => bloscpack::dump(path, opts, form == DumpForm::Json, out),
        #[cfg(feature = "bloscpack")]
        (Format::Blz, form) => bloscpack::dump_blz(path, opts, form == DumpForm::Json, out),
        #[cfg(feature = "tbl2")]
        (Format::Tbl2, form) => tbl2::dump(path, opts, form == DumpForm::Json, out),
        #[cfg(feature = "cntk")]
        (Format::Cntk, form) => cntk::dump(path, opts, form == DumpForm::Json, out),
        #[cfg(feature = "mldf")]
        (Format::Mldf, _) => mldf::dump(path, opts, out),
        (f, _) if f != Format::Ctf && f.is_available() => common_dump(path, opts, out),
        (f, _) => Err(unsupported(path, f)),
    }
}

/// The typed view's export `target` of the records `opts` selects.
fn typed(
    path: &Path,
    opts: &DumpOptions,
    target: Target,
    out: &mut (dyn Write + Send),
) -> Result<(), Error> {
    #[cfg(feature = "export")]
    {
        let convert = ConvertOptions {
            rows: opts.rows.clone(),
            // A display, not a conversion: text that is not Unicode is
            // shown with U+FFFD.
            lossy: true,
            ..ConvertOptions::default()
        };
        let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
        crate::convert::convert_to_writer(path, target, &mut out, &convert).map(|_| ())
    }
    #[cfg(not(feature = "export"))]
    Err(Error::Unsupported {
        format: None,
        message: format!("{}: this build has no typed exports", target.name()),
    })
}

/// `inspect` through the common view (FFCV): format, version, records, columns.
fn common_inspect(path: &Path) -> Result<Description, Error> {
    let d = crate::open(path)?;
    let mut text = String::new();
    put!(
        text,
        "{}: {} version {}, {} record(s)",
        path.display(),
        d.format().description(),
        d.version(),
        d.len()
    );
    for c in d.columns() {
        let dims: Vec<String> = c
            .shape
            .iter()
            .map(|&x| if x == 0 { "*".into() } else { x.to_string() })
            .collect();
        let shape = if dims.is_empty() {
            "scalar".to_string()
        } else {
            format!("[{}]", dims.join(", "))
        };
        put!(text, "  {:<20} {:<16} {shape}", c.name, c.ty);
    }
    let json = serde_json::from_str(&d.summary_json()).map_err(|e| Error::Data {
        format: Some(d.format()),
        message: format!("summary: {e}"),
    })?;
    Ok(Description::new(d.format().name(), json, text))
}

/// `validate` through the common view.
fn common_validate(path: &Path, progress: &mut dyn Progress) -> Result<Description, Error> {
    let d = crate::open(path)?;
    d.validate_with(progress)?;
    let mut text = String::new();
    put!(
        text,
        "{}: ok: {} record(s) of {}, every value checked",
        path.display(),
        d.len(),
        d.format().description()
    );
    let json = json!({"valid": true, "format": d.format().name(), "records": d.len()});
    Ok(Description::new(d.format().name(), json, text))
}

/// `dump` through the common view: one JSON object per record, in the
/// records' own value forms.
fn common_dump(path: &Path, opts: &DumpOptions, out: &mut dyn Write) -> Result<(), Error> {
    let d = crate::open(path)?;
    let cols = d.columns();
    let range = opts.clamp(d.len());
    let mut out = std::io::BufWriter::new(out);
    let mut line = String::new();
    let mut i = range.start;
    // A batch at a time: each compressed block decoded once.
    while i < range.end {
        let stop = range.end.min(i.saturating_add(4096));
        for r in d.records(i..stop)? {
            line.clear();
            line.push('{');
            for (k, (c, v)) in cols.iter().zip(&r).enumerate() {
                if k > 0 {
                    line.push_str(", ");
                }
                crate::core::text::push_json_string(&mut line, &c.name);
                line.push_str(": ");
                line.push_str(&v.to_json());
            }
            line.push_str("}\n");
            out.write_all(line.as_bytes()).map_err(io)?;
        }
        i = stop;
    }
    out.flush().map_err(io)
}
