//! Progress bars that show only on a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--quiet`: no progress bars, notes or summaries from here on.
pub(crate) fn set_quiet() {
    QUIET.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub(crate) fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// A byte-throughput progress bar on stderr, hidden when stderr is not a
/// terminal (pipes, CI logs) or when `quiet` (or `--quiet`) is set.
pub(crate) fn bytes(total: u64, message: &str, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if quiet || self::quiet() || !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
        return bar;
    }
    let style = ProgressStyle::with_template(
        "{msg:>12} [{bar:32}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(message.to_string());
    bar
}

/// A progress bar on stderr for work counted in units (chunks, blocks,
/// samples), drawn only where [`bytes`] would be.
pub(crate) fn units(message: &str, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::new(0);
    if quiet || self::quiet() || !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
        return bar;
    }
    let style = ProgressStyle::with_template("{msg:>12} [{bar:32}] {pos}/{len} eta {eta}")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(message.to_string());
    bar
}

/// The library's `(done, total)` reports, drawn on `bar`.
pub(crate) fn report(bar: &ProgressBar) -> impl FnMut(u64, u64) + '_ {
    move |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    }
}
