//! Writing to stdout without panicking when the reader goes away.

use std::io::Write;

static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Runs `f` with [`line`] output switched off (the demo runs commands and
/// prints its own summary of them).
pub(crate) fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let was = QUIET.swap(true, std::sync::atomic::Ordering::Relaxed);
    let r = f();
    QUIET.store(was, std::sync::atomic::Ordering::Relaxed);
    r
}

/// Writes one line to stdout. A closed pipe (`dataformats dump x | head`)
/// ends the program quietly with success; any other write error ends it with
/// status 1.
pub(crate) fn line(args: std::fmt::Arguments<'_>) {
    if QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// `say!(...)`: like `println!`, through [`line`].
macro_rules! say {
    () => { $crate::output::line(format_args!("")) };
    ($($t:tt)*) => { $crate::output::line(format_args!($($t)*)) };
}
pub(crate) use say;

/// Writes text to stdout without a newline (same pipe handling as [`line`]).
pub(crate) fn raw(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}
