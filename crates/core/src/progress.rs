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
    /// The bytes of the source the pass goes through (all of them unless
    /// [`Releasing::over`] says otherwise).
    span: std::ops::Range<u64>,
    /// The `total` last reported, and the `done` from which the pass will
    /// have gone a step past the last release (a report before it costs
    /// one comparison).
    total: u64,
    next: u64,
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
            span: 0..src.len(),
            total: 0,
            next: 0,
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

    /// For a pass through the bytes `span` of the source only, front to
    /// back ([`Releasing::in_file_order`]): its place is estimated within
    /// them, and what lies before them (an index the pass keeps reading,
    /// say) is not given back behind it.
    pub fn over(mut self, span: std::ops::Range<u64>) -> Self {
        let end = span.end.min(self.src.len());
        self.span = span.start.min(end)..end;
        self.released_at = self.span.start;
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
        if total != self.total {
            self.total = total;
            self.next = self.first_done_past_step();
        }
        if done < self.next {
            return;
        }
        let len = self.span.end - self.span.start;
        let at = u128::from(len) * u128::from(done.min(total)) / u128::from(total);
        let at = self.span.start + u64::try_from(at).unwrap_or(len).min(len);
        if at.saturating_sub(self.released_at) >= self.step {
            if self.in_order {
                self.src.release_range(self.released_at..at);
            } else {
                self.src.release_pages();
            }
            self.released_at = at;
        }
        self.next = self.first_done_past_step();
    }
}

impl Releasing<'_> {
    /// The least `done` (of `self.total`) whose estimated place in the
    /// span, `len * done / total` rounded down, is a step past the last
    /// release: `ceil((released_at - start + step) * total / len)`.
    fn first_done_past_step(&self) -> u64 {
        let len = u128::from(self.span.end - self.span.start);
        if len == 0 {
            return u64::MAX;
        }
        let past = u128::from(self.released_at - self.span.start) + u128::from(self.step);
        past.checked_mul(u128::from(self.total))
            .and_then(|p| u64::try_from(p.div_ceil(len)).ok())
            .unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `done` a pass must reach before its next release is exactly
    /// where the estimated place (in the source, or in the span it goes
    /// through) gets a step past the last release.
    #[test]
    fn the_next_release_is_where_the_estimate_passes_a_step() {
        let mut rng = crate::rng::SplitMix64::new(7);
        for _ in 0..300 {
            let len = 1 + rng.below(5000);
            let src = crate::Source::from_vec(vec![0; len as usize]);
            let mut quiet = none();
            let step = 1 + rng.below(len + 10);
            // The whole source, or a span of it (`over`).
            let start = match rng.below(2) {
                0 => 0,
                _ => rng.below(len),
            };
            let mut r = Releasing::with_step(&src, &mut quiet, step);
            if start > 0 {
                r = r.over(start..len);
            }
            r.total = 1 + rng.below(3000);
            r.released_at = start + rng.below(len - start + 1);
            let next = r.first_done_past_step();
            for done in 0..=r.total {
                let at = start + (len - start) * done / r.total;
                assert_eq!(
                    done >= next,
                    at >= r.released_at + step,
                    "len {len} span from {start} total {} step {step} at {} done {done}",
                    r.total,
                    r.released_at
                );
            }
        }
    }
}
