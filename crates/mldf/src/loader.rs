//! Batches of samples for training code: sequential, random, or FFCV's
//! page-aware quasi-random order, sharded by rank.

use dataformats_core::parse;

use crate::error::{Error, ErrorKind, Result};
use crate::read::{Reader, Value};

/// The order samples are served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// File order.
    Sequential,
    /// A full shuffle (seeded).
    Random,
    /// FFCV's QUASI_RANDOM idea: the data pages are shuffled, and samples
    /// are shuffled only within windows of `pages` consecutive (shuffled)
    /// pages, so that a batch touches few pages.
    QuasiRandom {
        /// Pages per shuffle window.
        pages: usize,
    },
}

/// Loader settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoaderOptions {
    /// Samples per batch.
    pub batch_size: usize,
    /// Order.
    pub order: Order,
    /// Seed; epoch `e` uses `seed + e`.
    pub seed: u64,
    /// This process's rank and the number of ranks: rank r takes every
    /// `world`-th sample of the epoch's order, starting at r, and all ranks
    /// get the same count (the tail is dropped).
    pub shard: (usize, usize),
    /// Drop a last batch that is smaller than `batch_size`.
    pub drop_last: bool,
    /// Only these fields (all when empty).
    pub fields: Vec<String>,
}

impl Default for LoaderOptions {
    fn default() -> Self {
        LoaderOptions {
            batch_size: 64,
            order: Order::Sequential,
            seed: 0,
            shard: (0, 1),
            drop_last: false,
            fields: Vec::new(),
        }
    }
}

/// The page of the first stored value of each sample (`u64::MAX` for a
/// sample without allocations).
fn sample_pages(r: &Reader) -> Result<Vec<u64>> {
    let page = u64::from(r.header().page_size);
    let data_ptr = r.header().data_ptr;
    let mut out = Vec::with_capacity(usize::try_from(r.len()).unwrap_or(0).min(1 << 24));
    for i in 0..r.len() {
        let mut p = u64::MAX;
        for (j, f) in r.fields().iter().enumerate() {
            let Some(layout) = crate::parse::record(&f.ty) else {
                continue;
            };
            let (_, at) = r.record_at(i, j)?;
            let rec = r.record(i, j)?;
            let Some((ptr, _)) = parse::run(&rec, at, layout)?.data() else {
                continue;
            };
            if ptr >= data_ptr {
                p = (ptr - data_ptr) / page;
                break;
            }
        }
        out.push(p);
    }
    Ok(out)
}

/// The sample order of `epoch` for this rank.
pub fn epoch_order(r: &Reader, opts: &LoaderOptions, epoch: u64) -> Result<Vec<u64>> {
    let (rank, world) = opts.shard;
    if world == 0 || rank >= world {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("rank {rank} of {world}"),
        ));
    }
    let n = r.len();
    let mut rng = dataformats_core::rng::SplitMix64::new(opts.seed.wrapping_add(epoch));
    let mut order: Vec<u64> = (0..n).collect();
    match opts.order {
        Order::Sequential => {}
        Order::Random => rng.shuffle(&mut order),
        Order::QuasiRandom { pages } => {
            let pages_of = sample_pages(r)?;
            // Group samples by page, shuffle the groups, then shuffle within windows.
            let mut groups: Vec<(u64, Vec<u64>)> = Vec::new();
            for (i, &p) in pages_of.iter().enumerate() {
                match groups.last_mut() {
                    Some((q, v)) if *q == p => v.push(i as u64),
                    _ => groups.push((p, vec![i as u64])),
                }
            }
            rng.shuffle(&mut groups);
            order.clear();
            for window in groups.chunks(pages.max(1)) {
                let start = order.len();
                for (_, v) in window {
                    order.extend_from_slice(v);
                }
                rng.shuffle(order.get_mut(start..).unwrap_or_default());
            }
        }
    }
    let per_rank = order.len() / world;
    Ok(order
        .into_iter()
        .skip(rank)
        .step_by(world)
        .take(per_rank)
        .collect())
}

/// One sample of a batch: its index and its values (in the loader's field order).
pub type Sample = (u64, Vec<Value<'static>>);

/// An iterator of batches over one epoch.
#[derive(Debug)]
pub struct Loader<'r> {
    reader: &'r Reader,
    order: Vec<u64>,
    at: usize,
    fields: Vec<usize>,
    batch_size: usize,
    drop_last: bool,
}

impl<'r> Loader<'r> {
    /// The loader of `epoch`.
    pub fn new(reader: &'r Reader, opts: &LoaderOptions, epoch: u64) -> Result<Self> {
        if opts.batch_size == 0 {
            return Err(Error::new(ErrorKind::InvalidArgument, "batch size 0"));
        }
        let fields = if opts.fields.is_empty() {
            (0..reader.fields().len()).collect()
        } else {
            opts.fields
                .iter()
                .map(|n| {
                    reader.field_index(n).ok_or_else(|| {
                        Error::new(ErrorKind::InvalidArgument, format!("no field {n:?}"))
                    })
                })
                .collect::<Result<Vec<_>>>()?
        };
        Ok(Loader {
            reader,
            order: epoch_order(reader, opts, epoch)?,
            at: 0,
            fields,
            batch_size: opts.batch_size,
            drop_last: opts.drop_last,
        })
    }

    /// Field names, in the order of each sample's values.
    pub fn field_names(&self) -> Vec<&str> {
        self.fields
            .iter()
            .filter_map(|&j| self.reader.fields().get(j).map(|f| f.name.as_str()))
            .collect()
    }

    fn sample(&self, i: u64) -> Result<Sample> {
        let vals = self
            .fields
            .iter()
            .map(|&j| self.reader.value(i, j).map(Value::into_owned))
            .collect::<Result<Vec<_>>>()?;
        Ok((i, vals))
    }
}

impl Iterator for Loader<'_> {
    type Item = Result<Vec<Sample>>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.order.len() - self.at;
        if rest == 0 || (self.drop_last && rest < self.batch_size) {
            return None;
        }
        let ids = self
            .order
            .get(self.at..self.at + rest.min(self.batch_size))?
            .to_vec();
        self.at += ids.len();
        #[cfg(feature = "rayon")]
        {
            use rayon::prelude::*;
            Some(ids.par_iter().map(|&i| self.sample(i)).collect())
        }
        #[cfg(not(feature = "rayon"))]
        {
            Some(ids.iter().map(|&i| self.sample(i)).collect())
        }
    }
}
