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
        // Beyond the file's limits the whole read gives the reader's own
        // error (or succeeds where it can); checked before the pieces are
        // planned, whose number grows with the records a file claims.
        let Some(total) = len.checked_mul(width) else {
            return whole();
        };
        let Ok(size) = self.limits().check_alloc("column", total) else {
            return whole();
        };
        let threads = match threads {
            0 => crate::core::parallel::threads_for(total, 0),
            n => crate::dataset::workers(n),
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
        if self
            .memory()
            .and_then(|m| crate::core::source::range_within(m, head_bytes))
            .is_some()
        {
            return whole();
        }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use arrow_schema::{DataType, Field, Schema, SchemaRef};

    use crate::Format;
    use crate::dataset::{Dataset, Error};

    /// A file that claims `len` float64 records and refuses, as a reader
    /// does, any read beyond its limits; it counts the records asked of it.
    struct Claims {
        len: u64,
        asked: AtomicU64,
        reads: AtomicU64,
        schema: SchemaRef,
    }

    impl Dataset for Claims {
        fn format(&self) -> Format {
            Format::Mldf
        }
        fn version(&self) -> String {
            "test".into()
        }
        fn len(&self) -> u64 {
            self.len
        }
        fn validate_with(&self, _: &mut dyn crate::core::Progress) -> Result<(), Error> {
            Ok(())
        }
        fn schema(&self) -> SchemaRef {
            self.schema.clone()
        }
        fn limits(&self) -> crate::core::Limits {
            crate::core::Limits::fuzzing()
        }
        fn read_arrays(
            &self,
            _: &[usize],
            rows: std::ops::Range<u64>,
        ) -> Result<Vec<arrow_array::ArrayRef>, Error> {
            let n = rows.end.saturating_sub(rows.start);
            self.asked.fetch_add(n, Ordering::Relaxed);
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.limits()
                .check_alloc("values", n.saturating_mul(8))
                .map_err(Error::limit)?;
            let v = arrow_array::Float64Array::from(vec![1.5; usize::try_from(n).unwrap()]);
            Ok(vec![Arc::new(v)])
        }
    }

    fn claiming(len: u64) -> Claims {
        Claims {
            len,
            asked: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            schema: Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, false)])),
        }
    }

    #[test]
    fn a_column_beyond_the_limits_is_refused_before_it_is_planned() {
        // 2^60 records: planning its pieces alone would take more memory
        // than there is; the whole read is refused by the reader instead.
        let d = claiming(1 << 60);
        let e = (&d as &dyn Dataset).read_column(0, 2).unwrap_err();
        assert!(e.to_string().contains("limit"), "{e}");
        // One read: the whole column, refused.
        assert_eq!(d.reads.load(Ordering::Relaxed), 1);
        assert_eq!(d.asked.load(Ordering::Relaxed), 1 << 60);
    }

    #[test]
    fn a_column_within_the_limits_is_read_in_pieces() {
        let d = claiming(100_000);
        let a = (&d as &dyn Dataset).read_column(0, 3).unwrap();
        assert_eq!(a.len(), 100_000);
        assert_eq!(a.null_count(), 0);
        let v = a
            .as_any()
            .downcast_ref::<arrow_array::Float64Array>()
            .unwrap();
        assert!(v.values().iter().all(|&x| x == 1.5));
        // Every record was asked for once, in pieces (not whole as well).
        assert_eq!(d.asked.load(Ordering::Relaxed), 100_000);
        assert!(d.reads.load(Ordering::Relaxed) > 1);
    }
}
