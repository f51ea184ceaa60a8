//! How far a long operation (a full validation, a conversion) has got, for
//! whoever draws it: the library reports, the caller (a progress bar, a
//! log line, nothing) decides what to show.

/// Receives `done` out of `total` units of work; the operation names the
/// unit (bytes, chunks, blocks, samples). Calls come in order, `done`
/// never decreasing.
pub trait Progress {
    /// `done` of `total` units are complete.
    fn advance(&mut self, done: u64, total: u64);
}

impl<F: FnMut(u64, u64)> Progress for F {
    fn advance(&mut self, done: u64, total: u64) {
        self(done, total);
    }
}

/// Reports nothing.
pub fn none() -> impl Progress {
    |_: u64, _: u64| {}
}
