//! Whether two datasets hold the same records, whatever their formats: what
//! a conversion is checked with.

use std::path::Path;

use crate::Format;
use crate::dataset::{Dataset, Value};
use crate::error::Error;

/// Where two datasets first differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Difference {
    /// They hold different numbers of records.
    Len {
        /// The first dataset's count.
        a: u64,
        /// The second dataset's count.
        b: u64,
    },
    /// Record `index` differs (in some column).
    Record {
        /// The record's index.
        index: u64,
        /// The first column in which it differs.
        column: usize,
    },
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Len { a, b } => write!(f, "{b} records, the original has {a}"),
            Difference::Record { index, column } => {
                write!(
                    f,
                    "record {index} differs from the original in column {column}"
                )
            }
        }
    }
}

/// `a` and `b` as equal values: exact, except that a NaN equals a NaN (so a
/// file equals its own copy). Lists compare element by element.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y))
        }
        _ => a == b,
    }
}

/// Records to compare per read (bounds memory whatever the datasets' size).
const STEP: u64 = 4096;

/// The first place where `a` and `b` differ, or `None` when they hold the
/// same records with the same values (see [`same_value`]); columns compare
/// by position, so their names may differ. Reads both in steps of a few
/// thousand records.
pub fn first_difference(a: &dyn Dataset, b: &dyn Dataset) -> Result<Option<Difference>, Error> {
    if a.len() != b.len() {
        return Ok(Some(Difference::Len {
            a: a.len(),
            b: b.len(),
        }));
    }
    let mut i = 0;
    while i < a.len() {
        let stop = a.len().min(i + STEP);
        let (ra, rb) = (a.records(i..stop)?, b.records(i..stop)?);
        for (k, (x, y)) in ra.iter().zip(&rb).enumerate() {
            let column = if x.len() == y.len() {
                x.iter().zip(y).position(|(x, y)| !same_value(x, y))
            } else {
                Some(x.len().min(y.len()))
            };
            if let Some(column) = column {
                return Ok(Some(Difference::Record {
                    index: i + k as u64,
                    column,
                }));
            }
        }
        i = stop;
    }
    Ok(None)
}

/// [`first_difference`] of the datasets at `a` and `b` (any format
/// [`open`](crate::open) reads).
pub fn first_difference_of_files(a: &Path, b: &Path) -> Result<Option<Difference>, Error> {
    let (a, b) = (crate::open(a)?, crate::open(b)?);
    first_difference(a.as_ref(), b.as_ref())
}

/// What [`check_conversion`] found in a conversion's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Checked {
    /// The output's format.
    pub format: Format,
    /// Its records.
    pub records: u64,
    /// Its columns.
    pub columns: usize,
    /// A different record count from the input's ([`Difference::Len`]); never
    /// set across CNTK, where one sequence is one record and becomes one
    /// record per sample elsewhere.
    pub count: Option<Difference>,
}

