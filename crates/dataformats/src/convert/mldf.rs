//! Typed batches into MLDF, and MLDF files made by it back into the typed
//! schema they came from.
//!
//! Each Arrow field becomes the MLDF field that holds it exactly (see
//! `docs/conversions.md`): Int64 → INT, Float64 → FLOAT, other numbers and
//! booleans → a scalar NDARRAY, fixed-size lists of numbers → NDARRAY of
//! their shape, text → TEXT_RAW (JSON text → JSON), bytes → BYTES,
//! dictionaries → TEXT_RAW of the entry, times → INT of their unit, lists
//! of numbers → BYTES of their little-endian items, anything else → JSON
//! text (lossless, [`crate::export::json_value`]). When the MLDF types alone
//! would not give the source schema back, the source's Arrow schema travels
//! in one more field, [`SCHEMA_FIELD`] (JSON, NULLABLE, set in the last
//! record only, so that its bytes come after every other value), and
//! conversions out of the file restore it.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{Change, ChangeKind, Report, all_bytes, value_bytes};
use crate::dataset::{BatchStream, Error};
use crate::mldf::{Dtype, Field as MField, FieldType as T, FieldValue, Writer, WriterOptions};

/// The MLDF field that carries the source's Arrow schema.
pub const SCHEMA_FIELD: &str = "dataformats.schema";

/// MLDF target settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MldfOptions {
    /// The MLDF writer's settings (layout, compression, checksum, pages).
    pub writer: WriterOptions,
    /// Add [`SCHEMA_FIELD`] when the MLDF types alone would not give the
    /// source schema back (default on).
    pub carry_schema: bool,
    /// JSON lines input: the MLDF fields to write, instead of types
    /// inferred from the lines ([`super::mldf_json`]).
    pub json_schema: Option<super::mldf_json::JsonSchema>,
}

impl Default for MldfOptions {
    fn default() -> Self {
        MldfOptions {
            writer: WriterOptions::default(),
            carry_schema: true,
            json_schema: None,
        }
    }
}

/// MLDF writer settings given for a whole conversion (the command line's
/// `--mldf-*` options), for [`MldfOptions::apply`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterFlags {
    /// Store every value as one zstd frame.
    pub compressed: bool,
    /// Store the data region's CRC-32.
    pub checksummed: bool,
    /// Start a sample's values on a new page when they would straddle one.
    pub page_packing: bool,
    /// The data region's page size.
    pub page_size: Option<u64>,
}

impl MldfOptions {
    /// Puts `flags` into the writer settings of every input: the typed
    /// sources' and a JSON lines schema's, where a flag given turns the
    /// setting on and a page size given replaces the schema's. A page size
    /// MLDF does not allow is refused.
    pub fn apply(&mut self, flags: WriterFlags) -> Result<(), Error> {
        let page = match flags.page_size {
            None => None,
            Some(p) => {
                crate::mldf::WriterOptions::check_page_size(p)
                    .map_err(|e| Error::invalid(e.to_string()))?;
                Some(u32::try_from(p).map_err(|_| Error::invalid(format!("page size {p}")))?)
            }
        };
        let schema = self.json_schema.as_mut().map(|s| &mut s.writer);
        for w in std::iter::once(&mut self.writer).chain(schema) {
            w.compressed |= flags.compressed;
            w.checksummed |= flags.checksummed;
            w.page_packing |= flags.page_packing;
            if let Some(p) = page {
                w.page_size = p;
            }
        }
        Ok(())
    }
}

/// How one Arrow field is stored in MLDF.
#[derive(Debug, Clone, PartialEq)]
enum Enc {
    Int,
    Float,
    /// A number or boolean: NDARRAY of shape [].
    Scalar(Dtype),
    /// A fixed-size list of numbers with non-null items: NDARRAY of `shape`.
    Tensor(Dtype, Vec<u64>),
    /// NDARRAY<bfloat16>: Float32 values narrowed exactly.
    Bf16(Vec<u64>),
    /// FixedSizeBinary(n): NDARRAY<uint8>[n].
    FixedBytes(i32),
    Text,
    Json,
    Bytes,
    /// Timestamp, Duration, Date64: INT of the unit.
    Time,
    /// Dictionary of text: TEXT_RAW of the entry.
    DictText,
    /// List of numbers with non-null items: BYTES of their little-endian items.
    ListRaw(usize),
    Image(T),
    Audio(T),
    Tokens(u32),
    /// Anything else: lossless JSON text.
    Nested,
}

fn dtype_of(dt: &DataType) -> Option<Dtype> {
    Some(match dt {
        DataType::Boolean => Dtype::Bool,
        DataType::UInt8 => Dtype::U8,
        DataType::Int8 => Dtype::I8,
        DataType::UInt16 => Dtype::U16,
        DataType::Int16 => Dtype::I16,
        DataType::UInt32 => Dtype::U32,
        DataType::Int32 => Dtype::I32,
        DataType::UInt64 => Dtype::U64,
        DataType::Int64 => Dtype::I64,
        DataType::Float16 => Dtype::F16,
        DataType::Float32 => Dtype::F32,
        DataType::Float64 => Dtype::F64,
        _ => return None,
    })
}

