//! Reader configuration, CNTK's block randomization, and a minibatch
//! iterator for training code (`cntk.md` §7).

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::read::{Chunk, Reader, Record};

/// The 64-bit Mersenne Twister (`std::mt19937_64`), the generator CNTK's
/// randomizer draws from.
#[derive(Debug, Clone)]
pub struct Mt19937_64 {
    mt: Box<[u64; 312]>,
    i: usize,
}

// Indices into the 312-word state are always reduced modulo 312 or bounded
// by the loop; none comes from a file.
#[allow(clippy::indexing_slicing)]
impl Mt19937_64 {
    /// Seeded as `std::mt19937_64(seed)`.
    pub fn new(seed: u64) -> Self {
        let mut mt = Box::new([0u64; 312]);
        mt[0] = seed;
        for k in 1..312 {
            let prev = mt[k - 1];
            mt[k] = 6_364_136_223_846_793_005u64
                .wrapping_mul(prev ^ (prev >> 62))
                .wrapping_add(k as u64);
        }
        Mt19937_64 { mt, i: 312 }
    }

    /// The next 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        const UM: u64 = 0xFFFF_FFFF_8000_0000;
        const LM: u64 = 0x7FFF_FFFF;
        const A: u64 = 0xB502_6F5A_A966_19E9;
        if self.i >= 312 {
            for k in 0..312 {
                let x = (self.mt[k] & UM) | (self.mt[(k + 1) % 312] & LM);
                let mag = if x & 1 == 1 { A } else { 0 };
                self.mt[k] = self.mt[(k + 156) % 312] ^ (x >> 1) ^ mag;
            }
            self.i = 0;
        }
        let mut x = self.mt[self.i];
        self.i += 1;
        x ^= (x >> 29) & 0x5555_5555_5555_5555;
        x ^= (x << 17) & 0x71D6_7FFF_EDA6_0000;
        x ^= (x << 37) & 0xFFF7_EEE0_0000_0000;
        x ^ (x >> 43)
    }
}

/// The randomization window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// In chunks (CNTK's default: 128).
    Chunks(u64),
    /// In samples (`sampleBasedRandomizationWindow = true`).
    Samples(u64),
}

/// How the reader serves sequences, as CNTKBinaryReader's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReaderConfig {
    /// Shuffle (default true).
    pub randomize: bool,
    /// Seed offset; sweep k uses `seed + k` (default 0).
    pub seed: u64,
    /// Window (default 128 chunks).
    pub window: Window,
    /// Keep every chunk after its first load (default false: only the
    /// chunks of the current minibatch stay in memory).
    pub keep_data_in_memory: bool,
    /// `(exposed name, name in the file)`: streams renamed; others keep their names.
    pub aliases: Vec<(String, String)>,
}

impl Default for ReaderConfig {
    fn default() -> Self {
        ReaderConfig {
            randomize: true,
            seed: 0,
            window: Window::Chunks(128),
            keep_data_in_memory: false,
            aliases: Vec::new(),
        }
    }
}

impl ReaderConfig {
    /// This config without randomization (file order).
    #[must_use]
    pub fn no_randomize(mut self) -> Self {
        self.randomize = false;
        self
    }

    /// This config with a seed.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// This config with a window.
    #[must_use]
    pub fn window(mut self, w: Window) -> Self {
        self.window = w;
        self
    }

    /// This config keeping loaded chunks.
    #[must_use]
    pub fn keep_data_in_memory(mut self, on: bool) -> Self {
        self.keep_data_in_memory = on;
        self
    }

    /// This config exposing file stream `file_name` as `name`.
    #[must_use]
    pub fn alias(mut self, name: &str, file_name: &str) -> Self {
        self.aliases.push((name.to_string(), file_name.to_string()));
        self
    }
}

/// `[begin, end)` window of chunk positions for every randomized position.
// Every index is a chunk position below `sizes.len()` (loop bounds keep them there).
#[allow(clippy::indexing_slicing)]
fn windows(sizes: &[u64], w: Window) -> Vec<(usize, usize)> {
    let n = sizes.len();
    match w {
        Window::Chunks(c) => {
            let c = (c.max(1) as usize).min(n.max(1));
            (0..n)
                .map(|i| {
                    let mut begin = i.saturating_sub(c / 2);
                    if begin + c > n {
                        begin = n.saturating_sub(c);
                    }
                    (begin, (begin + c).min(n))
                })
                .collect()
        }
        Window::Samples(s) => {
            let half = s / 2;
            let mut starts = Vec::with_capacity(n);
            let mut acc = 0u64;
            for &z in sizes {
                starts.push(acc);
                acc += z;
            }
            let (mut begin, mut end) = (0usize, 0usize);
            (0..n)
                .map(|i| {
                    let me = starts[i];
                    while begin < i && starts[begin] + half < me {
                        begin += 1;
                    }
                    end = end.max(i + 1);
                    while end < n && starts[end] + sizes[end] < me + half {
                        end += 1;
                    }
                    (begin, end)
                })
                .collect()
        }
    }
}