/// Checks `output`, made from `input` by a conversion: opens it, validates
/// every byte of it, and compares its record count with the input's.
pub fn check_conversion(input: &Path, output: &Path) -> Result<Checked, Error> {
    let src = crate::open(input)?;
    let out = crate::open(output)?;
    out.validate()?;
    let cntk = src.format() == Format::Cntk || out.format() == Format::Cntk;
    Ok(Checked {
        format: out.format(),
        records: out.len(),
        columns: out.columns().len(),
        count: (!cntk && out.len() != src.len()).then_some(Difference::Len {
            a: src.len(),
            b: out.len(),
        }),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;

    use arrow_array::{Float64Array, Int32Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};

    use crate::BatchIter;
    use crate::convert::{ConvertOptions, Report, Target, write};

    /// An MLDF file of `xs` (int) and `fs` (float) at `path`, opened.
    fn dataset(path: &std::path::Path, xs: &[i32], fs: &[f64]) -> Box<dyn Dataset> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int32, false),
            Field::new("f", DataType::Float64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int32Array::from(xs.to_vec())),
                Arc::new(Float64Array::from(fs.to_vec())),
            ],
        )
        .unwrap();
        let mut s = BatchIter::from_batches(schema, vec![batch]);
        let opts = ConvertOptions::default();
        write(
            Target::Mldf,
            &mut s,
            path,
            &opts,
            &mut Report::default(),
            &mut |_| {},
        )
        .unwrap();
        crate::open(path).unwrap()
    }

    #[test]
    fn differences_are_found_where_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let xs: Vec<i32> = (0..10_000).collect();
        let fs: Vec<f64> = (0..10_000)
            .map(|i| if i % 7 == 0 { f64::NAN } else { i as f64 })
            .collect();
        let a = dataset(&p("a.mldf"), &xs, &fs);
        let same = dataset(&p("same.mldf"), &xs, &fs);
        assert_eq!(first_difference(a.as_ref(), same.as_ref()).unwrap(), None);

        let mut fs2 = fs.clone();
        fs2[9000] = -1.0;
        let b = dataset(&p("b.mldf"), &xs, &fs2);
        assert_eq!(
            first_difference(a.as_ref(), b.as_ref()).unwrap(),
            Some(Difference::Record {
                index: 9000,
                column: 1
            })
        );
        let c = dataset(&p("c.mldf"), &xs[..5], &fs[..5]);
        let d = first_difference(a.as_ref(), c.as_ref()).unwrap();
        assert_eq!(d, Some(Difference::Len { a: 10_000, b: 5 }));
        assert_eq!(d.unwrap().to_string(), "5 records, the original has 10000");
    }

    #[test]
    fn values_compare_exactly_but_nan_equals_nan() {
        assert!(same_value(&Value::Float(f64::NAN), &Value::Float(f64::NAN)));
        assert!(!same_value(&Value::Float(0.5), &Value::Float(f64::NAN)));
        assert!(!same_value(&Value::Int(1), &Value::UInt(1)));
        let l = |v: f64| Value::List(vec![Value::Int(3), Value::Float(v)]);
        assert!(same_value(&l(f64::NAN), &l(f64::NAN)));
        assert!(!same_value(&l(1.0), &l(2.0)));
        assert!(!same_value(&l(1.0), &Value::List(vec![Value::Int(3)])));
    }

    #[test]
    fn conversions_are_checked_from_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let xs: Vec<i32> = (0..300).collect();
        let fs: Vec<f64> = xs.iter().map(|&x| f64::from(x) / 4.0).collect();
        dataset(&p("a.mldf"), &xs, &fs);
        crate::convert::convert(&p("a.mldf"), &p("a.idv"), &ConvertOptions::default()).unwrap();
        let c = check_conversion(&p("a.mldf"), &p("a.idv")).unwrap();
        assert_eq!(
            (c.format, c.records, c.columns, c.count),
            (Format::Idv, 300, 2, None)
        );
        assert_eq!(
            first_difference_of_files(&p("a.mldf"), &p("a.idv")).unwrap(),
            None
        );

        dataset(&p("short.mldf"), &xs[..7], &fs[..7]);
        let c = check_conversion(&p("a.mldf"), &p("short.mldf")).unwrap();
        assert_eq!(c.count, Some(Difference::Len { a: 300, b: 7 }));
        assert_eq!(
            first_difference_of_files(&p("a.mldf"), &p("short.mldf")).unwrap(),
            Some(Difference::Len { a: 300, b: 7 })
        );

        // A damaged output does not pass.
        let mut bytes = std::fs::read(p("a.idv")).unwrap();
        let n = bytes.len();
        bytes.truncate(n - 9);
        std::fs::write(p("cut.idv"), bytes).unwrap();
        assert!(check_conversion(&p("a.mldf"), &p("cut.idv")).is_err());
        assert!(check_conversion(&p("missing.mldf"), &p("a.idv")).is_err());
    }
}