/// The shape of a fixed-size list field: the tensor extension's, else `[n]`.
fn shape_of(f: &Field, n: i32) -> Option<Vec<u64>> {
    let n = u64::try_from(n).ok()?;
    let md = f.metadata();
    if md.get(crate::typed::EXTENSION_NAME).map(String::as_str) == Some("arrow.fixed_shape_tensor")
    {
        let v: serde_json::Value =
            serde_json::from_str(md.get(crate::typed::EXTENSION_METADATA)?).ok()?;
        let shape: Vec<u64> = v
            .get("shape")?
            .as_array()?
            .iter()
            .map(serde_json::Value::as_u64)
            .collect::<Option<_>>()?;
        let prod = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
        return (prod == n && shape.len() <= 15).then_some(shape);
    }
    Some(vec![n])
}

fn mldf_type_name(f: &Field) -> Option<&str> {
    f.metadata().get(crate::typed::TYPE_KEY).map(String::as_str)
}

fn plan(f: &Field) -> Enc {
    let dt = f.data_type();
    let own = mldf_type_name(f).unwrap_or("");
    // MLDF's own types, as the MLDF view gives them.
    match dt {
        DataType::Struct(_) if own.starts_with("IMAGE_") => {
            let t = match own {
                "IMAGE_RAW" => Some(T::ImageRaw),
                "IMAGE_PNG" => Some(T::ImagePng),
                _ => own
                    .strip_prefix("IMAGE_JPEG<quality=")
                    .and_then(|q| q.strip_suffix('>'))
                    .and_then(|q| q.parse().ok())
                    .map(|quality| T::ImageJpeg { quality }),
            };
            if let Some(t) = t.filter(|_| dt == &crate::adapters::mldf::image_type()) {
                return Enc::Image(t);
            }
        }
        DataType::Struct(_) if own.starts_with("AUDIO_") => {
            let t = match own {
                "AUDIO_COMPRESSED" => Some(T::AudioCompressed),
                "AUDIO_WAVEFORM<float>" => Some(T::AudioWaveform { float: true }),
                "AUDIO_WAVEFORM<int>" => Some(T::AudioWaveform { float: false }),
                _ => None,
            };
            if let Some(t) = t.filter(|_| dt == &crate::adapters::mldf::audio_type()) {
                return Enc::Audio(t);
            }
        }
        DataType::List(item) if *item.data_type() == DataType::Int32 && !item.is_nullable() => {
            if let Some(v) = own
                .strip_prefix("TEXT_TOKENIZED<vocab=")
                .and_then(|q| q.strip_suffix('>'))
                .and_then(|q| q.parse().ok())
            {
                return Enc::Tokens(v);
            }
        }
        _ => {}
    }
    match dt {
        DataType::Int64 => Enc::Int,
        DataType::Float64 => Enc::Float,
        DataType::Float32 if own == "NDARRAY<bfloat16>[]" => Enc::Bf16(vec![]),
        d if dtype_of(d).is_some() => Enc::Scalar(dtype_of(d).unwrap_or(Dtype::U8)),
        DataType::FixedSizeList(item, n) if !item.is_nullable() || *n > 0 => {
            match (dtype_of(item.data_type()), shape_of(f, *n)) {
                (Some(Dtype::F32), Some(shape)) if own.starts_with("NDARRAY<bfloat16>") => {
                    Enc::Bf16(shape)
                }
                (Some(d), Some(shape)) => Enc::Tensor(d, shape),
                _ => Enc::Nested,
            }
        }
        DataType::FixedSizeBinary(n) if *n >= 0 => Enc::FixedBytes(*n),
        DataType::Utf8 => {
            let json = f
                .metadata()
                .get(crate::typed::EXTENSION_NAME)
                .map(String::as_str)
                == Some("arrow.json");
            if json { Enc::Json } else { Enc::Text }
        }
        DataType::Binary => Enc::Bytes,
        DataType::Timestamp(..) | DataType::Duration(_) | DataType::Date64 => Enc::Time,
        DataType::Dictionary(k, v) if k.is_dictionary_key_type() && **v == DataType::Utf8 => {
            Enc::DictText
        }
        DataType::List(item) if !item.is_nullable() => match dtype_of(item.data_type()) {
            Some(d) if d != Dtype::Bool => Enc::ListRaw(d.size() as usize),
            _ => Enc::Nested,
        },
        _ => Enc::Nested,
    }
}

impl Enc {
    fn field_type(&self) -> T {
        match self {
            Enc::Int | Enc::Time => T::Int,
            Enc::Float => T::Float,
            Enc::Scalar(d) => T::NdArray {
                dtype: *d,
                shape: vec![],
            },
            Enc::Tensor(d, s) => T::NdArray {
                dtype: *d,
                shape: s.clone(),
            },
            Enc::Bf16(s) => T::NdArray {
                dtype: Dtype::BF16,
                shape: s.clone(),
            },
            Enc::FixedBytes(n) => T::NdArray {
                dtype: Dtype::U8,
                shape: vec![u64::try_from(*n).unwrap_or(0)],
            },
            Enc::Text | Enc::DictText => T::TextRaw,
            Enc::Json | Enc::Nested => T::Json,
            Enc::Bytes | Enc::ListRaw(_) => T::Bytes,
            Enc::Image(t) | Enc::Audio(t) => t.clone(),
            Enc::Tokens(v) => T::TextTokenized { vocab_size: *v },
        }
    }
}

