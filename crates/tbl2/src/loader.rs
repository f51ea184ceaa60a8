//! A sample loader for training code: batches, a seeded shuffle, sharding by
//! worker rank, filters on the cached index fields, and (with the `rayon`
//! feature) parallel decode.

use crate::error::Result;
use crate::format::IndexEntry;
use crate::read::Reader;

/// A predicate on index entries.
pub type EntryFilter = Box<dyn Fn(&IndexEntry) -> bool + Send + Sync>;

/// How a [`Loader`] picks and groups samples.
pub struct LoaderOptions {
    /// Samples per batch (at least 1).
    pub batch_size: usize,
    /// Shuffle with this seed (combined with the epoch); `None` keeps file order.
    pub seed: Option<u64>,
    /// The epoch, so every epoch gets a different order from one seed.
    pub epoch: u64,
    /// This worker's rank, `0..world`.
    pub rank: usize,
    /// Number of workers sharing the data.
    pub world: usize,
    /// Drop a last batch smaller than `batch_size`.
    pub drop_last: bool,
    /// Keep only samples whose index entry passes (reads only the index).
    pub filter: Option<EntryFilter>,
}

impl std::fmt::Debug for LoaderOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoaderOptions")
            .field("batch_size", &self.batch_size)
            .field("seed", &self.seed)
            .field("epoch", &self.epoch)
            .field("rank", &self.rank)
            .field("world", &self.world)
            .field("drop_last", &self.drop_last)
            .field("filter", &self.filter.is_some())
            .finish()
    }
}

impl Default for LoaderOptions {
    fn default() -> Self {
        LoaderOptions {
            batch_size: 32,
            seed: None,
            epoch: 0,
            rank: 0,
            world: 1,
            drop_last: false,
            filter: None,
        }
    }
}

impl LoaderOptions {
    /// Options with this batch size.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    /// Options with a seeded shuffle for `epoch`.
    pub fn shuffle(mut self, seed: u64, epoch: u64) -> Self {
        self.seed = Some(seed);
        self.epoch = epoch;
        self
    }

    /// Options for worker `rank` of `world`.
    pub fn shard(mut self, rank: usize, world: usize) -> Self {
        self.rank = rank;
        self.world = world.max(1);
        self
    }

    /// Options that drop a short last batch.
    pub fn drop_last(mut self, on: bool) -> Self {
        self.drop_last = on;
        self
    }

    /// Options with a filter on index entries (e.g. only 224×224 images).
    pub fn filter(mut self, f: impl Fn(&IndexEntry) -> bool + Send + Sync + 'static) -> Self {
        self.filter = Some(Box::new(f));
        self
    }
}

/// One batch: sample indices and their decoded bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The samples' indices in the file.
    pub indices: Vec<usize>,
    /// Their decoded bytes, in the same order.
    pub samples: Vec<Vec<u8>>,
}

/// Iterates over batches of decoded samples.
#[derive(Debug)]
pub struct Loader<'r> {
    reader: &'r Reader,
    order: Vec<usize>,
    pos: usize,
    batch_size: usize,
    drop_last: bool,
}

/// The sample indices `opts` selects, in the order the loader serves them:
/// filtered, shuffled (Fisher–Yates with SplitMix64 on `seed ^ epoch`), then
/// every `world`-th from `rank`.
pub fn sample_order(reader: &Reader, opts: &LoaderOptions) -> Vec<usize> {
    let mut order: Vec<usize> = (0..reader.len())
        .filter(|&i| match (&opts.filter, reader.index().get(i)) {
            (Some(f), Some(e)) => f(&e),
            _ => true,
        })
        .collect();
    if let Some(seed) = opts.seed {
        let mut rng = dataformats_core::rng::SplitMix64::new(
            seed ^ opts.epoch.wrapping_mul(0xD6E8_FEB8_6659_FD93),
        );
        for i in (1..order.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            order.swap(i, j);
        }
    }
    let world = opts.world.max(1);
    order
        .into_iter()
        .enumerate()
        .filter(|(k, _)| k % world == opts.rank % world)
        .map(|(_, i)| i)
        .collect()
}

impl<'r> Loader<'r> {
    /// A loader over `reader` with `opts`.
    pub fn new(reader: &'r Reader, opts: &LoaderOptions) -> Self {
        Loader {
            order: sample_order(reader, opts),
            reader,
            pos: 0,
            batch_size: opts.batch_size.max(1),
            drop_last: opts.drop_last,
        }
    }

    /// Number of samples this loader serves.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True when the loader serves nothing.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    fn decode(&self, indices: &[usize]) -> Result<Vec<Vec<u8>>> {
        #[cfg(feature = "rayon")]
        {
            use rayon::prelude::*;
            indices
                .par_iter()
                .map(|&i| self.reader.read_sample(i).map(|c| c.into_owned()))
                .collect()
        }
        #[cfg(not(feature = "rayon"))]
        {
            indices
                .iter()
                .map(|&i| self.reader.read_sample(i).map(|c| c.into_owned()))
                .collect()
        }
    }
}

impl Iterator for Loader<'_> {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.order.get(self.pos..)?;
        if rest.is_empty() || (self.drop_last && rest.len() < self.batch_size) {
            return None;
        }
        let take = rest.len().min(self.batch_size);
        let indices: Vec<usize> = rest.get(..take).unwrap_or_default().to_vec();
        self.pos += take;
        Some(
            self.decode(&indices)
                .map(|samples| Batch { indices, samples }),
        )
    }
}