/// Sweep `sweep`'s randomized chunk order (file chunk index at each
/// position) and, per position, the `[begin, end)` window of positions its
/// sequences may be exchanged with. The shuffle is CNTK's: for each position
/// i in turn, swap with position `mt19937_64() mod n`, the generator seeded
/// with the low 32 bits of `seed + sweep` (CNTK passes it as an `unsigned
/// int`).
// Chunk indices come from the opened chunk table.
#[allow(clippy::indexing_slicing)]
pub fn chunk_plan(
    reader: &Reader,
    cfg: &ReaderConfig,
    sweep: u64,
) -> (Vec<usize>, Vec<(usize, usize)>) {
    let chunks = reader.chunks();
    let n = chunks.len();
    let mut perm: Vec<usize> = (0..n).collect();
    let seed = cfg.seed.wrapping_add(sweep);
    let mut rng = Mt19937_64::new(u64::from(seed as u32));
    for i in 0..n {
        let j = (rng.next_u64() % n as u64) as usize;
        perm.swap(i, j);
    }
    let sizes: Vec<u64> = perm
        .iter()
        .map(|&c| u64::from(chunks[c].num_samples))
        .collect();
    let win = windows(&sizes, cfg.window);
    (perm, win)
}

/// Draws per sequence position before the randomizer gives up swapping it.
const MAX_DRAWS: u32 = 1 << 24;

/// The order in which sweep `sweep` serves sequences: `(chunk, sequence in chunk)`.
///
/// Without randomization, file order. With it, CNTK's block randomization:
/// the chunks swap-shuffled with `mt19937_64` seeded with the low 32 bits of
/// `seed + sweep`, then each position's sequence swapped with a random one
/// from its chunk's window, provided each sequence's source chunk lies in
/// the window of the chunk it moves to, drawn from a second `mt19937_64`
/// seeded with all of `seed + sweep` (as CNTK's ChunkRandomizer and
/// SequenceRandomizer do).
// Chunk indices come from the opened chunk table, positions from vectors
// built here with matching lengths; none is taken from chunk data.
#[allow(clippy::indexing_slicing)]
pub fn sweep_order(reader: &Reader, cfg: &ReaderConfig, sweep: u64) -> Vec<(usize, usize)> {
    let chunks = reader.chunks();
    if !cfg.randomize {
        return chunks
            .iter()
            .enumerate()
            .flat_map(|(c, e)| (0..e.num_sequences as usize).map(move |q| (c, q)))
            .collect();
    }
    let n = chunks.len();
    let seed = cfg.seed.wrapping_add(sweep);
    let (perm, win) = chunk_plan(reader, cfg, sweep);
    // Sequences in randomized-chunk order, each with the position of the
    // chunk it comes from; and, for every sequence position, the chunk
    // position it lies in (which stays put while sequences move).
    let mut seqs: Vec<(usize, usize, usize)> = Vec::new();
    let mut chunk_at: Vec<usize> = Vec::new();
    let mut pos_of_chunk_start = Vec::with_capacity(n + 1);
    for (p, &c) in perm.iter().enumerate() {
        pos_of_chunk_start.push(seqs.len());
        for q in 0..chunks[c].num_sequences as usize {
            seqs.push((p, c, q));
            chunk_at.push(p);
        }
    }
    pos_of_chunk_start.push(seqs.len());
    let mut rng = Mt19937_64::new(seed);
    let inside = |p: usize, w: (usize, usize)| p >= w.0 && p < w.1;
    for t in 0..seqs.len() {
        let ct = chunk_at[t];
        let wt = win[ct];
        let (lo, hi) = (pos_of_chunk_start[wt.0], pos_of_chunk_start[wt.1]);
        // As CNTK: draw until the sequence at j may move to t's chunk and the
        // one at t to j's chunk (a draw is spent even when the range holds
        // one position). j = t always qualifies, so each draw succeeds with
        // probability at least 1/(hi - lo); the cap only guards against a
        // pathological run and is never reached in practice.
        for _ in 0..MAX_DRAWS {
            let j = lo + (rng.next_u64() % (hi - lo) as u64) as usize;
            if inside(seqs[j].0, wt) && inside(seqs[t].0, win[chunk_at[j]]) {
                seqs.swap(t, j);
                break;
            }
        }
    }
    seqs.into_iter().map(|(_, c, q)| (c, q)).collect()
}