/// `v` with the keys of every object in order: the same schema gives the
/// same bytes (Arrow's field metadata is a hash map, iterated in any order).
fn canonical(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        J::Object(m) => {
            let mut kv: Vec<(String, J)> = m.into_iter().collect();
            kv.sort_by(|a, b| a.0.cmp(&b.0));
            J::Object(kv.into_iter().map(|(k, v)| (k, canonical(v))).collect())
        }
        J::Array(a) => J::Array(a.into_iter().map(canonical).collect()),
        v => v,
    }
}

/// The carried schema's JSON: `{"arrow_schema": <arrow-rs serde form>,
/// "dictionaries": {field: [entries]}}`, keys in order.
fn carrier_json(schema: &Schema, dicts: &[(String, Vec<String>)]) -> Result<String, Error> {
    let s = serde_json::to_value(schema).map_err(|e| Error::invalid(format!("schema: {e}")))?;
    let s = canonical(s);
    let d: serde_json::Map<String, serde_json::Value> = dicts
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::json!(v)))
        .collect();
    Ok(
        serde_json::json!({"dataformats_schema": 1, "arrow_schema": s, "dictionaries": d})
            .to_string(),
    )
}

fn has_dictionary(dt: &DataType) -> bool {
    match dt {
        DataType::Dictionary(..) => true,
        DataType::List(f) | DataType::FixedSizeList(f, _) => has_dictionary(f.data_type()),
        _ => false,
    }
}

/// The columns of `schema` MLDF has a restorable form for (ascending).
/// The others (large offsets, decimals, maps, unions, ...) are noted in
/// `report` as dropped, or refused without `lossy`.
pub(super) fn columns_used(
    schema: &arrow_schema::Schema,
    report: &mut Report,
    lossy: bool,
) -> Result<Vec<usize>, Error> {
    let mut keep = Vec::with_capacity(schema.fields().len());
    for (k, f) in schema.fields().iter().enumerate() {
        let native = matches!(plan(f), Enc::Image(_) | Enc::Audio(_));
        if native || super::json::supported(f.data_type()) {
            keep.push(k);
        } else {
            report.column(
                ChangeKind::Dropped,
                f.name(),
                &format!("MLDF has no exact form for {}", f.data_type()),
            );
        }
    }
    report.check(lossy)?;
    Ok(keep)
}

/// Writes every batch of `input` to the MLDF file `output`, the records
/// staged and encoded (checked, compressed) on `threads` threads (0:
/// every core) and written in order.
pub(crate) fn write(
    input: &mut dyn BatchStream,
    output: &std::path::Path,
    opts: &MldfOptions,
    lossy: bool,
    threads: usize,
    report: &mut Report,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    let full = input.schema();
    let keep = columns_used(&full, report, lossy)?;
    let schema = Arc::new(full.project(&keep)?);
    let mut plans = Vec::with_capacity(schema.fields().len());
    let mut fields = Vec::with_capacity(schema.fields().len() + 1);
    let mut same = schema.metadata().is_empty();
    for f in schema.fields() {
        if f.name().is_empty() || f.name().len() > 63 || f.name() == SCHEMA_FIELD {
            return Err(Error::invalid(format!(
                "field {:?}: MLDF names are 1 to 63 bytes (and {SCHEMA_FIELD:?} is reserved)",
                f.name()
            )));
        }
        let enc = plan(f);
        let mf = MField::new(f.name().clone(), enc.field_type()).with_nullable(f.is_nullable());
        // Does the MLDF view of this field give the source field back?
        same &= crate::adapters::mldf::arrow_field(&mf)
            .map(|back| back == **f)
            .unwrap_or(false);
        plans.push(enc);
        fields.push(mf);
    }
    // Records without fields: the carrier is the one field that holds them.
    let carry = opts.carry_schema && (!same || schema.fields().is_empty());
    if carry {
        fields.push(MField::new(SCHEMA_FIELD, T::Json).with_nullable(true));
    }
    let mut w = Writer::create(output, fields, opts.writer).map_err(Error::Mldf)?;
    let encoder = w.encoder();
    // Records go to the workers in jobs of a batch's rows. With a carrier,
    // the last record holds it (after every other value in the data
    // region, so the values of each field in the records before stay back
    // to back): each batch's last row waits for the next job, or the last
    // one, which carries the text.
    let mut text = String::new();
    let mut held: Option<RecordBatch> = None;
    let mut next_record = 0u64;
    let mut ended = false;
    let mut next = || -> Result<Option<Job>, Error> {
        while !ended {
            let Some(b) = input.next_batch() else {
                ended = true;
                return Ok(held.take().map(|h| Job {
                    first: next_record,
                    parts: vec![(h.num_rows() - 1..h.num_rows(), h)],
                    carried: Some(std::mem::take(&mut text)),
                }));
            };
            let b = b?.project(&keep)?;
            if carry && next_record == 0 && held.is_none() {
                let mut dicts = Vec::new();
                for (f, c) in schema.fields().iter().zip(b.columns()) {
                    if has_dictionary(f.data_type())
                        && let Some(d) = crate::typed::dictionary_entries(c.as_ref())
                    {
                        dicts.push((f.name().clone(), d));
                    }
                }
                text = carrier_json(&schema, &dicts)?;
            }
            if b.num_rows() == 0 {
                continue;
            }
            let mut parts = Vec::with_capacity(2);
            if let Some(h) = held.take() {
                parts.push((h.num_rows() - 1..h.num_rows(), h));
            }
            let now = if carry {
                b.num_rows() - 1
            } else {
                b.num_rows()
            };
            parts.push((0..now, b.clone()));
            if carry {
                held = Some(b);
            }
            let job = Job {
                first: next_record,
                parts,
                carried: None,
            };
            next_record += job.records();
            return Ok(Some(job));
        }
        Ok(None)
    };
    let encode = |job: Job| encode_job(&job, &plans, &schema, &encoder, carry, lossy);
    let mut written = 0u64;
    let threads = crate::core::parallel::threads(threads);
    crate::core::parallel::ordered(threads, &mut next, encode, |done| {
        let done = done?;
        for c in &done.report.changes {
            report.change_n(c.kind, &c.field, c.first_record, c.count, &c.detail);
        }
        w.add_encoded(&done.samples).map_err(Error::Mldf)?;
        written += done.samples.len() as u64;
        progress(written);
        Ok(())
    })?;
    if carry && written == 0 {
        report.note(Change {
            kind: ChangeKind::SchemaNotCarried,
            field: String::new(),
            first_record: 0,
            count: 0,
            detail: "the source has no records, and MLDF can carry the source schema only in a \
                     record: the fields keep MLDF's own types"
                .into(),
        });
        // No value changed: reported, never refused.
    }
    w.finish().map_err(Error::Mldf)?;
    report.records = written;
    Ok(())
}

