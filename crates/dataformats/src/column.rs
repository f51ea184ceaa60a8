//! One column of every record as one array, decoded on every core: what
//! Python's `column_numpy` asks for.

use std::mem::MaybeUninit;
use std::ops::Range;

use arrow_array::ArrayRef;

use crate::dataset::{Dataset, Error};

/// Bytes of output each piece of a parallel column read aims at: the
/// decoded piece is still in the cache when it is copied to its place.
const PIECE_BYTES: u64 = 1 << 20;

/// Why a parallel read of a column stopped before the end.
enum Stop {
    /// A piece cannot be copied in place (it holds nulls): the column is
    /// read whole instead.
    Whole,
    /// A piece failed to read.
    Failed(Error),
}

impl dyn Dataset + '_ {
    /// Column `column` (an index into [`Dataset::schema`]) of every record
    /// as one array of exactly the schema's type, decoded on `threads`
    /// threads (0: every core, once the column holds a few megabytes).
    ///
    /// A column of fixed-width values without nulls, stored where decoding
    /// costs (compressed blocks and chunks, a file read by ranges), is read
    /// in pieces cut where the file's stored units start, each decoded on a
    /// worker thread and copied to its place in the one output buffer. A
    /// column the file holds as plain values in memory stays the view of
    /// the file that [`read_arrays`](Dataset::read_arrays) gives; every
    /// other column (text, lists, booleans, values with nulls) is read with
    /// one `read_arrays` call. The result is the same array either way.
    pub fn read_column(&self, column: usize, threads: usize) -> Result<ArrayRef, Error> {
        let len = self.len();
        let whole = || one(self.read_arrays(&[column], 0..len)?);
        let schema = self.schema();
        let Some(field) = schema.fields().get(column) else {
            return Err(Error::InvalidArgument {
                format: Some(self.format()),
                message: format!("no column {column}; the file has {}", schema.fields().len()),
            });
        };
        let dt = field.data_type().clone();
        let width = match crate::typed::fixed_width(&dt) {
            Some(w @ 1..) if !holds_bits(&dt) => w as u64,
            _ => return whole(),
        };
        let Some(total) = len.checked_mul(width) else {
            return whole();
        };
        let threads = match threads {
            0 => crate::core::parallel::threads_for(total, 0),
            n => n,
        };
        if threads < 2 {
            return whole();
        }
        let rows = (PIECE_BYTES / width)
            .min(len.div_ceil(threads as u64 * 4))
            .max(1);
        let pieces = crate::convert::Batches::new(schema.clone(), 0..len, rows, None)
            .at_units_of(self)
            .ranges();
        let Some(first) = pieces.first().cloned().filter(|_| pieces.len() > 1) else {
            return whole();
        };
        // The first piece tells whether the values are a view of the file
        // (then the whole column is one read, still a view when the file
        // holds it back to back) or decoded (then the rest goes to the
        // threads).
        let head = one(self.read_arrays(&[column], first.clone())?)?;
        let Some(head_bytes) = crate::typed::fixed_bytes(head.as_ref()) else {
            return whole();
        };
        if self.memory().is_some_and(|m| inside(head_bytes, m)) {
            return whole();
        }
        // Refused (beyond the file's limits, or no memory): the whole read
        // gives the reader's own error, or succeeds where it can.
        let Ok(size) = self.limits().check_alloc("column", total) else {
            return whole();
        };
        // Reserved, not written: the threads fault its pages in as they
        // fill them (in 2 MiB pages where the kernel allows).
        let mut out: Vec<u8> = Vec::new();
        if !crate::core::buffers::reserve_large(&mut out, size) {
            return whole();
        }
        let mut places = Vec::with_capacity(pieces.len());
        let mut rest = out.spare_capacity_mut().get_mut(..size).unwrap_or_default();
        for rows in &pieces {
            let n = usize::try_from((rows.end - rows.start) * width).unwrap_or(usize::MAX);
            let Some((place, tail)) = rest.split_at_mut_checked(n) else {
                return whole();
            };
            places.push((rows.clone(), place));
            rest = tail;
        }
        if !rest.is_empty() {
            return whole();
        }
        let mut places = places.into_iter();
        match places.next() {
            Some((_, place)) if place.len() == head_bytes.len() => {
                fill(place, head_bytes);
            }
            _ => return whole(),
        }
        drop(head);
        let done = crate::core::parallel::ordered(
            threads,
            || Ok(places.next()),
            |(rows, place): (Range<u64>, &mut [MaybeUninit<u8>])| {
                let a = one(self.read_arrays(&[column], rows)?)?;
                match crate::typed::fixed_bytes(a.as_ref()) {
                    Some(b) if b.len() == place.len() => {
                        fill(place, b);
                        Ok(())
                    }
                    _ => Err(Stop::Whole),
                }
            },
            |r: Result<(), Stop>| r,
        );
        match done {
            Ok(()) => {}
            Err(Stop::Whole) => return whole(),
            Err(Stop::Failed(e)) => return Err(e),
        }
        // SAFETY: the places cut the first `size` bytes of `out`'s spare
        // capacity into consecutive slices with none left over (checked
        // above), and every place was written in full (each piece's values
        // had exactly its place's length), or the function returned above.
        unsafe { out.set_len(size) };
        crate::typed::fixed_array(
            &dt,
            arrow_buffer::Buffer::from_vec(out),
            usize::try_from(len).unwrap_or(usize::MAX),
            None,
        )
    }
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Failed(e)
    }
}

/// The one array of a one-column read.
fn one(mut arrays: Vec<ArrayRef>) -> Result<ArrayRef, Error> {
    match (arrays.pop(), arrays.is_empty()) {
        (Some(a), true) => Ok(a),
        _ => Err(Error::invalid(
            "a read of one column gave another number of arrays",
        )),
    }
}

/// Whether `dt` holds booleans (bits in Arrow, not bytes) at any level.
fn holds_bits(dt: &arrow_schema::DataType) -> bool {
    match dt {
        arrow_schema::DataType::Boolean => true,
        arrow_schema::DataType::FixedSizeList(f, _) => holds_bits(f.data_type()),
        _ => false,
    }
}

/// Writes `src` into `dst` (of the same length).
fn fill(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        d.write(s);
    }
}

/// Whether `part` lies within `all` in memory.
fn inside(part: &[u8], all: &[u8]) -> bool {
    let (p, a) = (part.as_ptr() as usize, all.as_ptr() as usize);
    p >= a && p.saturating_add(part.len()) <= a.saturating_add(all.len())
}