/// What a minibatch is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchSize {
    /// At least this many samples (whole sequences; at least one sequence).
    Samples(u64),
    /// This many sequences.
    Sequences(usize),
}

/// One sequence of a minibatch: its position in the file and its records,
/// in stream order.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceData {
    /// Chunk index.
    pub chunk: usize,
    /// Sequence index within the chunk.
    pub index: usize,
    /// Length in samples.
    pub length: u32,
    /// One record per stream, in [`Minibatches::stream_names`] order.
    pub records: Vec<Record>,
}

/// Minibatches of one sweep, in the configured order.
#[derive(Debug)]
pub struct Minibatches<'r> {
    reader: &'r Reader,
    keep: bool,
    order: Vec<(usize, usize)>,
    pos: usize,
    size: BatchSize,
    cache: HashMap<usize, Arc<Chunk>>,
    names: Vec<String>,
}

impl<'r> Minibatches<'r> {
    /// Minibatches of sweep `sweep` of `reader` under `cfg`.
    pub fn new(
        reader: &'r Reader,
        cfg: &ReaderConfig,
        sweep: u64,
        size: BatchSize,
    ) -> Result<Self> {
        let mut names: Vec<String> = reader.streams().iter().map(|s| s.name.clone()).collect();
        for (new, file) in &cfg.aliases {
            let slot = names.iter_mut().find(|n| *n == file).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("no stream {file:?} to alias as {new:?}"),
                )
            })?;
            *slot = new.clone();
        }
        Ok(Minibatches {
            reader,
            keep: cfg.keep_data_in_memory,
            order: sweep_order(reader, cfg, sweep),
            pos: 0,
            size,
            cache: HashMap::new(),
            names,
        })
    }

    /// Stream names as exposed (after aliasing), in record order.
    pub fn stream_names(&self) -> &[String] {
        &self.names
    }

    fn chunk(&mut self, c: usize) -> Result<Arc<Chunk>> {
        if let Some(ch) = self.cache.get(&c) {
            return Ok(Arc::clone(ch));
        }
        let ch = Arc::new(self.reader.read_chunk(c)?);
        self.cache.insert(c, Arc::clone(&ch));
        Ok(ch)
    }
}

impl Iterator for Minibatches<'_> {
    type Item = Result<Vec<SequenceData>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.order.len() {
            return None;
        }
        let mut batch = Vec::new();
        let mut samples = 0u64;
        while let Some(&(c, q)) = self.order.get(self.pos) {
            let full = match self.size {
                BatchSize::Samples(n) => !batch.is_empty() && samples >= n,
                BatchSize::Sequences(n) => batch.len() >= n.max(1),
            };
            if full {
                break;
            }
            let ch = match self.chunk(c) {
                Ok(ch) => ch,
                Err(e) => return Some(Err(e)),
            };
            let length = ch.sequence_lengths.get(q).copied().unwrap_or(0);
            let records = ch
                .records
                .iter()
                .filter_map(|per| per.get(q).cloned())
                .collect();
            samples += u64::from(length);
            batch.push(SequenceData {
                chunk: c,
                index: q,
                length,
                records,
            });
            self.pos += 1;
        }
        if !self.keep {
            let used: std::collections::HashSet<usize> = batch.iter().map(|s| s.chunk).collect();
            self.cache.retain(|c, _| used.contains(c));
        }
        Some(Ok(batch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_64_matches_the_standard() {
        // The C++ standard's check: the 10000th output of a default-seeded mt19937_64.
        let mut r = Mt19937_64::new(5489);
        let mut v = 0;
        for _ in 0..10_000 {
            v = r.next_u64();
        }
        assert_eq!(v, 9_981_545_732_273_789_042);
    }

    #[test]
    fn chunk_windows() {
        assert_eq!(
            windows(&[1; 5], Window::Chunks(2)),
            vec![(0, 2), (0, 2), (1, 3), (2, 4), (3, 5)]
        );
        assert_eq!(
            windows(&[1; 3], Window::Chunks(0)),
            vec![(0, 1), (1, 2), (2, 3)]
        );
        let w = windows(&[10, 10, 10, 10], Window::Samples(20));
        assert!(w.iter().enumerate().all(|(i, &(b, e))| b <= i && i < e));
    }
}