/// Records for one worker: rows of batches, the first numbered `first`;
/// `carried` is the carrier's text, for the last record of the file.
struct Job {
    first: u64,
    parts: Vec<(std::ops::Range<usize>, RecordBatch)>,
    carried: Option<String>,
}

impl Job {
    fn records(&self) -> u64 {
        self.parts.iter().map(|(r, _)| r.len() as u64).sum()
    }
}

/// A job's records as MLDF samples, with the changes made to them.
struct Encoded {
    samples: crate::mldf::Encoded,
    report: Report,
}

/// Stages and encodes (checks, compresses) the records of `job`.
fn encode_job(
    job: &Job,
    plans: &[Enc],
    schema: &Schema,
    encoder: &crate::mldf::SampleEncoder,
    carry: bool,
    lossy: bool,
) -> Result<Encoded, Error> {
    let mut out = Encoded {
        samples: crate::mldf::Encoded::default(),
        report: Report::default(),
    };
    let mut scratch: Vec<Vec<u8>> = vec![Vec::new(); plans.len()];
    let mut jsons: Vec<String> = vec![String::new(); plans.len()];
    let mut record = job.first;
    let last = job.first + job.records();
    for (rows, b) in &job.parts {
        for i in rows.clone() {
            // First pass: owned bytes and texts this record needs.
            let cells = plans
                .iter()
                .zip(b.columns())
                .zip(schema.fields())
                .zip(scratch.iter_mut().zip(jsons.iter_mut()));
            for (((enc, c), f), (bytes, json)) in cells {
                if c.is_null(i) {
                    if !f.is_nullable() {
                        return Err(Error::Data {
                            format: None,
                            message: format!(
                                "record {record}, field {:?}: a null in a field that is not nullable",
                                f.name()
                            ),
                        });
                    }
                    continue;
                }
                let cell = Cell {
                    name: f.name(),
                    record,
                    lossy,
                };
                stage(enc, c.as_ref(), i, bytes, json, &mut out.report, &cell)?;
            }
            let mut vals: Vec<FieldValue<'_>> = Vec::with_capacity(plans.len() + 1);
            let cells = plans
                .iter()
                .zip(b.columns())
                .zip(scratch.iter().zip(jsons.iter()));
            for ((enc, c), (bytes, json)) in cells {
                vals.push(if c.is_null(i) {
                    FieldValue::Missing
                } else {
                    value(enc, c.as_ref(), i, bytes, json)
                });
            }
            if carry {
                let carried = job.carried.as_deref().filter(|_| record + 1 == last);
                vals.push(carried.map_or(FieldValue::Missing, FieldValue::Json));
            }
            encoder
                .encode(record, &vals, &mut out.samples)
                .map_err(|e| Error::Data {
                    format: Some(crate::Format::Mldf),
                    message: format!("record {record}: {e}"),
                })?;
            record += 1;
        }
    }
    Ok(out)
}

