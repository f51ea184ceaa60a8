//! Comparing two MLDF files: header, schema and (optionally) content.

use crate::format::Field;
use crate::read::{Reader, Value};
use crate::render;

/// One difference between two files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// A header field differs (name, left, right).
    Header(&'static str, String, String),
    /// A field exists on one side only (name, on the left?).
    FieldOnlyIn(String, bool),
    /// A field exists on both sides with another type, nullability or position.
    FieldDiffers(String, String, String),
    /// A value differs (sample, field, left, right; as sidecar JSON).
    Value(u64, String, String, String),
    /// More value differences were found than listed.
    MoreValues(u64),
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Header(n, a, b) => write!(f, "header {n}: {a} | {b}"),
            Difference::FieldOnlyIn(n, left) => {
                write!(
                    f,
                    "field {n:?} only in the {} file",
                    if *left { "first" } else { "second" }
                )
            }
            Difference::FieldDiffers(n, a, b) => write!(f, "field {n:?}: {a} | {b}"),
            Difference::Value(i, n, a, b) => write!(f, "sample {i} field {n:?}: {a} | {b}"),
            Difference::MoreValues(k) => write!(f, "... and {k} more differing value(s)"),
        }
    }
}

fn describe(f: &Field, pos: usize) -> String {
    format!(
        "#{pos} {}{} {}",
        f.ty.name(),
        if f.nullable { " nullable" } else { "" },
        render::arguments_json(&f.ty)
    )
}

/// What [`diff`] compares beyond the header and schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffOptions {
    /// Compare every value of the fields both files have.
    pub content: bool,
    /// List at most this many differing values.
    pub max_values: usize,
}

impl Default for DiffOptions {
    /// Header and schema only; with `content` set, up to 50 values listed.
    fn default() -> Self {
        DiffOptions {
            content: false,
            max_values: 50,
        }
    }
}

/// Differences between `a` and `b`: the header (version, flags, samples,
/// page size, layout), the schema, and with `opts.content` every value of
/// the fields both have (listing at most `opts.max_values`). Values compare
/// by their logical bytes: compression and layout do not count as content.
pub fn diff(a: &Reader, b: &Reader, opts: DiffOptions) -> crate::Result<Vec<Difference>> {
    let DiffOptions {
        content,
        max_values,
    } = opts;
    let (ha, hb) = (a.header(), b.header());
    let mut out = Vec::new();
    let mut h = |n: &'static str, x: String, y: String| {
        if x != y {
            out.push(Difference::Header(n, x, y));
        }
    };
    h(
        "version",
        format!("{}.{}", ha.version_major, ha.version_minor),
        format!("{}.{}", hb.version_major, hb.version_minor),
    );
    h(
        "flags",
        format!("0x{:x}", ha.flags),
        format!("0x{:x}", hb.flags),
    );
    h(
        "num_samples",
        ha.num_samples.to_string(),
        hb.num_samples.to_string(),
    );
    h(
        "page_size",
        ha.page_size.to_string(),
        hb.page_size.to_string(),
    );
    let layout = |h: &crate::Header| {
        if h.metadata_ptr < h.data_ptr {
            "A"
        } else {
            "B"
        }
    };
    h("layout", layout(ha).into(), layout(hb).into());
    for (i, f) in a.fields().iter().enumerate() {
        match b
            .fields()
            .iter()
            .enumerate()
            .find(|(_, g)| g.name == f.name)
        {
            None => out.push(Difference::FieldOnlyIn(f.name.clone(), true)),
            Some((k, g)) => {
                let (x, y) = (describe(f, i), describe(g, k));
                if x != y {
                    out.push(Difference::FieldDiffers(f.name.clone(), x, y));
                }
            }
        }
    }
    for g in b.fields() {
        if a.field_index(&g.name).is_none() {
            out.push(Difference::FieldOnlyIn(g.name.clone(), false));
        }
    }
    if content {
        let mut extra = 0u64;
        let n = ha.num_samples.min(hb.num_samples);
        for (j, f) in a.fields().iter().enumerate() {
            let Some((k, g)) = b
                .fields()
                .iter()
                .enumerate()
                .find(|(_, g)| g.name == f.name)
            else {
                continue;
            };
            for i in 0..n {
                let (x, y) = (a.value(i, j)?, b.value(i, k)?);
                if !same(&x, &y) {
                    if out
                        .iter()
                        .filter(|d| matches!(d, Difference::Value(..)))
                        .count()
                        < max_values
                    {
                        out.push(Difference::Value(
                            i,
                            f.name.clone(),
                            render::value_json(&f.ty, &x),
                            render::value_json(&g.ty, &y),
                        ));
                    } else {
                        extra += 1;
                    }
                }
            }
        }
        if extra > 0 {
            out.push(Difference::MoreValues(extra));
        }
    }
    Ok(out)
}

fn same(a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}
