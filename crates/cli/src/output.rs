//! Writing to stdout without panicking when the reader goes away.

use std::io::Write;

/// Writes one line to stdout. A closed pipe (`dataformats dump x | head`)
/// ends the program quietly with success; any other write error ends it with
/// status 1.
pub(crate) fn line(args: std::fmt::Arguments<'_>) {
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