/// Where a value is: its field, its record, and whether changes are allowed.
struct Cell<'a> {
    name: &'a str,
    record: u64,
    lossy: bool,
}

/// Prepares the owned bytes or text that value `i` of `c` needs.
fn stage(
    enc: &Enc,
    c: &dyn Array,
    i: usize,
    bytes: &mut Vec<u8>,
    json: &mut String,
    report: &mut Report,
    cell: &Cell<'_>,
) -> Result<(), Error> {
    let (name, record, lossy) = (cell.name, cell.record, cell.lossy);
    bytes.clear();
    json.clear();
    match enc {
        Enc::Scalar(Dtype::Bool) => bytes.push(u8::from(c.as_boolean().value(i))),
        Enc::Scalar(_) => bytes.extend_from_slice(value_bytes(c, i)),
        Enc::Tensor(..) | Enc::Bf16(_) => {
            // A bfloat16 scalar is a plain Float32 column.
            let v = match c.as_fixed_size_list_opt() {
                Some(l) => l.value(i),
                None => c.slice(i, 1),
            };
            if v.null_count() > 0 {
                return Err(Error::Data {
                    format: None,
                    message: format!(
                        "record {record}, field {name:?}: a null inside a tensor (NDARRAY has none)"
                    ),
                });
            }
            match (enc, v.data_type()) {
                (Enc::Bf16(_), _) => {
                    for x in v.as_primitive::<arrow_array::types::Float32Type>().values() {
                        let b = x.to_bits();
                        let r = half::bf16::from_f32(*x);
                        if r.to_f32().to_bits() != b && !x.is_nan() {
                            report.change(
                                ChangeKind::Rounded,
                                name,
                                record,
                                "float32 rounded to bfloat16 (nearest, ties to even)",
                            );
                            report.check(lossy)?;
                        }
                        bytes.extend_from_slice(&r.to_bits().to_le_bytes());
                    }
                }
                (_, DataType::Boolean) => {
                    bytes.extend(v.as_boolean().iter().map(|b| u8::from(b.unwrap_or(false))))
                }
                _ => bytes.extend_from_slice(all_bytes(v.as_ref())),
            }
        }
        Enc::ListRaw(_) => {
            let v = c.as_list::<i32>().value(i);
            bytes.extend_from_slice(all_bytes(v.as_ref()));
        }
        Enc::Time => {
            let x = crate::typed::time_count(c, i).unwrap_or_default();
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        Enc::DictText => {
            let d = c.as_any_dictionary();
            if let Some(k) = crate::typed::dict_key(c, i) {
                let s = d.values().as_string_opt::<i32>();
                if let Some(s) = s.filter(|s| k < s.len()) {
                    json.push_str(s.value(k));
                }
            }
        }
        Enc::Nested => crate::typed::json_value_exact(c, i, json),
        _ => {}
    }
    Ok(())
}

/// The value to write for record `i` of `c` (not null).
fn value<'a>(
    enc: &Enc,
    c: &'a dyn Array,
    i: usize,
    bytes: &'a [u8],
    json: &'a str,
) -> FieldValue<'a> {
    match enc {
        Enc::Int => FieldValue::Int(c.as_primitive::<arrow_array::types::Int64Type>().value(i)),
        Enc::Float => {
            FieldValue::Float(c.as_primitive::<arrow_array::types::Float64Type>().value(i))
        }
        Enc::Time => FieldValue::Int(i64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]))),
        Enc::Scalar(_) | Enc::Tensor(..) | Enc::Bf16(_) => FieldValue::NdArray(bytes),
        Enc::FixedBytes(_) => FieldValue::NdArray(c.as_fixed_size_binary().value(i)),
        Enc::Text => FieldValue::Text(c.as_string::<i32>().value(i)),
        Enc::Json => FieldValue::Json(c.as_string::<i32>().value(i)),
        Enc::DictText => FieldValue::Text(json),
        Enc::Nested => FieldValue::Json(json),
        Enc::Bytes => FieldValue::Bytes(c.as_binary::<i32>().value(i)),
        Enc::ListRaw(_) => FieldValue::Bytes(bytes),
        Enc::Image(_) => {
            let s = c.as_struct();
            FieldValue::Image {
                data: s.column(0).as_binary::<i32>().value(i),
                height: s
                    .column(1)
                    .as_primitive::<arrow_array::types::UInt16Type>()
                    .value(i),
                width: s
                    .column(2)
                    .as_primitive::<arrow_array::types::UInt16Type>()
                    .value(i),
                channels: s
                    .column(3)
                    .as_primitive::<arrow_array::types::UInt8Type>()
                    .value(i),
            }
        }
        Enc::Audio(_) => {
            use arrow_array::types::*;
            let s = c.as_struct();
            FieldValue::Audio {
                data: s.column(0).as_binary::<i32>().value(i),
                num_samples: s.column(1).as_primitive::<UInt32Type>().value(i),
                sample_rate: s.column(2).as_primitive::<UInt32Type>().value(i),
                num_channels: s.column(3).as_primitive::<UInt16Type>().value(i),
                bit_depth: s.column(4).as_primitive::<UInt8Type>().value(i),
                codec: s.column(5).as_primitive::<UInt8Type>().value(i),
            }
        }
        Enc::Tokens(_) => FieldValue::Tokens {
            encoding: 1,
            ids: tokens_of(c, i).unwrap_or_default(),
        },
    }
}

