//! The `dataformats` command line's option parsing as a library: the
//! binary uses it, and so does the Python package, whose `convert` takes
//! the command line's options as keyword arguments and must understand
//! them exactly as the command line does.

use std::path::{Path, PathBuf};

pub mod args;

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    /// The process exit code: 1 a failed operation or damaged file, 2 a
    /// bad command line, 3 input this build cannot read.
    pub code: u8,
    /// A short word for the kind of failure (`usage`, `io`, ...).
    pub kind: &'static str,
    /// The file it concerns, if one.
    pub path: Option<PathBuf>,
    /// What went wrong.
    pub message: String,
}

impl Failure {
    /// A failure of `kind` with exit code `code`; a message that starts
    /// with `path` has it taken off (the path is said once).
    pub fn new(
        code: u8,
        kind: &'static str,
        path: Option<&Path>,
        message: impl Into<String>,
    ) -> Self {
        let mut message = message.into();
        let named = path.map(|p| format!("{}: ", p.display()));
        if let Some(n) = named.filter(|n| message.starts_with(n.as_str())) {
            message.drain(..n.len());
        }
        Failure {
            code,
            kind,
            path: path.map(Path::to_path_buf),
            message,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{}: {}", p.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl From<dataformats::Error> for Failure {
    fn from(e: dataformats::Error) -> Self {
        Failure::new(1, "error", None, e.to_string())
    }
}

/// `dataformats convert`'s arguments, parsed from `argv` (without the
/// program and command names: `["in.idv", "out.mldf", "--lossy"]`) exactly
/// as the command line parses them.
pub fn parse_convert<I, S>(argv: I) -> Result<args::ConvertArgs, Failure>
where
    I: IntoIterator<Item = S>,
    S: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser;
    /// The `convert` command alone.
    #[derive(Debug, clap::Parser)]
    #[command(name = "convert", no_binary_name = true)]
    struct Convert {
        #[command(flatten)]
        args: args::ConvertArgs,
    }
    Convert::try_parse_from(argv)
        .map(|c| c.args)
        .map_err(|e| Failure::new(2, "usage", None, e.to_string()))
}
