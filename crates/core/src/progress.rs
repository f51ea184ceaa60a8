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

/// Bytes of a mapped source a pass goes through between two releases of
/// its pages: what a [`Releasing`] pass keeps resident at most, about.
pub const RELEASE_STEP: u64 = 32 << 20;

/// A [`Progress`] that also gives the pages of the mapped source a pass
/// reads back to the kernel ([`crate::Source::release_pages`]) each time the
/// pass has got about [`RELEASE_STEP`] bytes further (or its own step), so that checking a
/// file of gigabytes keeps tens of megabytes resident instead of the whole
/// file. How far is estimated from the reported fraction: `done / total`
/// of the source's length (a pass whose units differ in size, as IDV's
/// blocks of narrow and wide columns do, keeps a few steps resident). Every
/// page goes back, also those other threads are reading: they are read in
/// again from the page cache. The pages read before the pass go back when
/// it starts. Reports go on to the wrapped progress unchanged.
pub struct Releasing<'a> {
    src: &'a crate::Source,
    inner: &'a mut dyn Progress,
    /// Bytes between two releases.
    step: u64,
    /// Where the pass was (estimated) at the last release.
    released_at: u64,
    /// Whether the pass reads the source front to back: only what lies
    /// behind it goes back then.
    in_order: bool,
}

impl<'a> Releasing<'a> {
    /// Wraps `inner` for a pass over `src`.
    pub fn new(src: &'a crate::Source, inner: &'a mut dyn Progress) -> Self {
        Self::with_step(src, inner, RELEASE_STEP)
    }

    /// [`Releasing::new`], releasing every `step` bytes instead.
    pub fn with_step(src: &'a crate::Source, inner: &'a mut dyn Progress, step: u64) -> Self {
        // What opening the source read (headers, tables, indexes now
        // parsed into memory) goes back before the pass starts.
        src.release_pages();
        Releasing {
            src,
            inner,
            step: step.max(1),
            released_at: 0,
            in_order: false,
        }
    }

    /// For a pass that reads the source front to back (chunks or samples
    /// in file order): each release gives back only the pages behind the
    /// pass, so those other threads are reading just ahead stay. (A pass
    /// that is not in order would keep what lies ahead of its estimate.)
    pub fn in_file_order(mut self) -> Self {
        self.in_order = true;
        self
    }
}

impl Progress for Releasing<'_> {
    fn advance(&mut self, done: u64, total: u64) {
        self.inner.advance(done, total);
        if total == 0 {
            return;
        }
        let at = u128::from(self.src.len()) * u128::from(done.min(total)) / u128::from(total);
        let at = u64::try_from(at).unwrap_or(u64::MAX);
        if at.saturating_sub(self.released_at) >= self.step {
            if self.in_order {
                self.src.release_range(self.released_at..at);
            } else {
                self.src.release_pages();
            }
            self.released_at = at;
        }
    }
}