/// The ids of list `i` of a List(Int32) array, borrowed from its buffer.
fn tokens_of(c: &dyn Array, i: usize) -> Option<&[i32]> {
    let l = c.as_list::<i32>();
    let offs = l.value_offsets();
    let (a, b) = (*offs.get(i)?, *offs.get(i + 1)?);
    let ids = l
        .values()
        .as_primitive::<arrow_array::types::Int32Type>()
        .values();
    ids.get(usize::try_from(a).ok()?..usize::try_from(b).ok()?)
}

/// How the fields of an MLDF file that carries a schema become that
/// schema's types again.
pub(crate) struct Restorer {
    schema: SchemaRef,
    /// The MLDF view's own type of each field.
    own: Vec<DataType>,
    plans: Vec<Enc>,
    dicts: Vec<Option<StringArray>>,
}

impl Restorer {
    /// The restorer of `r` (whose own typed schema is `own`), when its last
    /// field is [`SCHEMA_FIELD`] with a value in the last record (where
    /// conversions put it) or in record 0 (where earlier versions did).
    pub(crate) fn from_file(
        r: &crate::mldf::Reader,
        own: &Schema,
    ) -> Result<Option<Restorer>, Error> {
        let n = own.fields().len();
        let Some(last) = own.fields().last() else {
            return Ok(None);
        };
        if last.name() != SCHEMA_FIELD || last.data_type() != &DataType::Utf8 || r.is_empty() {
            return Ok(None);
        }
        let last = r.len() - 1;
        let mut found = None;
        for at in [last, 0] {
            match r.value(at, n - 1).map_err(Error::Mldf)? {
                crate::mldf::Value::Json(t) => {
                    found = Some((at, t.into_owned()));
                    break;
                }
                crate::mldf::Value::Missing => {}
                _ => {
                    return Err(Error::Data {
                        format: Some(crate::Format::Mldf),
                        message: format!("field {SCHEMA_FIELD:?} (record {at}): not JSON"),
                    });
                }
            }
        }
        let Some((at, text)) = found else {
            return Ok(None);
        };
        let bad = |m: String| Error::Data {
            format: Some(crate::Format::Mldf),
            message: format!("field {SCHEMA_FIELD:?} (record {at}): {m}"),
        };
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let carried: Schema =
            serde_json::from_value(v.get("arrow_schema").cloned().unwrap_or_default())
                .map_err(|e| bad(format!("not an Arrow schema: {e}")))?;
        let dicts = v
            .get("dictionaries")
            .and_then(|d| d.as_object())
            .cloned()
            .unwrap_or_default();
        if carried.fields().len() + 1 != n {
            return Err(bad(format!(
                "the carried schema has {} fields, the file {}",
                carried.fields().len(),
                n - 1
            )));
        }
        let mut plans = Vec::with_capacity(n);
        let mut dd = Vec::with_capacity(n);
        for (f, m) in carried.fields().iter().zip(own.fields()) {
            if !super::json::supported(f.data_type())
                && !matches!(plan(f), Enc::Image(_) | Enc::Audio(_))
            {
                return Err(bad(format!(
                    "{:?}: type {} is not restorable",
                    f.name(),
                    f.data_type()
                )));
            }
            let enc = plan(f);
            let expect = crate::adapters::mldf::arrow_field(
                &MField::new(f.name().clone(), enc.field_type()).with_nullable(f.is_nullable()),
            )?;
            if f.name() != m.name()
                || expect.data_type() != m.data_type()
                || expect.is_nullable() != m.is_nullable()
            {
                return Err(bad(format!(
                    "{:?} ({}) does not match the file's field {:?} ({})",
                    f.name(),
                    f.data_type(),
                    m.name(),
                    m.data_type()
                )));
            }
            dd.push(dicts.get(f.name()).and_then(|v| v.as_array()).map(|v| {
                StringArray::from(
                    v.iter()
                        .map(|x| x.as_str().unwrap_or(""))
                        .collect::<Vec<_>>(),
                )
            }));
            plans.push(enc);
        }
        Ok(Some(Restorer {
            schema: Arc::new(carried),
            own: own.fields().iter().map(|f| f.data_type().clone()).collect(),
            plans,
            dicts: dd,
        }))
    }

    /// The carried schema.
    pub(crate) fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The MLDF view's own type of field `j`.
    pub(crate) fn own_type(&self, j: usize) -> Option<&DataType> {
        self.own.get(j)
    }

    /// Field `j` (read with its own MLDF type) as its carried type.
    pub(crate) fn restore(&self, j: usize, raw: &ArrayRef) -> Result<ArrayRef, Error> {
        let (Some(plan), Some(dict)) = (self.plans.get(j), self.dicts.get(j)) else {
            return Err(Error::invalid(format!("no field {j}")));
        };
        let f = self.schema.field(j);
        restore_column(plan, f, raw, dict.as_ref()).map_err(|m| Error::Data {
            format: Some(crate::Format::Mldf),
            message: m,
        })
    }
}

fn retype(c: &ArrayRef, dt: &DataType) -> Result<ArrayRef, String> {
    if c.data_type() == dt {
        return Ok(c.clone());
    }
    c.to_data()
        .into_builder()
        .data_type(dt.clone())
        .build()
        .map(arrow_array::make_array)
        .map_err(|e| e.to_string())
}

fn restore_column(
    enc: &Enc,
    f: &Field,
    c: &ArrayRef,
    dict: Option<&StringArray>,
) -> Result<ArrayRef, String> {
    let dt = f.data_type();
    match enc {
        Enc::Int | Enc::Float | Enc::Scalar(_) | Enc::Tensor(..) | Enc::Bf16(_) | Enc::Time => {
            let c = match (enc, dt) {
                // A tensor's items: the view's item field may differ in name
                // or nullability only.
                (Enc::Tensor(..) | Enc::Bf16(_), DataType::FixedSizeList(item, n)) => {
                    let l = c.as_fixed_size_list();
                    Arc::new(
                        arrow_array::FixedSizeListArray::try_new(
                            item.clone(),
                            *n,
                            l.values().clone(),
                            l.nulls().cloned(),
                        )
                        .map_err(|e| e.to_string())?,
                    ) as ArrayRef
                }
                _ => c.clone(),
            };
            retype(&c, dt)
        }
        Enc::FixedBytes(n) => {
            let l = c.as_fixed_size_list();
            let v = l.values().as_primitive::<arrow_array::types::UInt8Type>();
            let bytes = v.values().inner().clone();
            Ok(Arc::new(
                arrow_array::FixedSizeBinaryArray::try_new(*n, bytes, l.nulls().cloned())
                    .map_err(|e| e.to_string())?,
            ))
        }
        Enc::Text | Enc::Json | Enc::Bytes | Enc::Image(_) | Enc::Audio(_) | Enc::Tokens(_) => {
            retype(c, dt)
        }
        Enc::DictText => {
            let s = c.as_string::<i32>();
            let texts: Vec<Option<&str>> = s.iter().collect();
            let DataType::Dictionary(k, _) = dt else {
                return Err("not a dictionary".into());
            };
            super::json::dictionary(k, &texts, dict)
                .map_err(|e| format!("record {}: {}", e.at, e.message))
        }
        Enc::ListRaw(w) => {
            let DataType::List(item) = dt else {
                return Err("not a list".into());
            };
            let b = c.as_binary::<i32>();
            let w = *w;
            let mut offsets = Vec::with_capacity(b.len() + 1);
            offsets.push(0i32);
            let mut at = 0usize;
            for i in 0..b.len() {
                let n = b.value_length(i) as usize;
                if !n.is_multiple_of(w) {
                    return Err(format!("record {i}: {n} bytes are not items of {w} bytes"));
                }
                at += n / w;
                offsets.push(i32::try_from(at).map_err(|_| "list too long".to_string())?);
            }
            let start = *b.value_offsets().first().unwrap_or(&0) as usize;
            let end = *b.value_offsets().last().unwrap_or(&0) as usize;
            let raw = b.values().slice_with_length(start, end - start);
            // Copy into an aligned buffer of the item type.
            let values = arrow_buffer::Buffer::from_slice_ref(raw.as_slice());
            let child = arrow_data::ArrayData::builder(item.data_type().clone())
                .len(at)
                .add_buffer(values)
                .build()
                .map_err(|e| e.to_string())?;
            Ok(Arc::new(
                arrow_array::ListArray::try_new(
                    item.clone(),
                    arrow_buffer::OffsetBuffer::new(offsets.into()),
                    arrow_array::make_array(child),
                    b.nulls().cloned(),
                )
                .map_err(|e| e.to_string())?,
            ))
        }
        Enc::Nested => {
            let s = c.as_string::<i32>();
            // Each value decoded as it is parsed, when nothing in it needs
            // the documents below (which then give the same or the error).
            if dict.is_none()
                && let Some(a) = super::json_rows::decode_texts(dt, s)
            {
                return Ok(a);
            }
            let mut parsed = Vec::with_capacity(s.len());
            for (i, t) in s.iter().enumerate() {
                parsed.push(match t {
                    Some(t) => Some(
                        serde_json::from_str::<serde_json::Value>(t)
                            .map_err(|e| format!("record {i}: {e}"))?,
                    ),
                    None => None,
                });
            }
            let refs: Vec<Option<&serde_json::Value>> = parsed.iter().map(Option::as_ref).collect();
            super::json::decode(dt, &refs, dict)
                .map_err(|e| format!("record {}: {}", e.at, e.message))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, FixedSizeListArray, Float32Array, Int32Array, StringArray};

    /// Batches from a list.
    struct Batches(SchemaRef, std::vec::IntoIter<RecordBatch>);

    impl BatchStream for Batches {
        fn schema(&self) -> SchemaRef {
            self.0.clone()
        }
        fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
            self.1.next().map(Ok)
        }
    }

    /// Batches of `sizes` rows (some empty): an Int32 (so the schema is
    /// carried), a text with nulls, a bfloat16 tensor whose values round
    /// in some records, a float32 tensor.
    fn batches(sizes: &[usize]) -> (SchemaRef, Vec<RecordBatch>) {
        let bf16 = Field::new("h", DataType::Float32, false).with_metadata(
            [(
                crate::typed::TYPE_KEY.to_string(),
                "NDARRAY<bfloat16>[]".to_string(),
            )]
            .into(),
        );
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int32, false),
            Field::new("t", DataType::Utf8, true),
            bf16,
            Field::new("x", DataType::FixedSizeList(item.clone(), 4), false),
        ]));
        let mut out = Vec::new();
        let mut k = 0i32;
        for &n in sizes {
            let ids: Vec<i32> = (k..k + n as i32).collect();
            k += n as i32;
            let t: Vec<Option<String>> = ids
                .iter()
                .map(|i| (i % 5 != 0).then(|| "word ".repeat((*i % 7) as usize)))
                .collect();
            // 1 + 2^-9 rounds to 1 in bfloat16: every 11th record.
            let h: Vec<f32> = ids
                .iter()
                .map(|i| {
                    if i % 11 == 3 {
                        1.0 + 2f32.powi(-9)
                    } else {
                        (i % 100) as f32
                    }
                })
                .collect();
            let x: Vec<f32> = ids
                .iter()
                .flat_map(|i| [*i as f32, 0.5, -1.0, 2.0])
                .collect();
            let x = FixedSizeListArray::new(item.clone(), 4, Arc::new(Float32Array::from(x)), None);
            let cols: Vec<ArrayRef> = vec![
                Arc::new(Int32Array::from(ids)),
                Arc::new(StringArray::from(t)),
                Arc::new(Float32Array::from(h)),
                Arc::new(x),
            ];
            out.push(RecordBatch::try_new(schema.clone(), cols).unwrap());
        }
        (schema, out)
    }

    fn run(
        sizes: &[usize],
        opts: &MldfOptions,
        lossy: bool,
        threads: usize,
        path: &std::path::Path,
    ) -> Result<(Report, Vec<u64>), Error> {
        let (schema, b) = batches(sizes);
        let mut stream = Batches(schema, b.into_iter());
        let mut report = Report::default();
        let mut seen = Vec::new();
        write(
            &mut stream,
            path,
            opts,
            lossy,
            threads,
            &mut report,
            &mut |n| seen.push(n),
        )?;
        Ok((report, seen))
    }

    /// The records are encoded on several threads and written in order:
    /// the same file, the same changes (first record and count) and the
    /// same progress on one thread, three and every core, compressed or
    /// not; the carried schema is in the last record; without `lossy` the
    /// first rounding is the error on any number of threads.
    #[test]
    fn records_encoded_on_threads_make_the_one_thread_file() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = [7, 0, 300, 1, 1, 0, 64, 129, 2];
        let total: usize = sizes.iter().sum();
        for compressed in [false, true] {
            let mut opts = MldfOptions::default();
            opts.writer.compressed = compressed;
            opts.writer.checksummed = true;
            let mut first: Option<(Vec<u8>, Report, Vec<u64>)> = None;
            for threads in [1, 3, 0] {
                let p = dir.path().join(format!("{compressed}-{threads}.mldf"));
                let (report, seen) = run(&sizes, &opts, true, threads, &p).unwrap();
                assert_eq!(report.changes.len(), 1, "{:?}", report.changes);
                let c = &report.changes[0];
                assert_eq!((c.kind, c.first_record), (ChangeKind::Rounded, 3));
                assert_eq!(c.count, (0..total).filter(|i| i % 11 == 3).count() as u64);
                assert_eq!(seen.last().copied(), Some(total as u64));
                let bytes = std::fs::read(&p).unwrap();
                match &first {
                    None => first = Some((bytes, report, seen)),
                    Some((b, r, s)) => {
                        assert!(*b == bytes, "{threads} threads, compressed {compressed}");
                        assert_eq!(r.changes, report.changes);
                        assert_eq!(*s, seen);
                    }
                }
            }
            let r =
                crate::mldf::Reader::open(dir.path().join(format!("{compressed}-0.mldf"))).unwrap();
            r.validate().unwrap();
            assert_eq!(r.len(), total as u64);
            let carrier = r.fields().len() - 1;
            assert_eq!(r.fields()[carrier].name, SCHEMA_FIELD);
            for i in 0..total as u64 - 1 {
                assert!(matches!(
                    r.value(i, carrier).unwrap(),
                    crate::mldf::Value::Missing
                ));
            }
            let last = r.value(total as u64 - 1, carrier).unwrap();
            assert!(matches!(last, crate::mldf::Value::Json(t) if t.contains("Int32")));
            for threads in [1, 3] {
                let p = dir
                    .path()
                    .join(format!("strict-{compressed}-{threads}.mldf"));
                let e = run(&sizes, &opts, false, threads, &p).unwrap_err();
                assert!(e.to_string().contains("record 3"), "{e}");
                assert!(!p.exists());
            }
        }
    }
}
