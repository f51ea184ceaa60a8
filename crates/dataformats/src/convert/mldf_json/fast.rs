//! The common JSON line read straight into cells, without a document.
//!
//! A line of JSON lines → MLDF is usually an object whose members are
//! numbers, arrays of numbers and plain strings. Reading it through a
//! `serde_json::Value` builds a map, a key string per member and a value
//! per array element before any of it is converted; this reader walks the
//! bytes once and converts as it goes. It takes only the plain case: the
//! first thing it does not take (an escape in a string, a duplicate key, a
//! number that needs a conversion the general path would refuse, a blob, a
//! JSON field, any syntax error) makes it give up on the line, and the line
//! is read the general way, which gives the result or the error. So on
//! every line where it answers, its cells are those of the general path
//! (the tests compare the two on generated lines), and it never makes an
//! error of its own.
//!
//! Numbers follow `serde_json`'s reading: an integer literal that fits a
//! `u64` (non-negative) or an `i64` (negative) is an integer, `-0` and every
//! literal with a fraction or an exponent is a double, correctly rounded
//! (as `serde_json` with `float_roundtrip` rounds it).

use std::collections::HashMap;

use super::Cell;
use crate::mldf::{Dtype, Field, FieldType};

/// How a member of a field is read here.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Int,
    Float,
    /// An NDARRAY given as a number or (nested) arrays of numbers.
    Array(Dtype),
    /// A TEXT_RAW string.
    Text,
    /// Anything else: present, it sends the line to the general path;
    /// `null` is a missing value, except in a JSON field.
    Other {
        json: bool,
    },
}

/// The fields of a schema, as this reader looks them up.
pub(super) struct Plan<'a> {
    names: Vec<&'a [u8]>,
    kinds: Vec<Kind>,
    /// By name, for schemas with many fields (a few are compared in turn).
    index: Option<HashMap<&'a [u8], usize>>,
}

/// Schemas of up to this many fields find a key by comparing names in turn.
const LINEAR: usize = 12;

/// Nesting beyond this sends the line to the general path (which has its own
/// limit and error).
const DEPTH: u32 = 64;

impl<'a> Plan<'a> {
    /// The plan of a schema; `None` when two fields share a name (each
    /// then takes the same member, which this reader does not do).
    pub(super) fn new(fields: &'a [Field]) -> Option<Self> {
        let names: Vec<&[u8]> = fields.iter().map(|f| f.name.as_bytes()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w.first() == w.last()) {
            return None;
        }
        let kinds = fields
            .iter()
            .map(|f| match &f.ty {
                FieldType::Int => Kind::Int,
                FieldType::Float => Kind::Float,
                FieldType::NdArray { dtype, .. } => Kind::Array(*dtype),
                FieldType::TextRaw => Kind::Text,
                ty => Kind::Other {
                    json: *ty == FieldType::Json,
                },
            })
            .collect();
        let index = (names.len() > LINEAR)
            .then(|| names.iter().enumerate().map(|(k, n)| (*n, k)).collect());
        Some(Plan {
            names,
            kinds,
            index,
        })
    }

    fn find(&self, key: &[u8]) -> Option<usize> {
        match &self.index {
            Some(m) => m.get(key).copied(),
            None => self.names.iter().position(|n| *n == key),
        }
    }

    /// Appends the cells of `line` (without its line end), one per field,
    /// to `cells`, and the bytes of its NDARRAY values to `arena` (which
    /// [`Cell::Span`]s point into); `false` when the line is not the plain
    /// case and must be read the general way (what was appended is then
    /// the caller's to take back).
    pub(super) fn row(&self, line: &str, cells: &mut Vec<Cell>, arena: &mut Vec<u8>) -> bool {
        let first = cells.len();
        cells.resize_with(first + self.kinds.len(), || Cell::Missing);
        let Some(row) = cells.get_mut(first..) else {
            return false;
        };
        self.read(line, row, arena).is_some()
    }

    fn read(&self, line: &str, row: &mut [Cell], arena: &mut Vec<u8>) -> Option<()> {
        // Which fields have had their member: a bit each up to 128 fields
        // (a duplicate member is left to the general path, which keeps the
        // last one); larger schemas use a vector.
        let mut seen = Seen::new(row.len());
        let mut c = Cursor {
            s: line,
            b: line.as_bytes(),
            i: 0,
        };
        c.ws();
        c.expect(b'{')?;
        c.ws();
        if !c.eat(b'}') {
            loop {
                c.ws();
                c.expect(b'"')?;
                let key = c.string()?.as_bytes();
                c.ws();
                c.expect(b':')?;
                c.ws();
                match self.find(key) {
                    Some(k) => {
                        if seen.insert(k) {
                            return None;
                        }
                        *row.get_mut(k)? = c.cell(*self.kinds.get(k)?, arena)?;
                    }
                    None => c.skip(0)?,
                }
                c.ws();
                if c.eat(b',') {
                    continue;
                }
                c.expect(b'}')?;
                break;
            }
        }
        c.ws();
        (c.i == line.len()).then_some(())
    }
}

/// The fields met so far in a line.
enum Seen {
    Bits(u128),
    Many(Vec<bool>),
}

impl Seen {
    fn new(n: usize) -> Self {
        if n <= 128 {
            Seen::Bits(0)
        } else {
            Seen::Many(vec![false; n])
        }
    }

    /// Marks field `k`; whether it was met before.
    fn insert(&mut self, k: usize) -> bool {
        match self {
            Seen::Bits(b) => {
                let bit = 1u128 << (k & 127);
                let was = *b & bit != 0;
                *b |= bit;
                was
            }
            Seen::Many(v) => v.get_mut(k).is_none_or(|s| std::mem::replace(s, true)),
        }
    }
}

/// A JSON number as `serde_json` reads it.
#[derive(Debug, Clone, Copy)]
enum Num {
    U(u64),
    I(i64),
    F(f64),
}

impl Num {
    /// `Value::as_i64`.
    fn as_i64(self) -> Option<i64> {
        match self {
            Num::U(n) => i64::try_from(n).ok(),
            Num::I(n) => Some(n),
            Num::F(_) => None,
        }
    }

    /// `Value::as_u64`.
    fn as_u64(self) -> Option<u64> {
        match self {
            Num::U(n) => Some(n),
            Num::I(_) | Num::F(_) => None,
        }
    }

    /// `Value::as_f64`.
    fn as_f64(self) -> f64 {
        match self {
            Num::U(n) => n as f64,
            Num::I(n) => n as f64,
            Num::F(x) => x,
        }
    }
}

/// Powers of ten that a double holds exactly.
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// A line, and the position reached in it.
struct Cursor<'a> {
    s: &'a str,
    /// `s`'s bytes.
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// JSON's whitespace: space, tab, line feed, carriage return.
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        self.eat(c).then_some(())
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let hit = self.b.get(self.i..).is_some_and(|r| r.starts_with(word));
        if hit {
            self.i += word.len();
        }
        hit
    }

    /// A string's bytes after its opening quote, up to the closing one
    /// (eaten); `None` for an escape or a control character (the general
    /// path unescapes, or rejects), or no closing quote.
    fn string(&mut self) -> Option<&'a str> {
        let rest = self.b.get(self.i..)?;
        let end = rest
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        if rest.get(end) != Some(&b'"') {
            return None;
        }
        // Both ends are ASCII bytes, so on character boundaries.
        let s = self.s.get(self.i..self.i + end)?;
        self.i += end + 1;
        Some(s)
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    /// A number, by JSON's grammar; `None` for anything else and for the
    /// cases left to the general path (an integer beyond 64 bits, an
    /// exponent of more than four digits, a double out of range).
    fn number(&mut self) -> Option<Num> {
        let start = self.i;
        let neg = self.eat(b'-');
        let int_start = self.i;
        match self.peek()? {
            b'0' => {
                self.i += 1;
                // One leading zero only.
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return None;
                }
            }
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        let int = self.b.get(int_start..self.i)?;
        let mut frac: &[u8] = &[];
        let mut exp = false;
        if self.eat(b'.') {
            let f = self.i;
            if self.digits() == 0 {
                return None;
            }
            frac = self.b.get(f..self.i)?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !(1..=4).contains(&self.digits()) {
                return None;
            }
            exp = true;
        }
        let decimal = |m: u64, d: &[u8]| {
            d.iter().fold(m, |m, &c| {
                m.wrapping_mul(10).wrapping_add(u64::from(c - b'0'))
            })
        };
        if frac.is_empty() && !exp {
            // An integer: u64 (or i64 when negative) unless it overflows.
            let sig = int.iter().try_fold(0u64, |m, &c| {
                m.checked_mul(10)?.checked_add(u64::from(c - b'0'))
            })?;
            if !neg {
                return Some(Num::U(sig));
            }
            let n = (sig as i64).wrapping_neg();
            // `-0`, and a magnitude beyond i64's, are doubles.
            return Some(if n >= 0 {
                Num::F(-(sig as f64))
            } else {
                Num::I(n)
            });
        }
        if !exp && int.len() + frac.len() <= 15 {
            // At most 15 digits: m < 2^53 and 10^k are exact doubles, so
            // the one division is correctly rounded (Clinger's fast path).
            let m = decimal(decimal(0, int), frac);
            let v = m as f64 / POW10.get(frac.len())?;
            return Some(Num::F(if neg { -v } else { v }));
        }
        // Rust's reading is correctly rounded too, and takes every JSON
        // number.
        let text = self.s.get(start..self.i)?;
        let v: f64 = text.parse().ok()?;
        v.is_finite().then_some(Num::F(v))
    }

    /// The cell of a member of kind `k` (an NDARRAY's bytes go to the end
    /// of `arena`).
    fn cell(&mut self, k: Kind, arena: &mut Vec<u8>) -> Option<Cell> {
        if self.literal(b"null") {
            return match k {
                Kind::Other { json: true } => None,
                _ => Some(Cell::Missing),
            };
        }
        match k {
            Kind::Int => Some(Cell::Int(self.number()?.as_i64()?)),
            Kind::Float => Some(Cell::Float(self.number()?.as_f64())),
            Kind::Array(dtype) => {
                let start = arena.len();
                if self.peek() == Some(b'[') {
                    self.array(dtype, arena, 0)?;
                } else {
                    push(self.number()?, dtype, arena)?;
                }
                Some(Cell::Span(start, arena.len()))
            }
            Kind::Text => {
                self.expect(b'"')?;
                let s = self.string()?;
                Some(Cell::Text(s.to_owned()))
            }
            Kind::Other { .. } => None,
        }
    }

    /// A (nested) array of numbers, at its `[`, into `out`, flattened.
    fn array(&mut self, dtype: Dtype, out: &mut Vec<u8>, depth: u32) -> Option<()> {
        if depth >= DEPTH {
            return None;
        }
        self.expect(b'[')?;
        self.ws();
        if self.eat(b']') {
            return Some(());
        }
        loop {
            self.ws();
            match self.peek()? {
                b'[' => self.array(dtype, out, depth + 1)?,
                b't' | b'f' if dtype == Dtype::Bool => {
                    let v = if self.literal(b"true") {
                        1
                    } else if self.literal(b"false") {
                        0
                    } else {
                        return None;
                    };
                    out.push(v);
                }
                _ => push(self.number()?, dtype, out)?,
            }
            self.ws();
            if self.eat(b',') {
                continue;
            }
            return self.expect(b']');
        }
    }

    /// Steps over any JSON value (a member no field names).
    fn skip(&mut self, depth: u32) -> Option<()> {
        if depth >= DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.string().map(drop)
            }
            b't' => self.literal(b"true").then_some(()),
            b'f' => self.literal(b"false").then_some(()),
            b'n' => self.literal(b"null").then_some(()),
            open @ (b'[' | b'{') => {
                let close = if open == b'[' { b']' } else { b'}' };
                self.i += 1;
                self.ws();
                if self.eat(close) {
                    return Some(());
                }
                loop {
                    self.ws();
                    if open == b'{' {
                        self.expect(b'"')?;
                        self.string()?;
                        self.ws();
                        self.expect(b':')?;
                        self.ws();
                    }
                    self.skip(depth + 1)?;
                    self.ws();
                    if self.eat(b',') {
                        continue;
                    }
                    return self.expect(close);
                }
            }
            _ => self.number().map(drop),
        }
    }
}

/// One element of an NDARRAY, converted as the general path converts it
/// (`None` where that path would refuse it).
fn push(n: Num, dtype: Dtype, out: &mut Vec<u8>) -> Option<()> {
    use Dtype as D;
    match dtype {
        D::Bool => return None,
        D::U8 => out.push(u8::try_from(n.as_u64()?).ok()?),
        D::I8 => out.extend(i8::try_from(n.as_i64()?).ok()?.to_le_bytes()),
        D::U16 => out.extend(u16::try_from(n.as_u64()?).ok()?.to_le_bytes()),
        D::I16 => out.extend(i16::try_from(n.as_i64()?).ok()?.to_le_bytes()),
        D::U32 => out.extend(u32::try_from(n.as_u64()?).ok()?.to_le_bytes()),
        D::I32 => out.extend(i32::try_from(n.as_i64()?).ok()?.to_le_bytes()),
        D::U64 => out.extend(n.as_u64()?.to_le_bytes()),
        D::I64 => out.extend(n.as_i64()?.to_le_bytes()),
        D::F32 => out.extend((n.as_f64() as f32).to_le_bytes()),
        D::F64 => out.extend(n.as_f64().to_le_bytes()),
        D::BF16 => out.extend(half::bf16::from_f64(n.as_f64()).to_le_bytes()),
        D::F16 => out.extend(half::f16::from_f64(n.as_f64()).to_le_bytes()),
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rng::SplitMix64;
    use std::path::Path;

    fn pick<'a>(rng: &mut SplitMix64, xs: &[&'a str]) -> &'a str {
        xs.get(rng.below(xs.len() as u64) as usize)
            .copied()
            .unwrap_or_default()
    }

    fn digits(rng: &mut SplitMix64, n: u64) -> String {
        (0..n)
            .map(|_| char::from(b'0' + rng.below(10) as u8))
            .collect()
    }

    /// Numbers of every shape JSON has, the edges of the integer types,
    /// long and short decimals, and some that are not JSON.
    fn number(rng: &mut SplitMix64) -> String {
        let sign = if rng.below(3) == 0 { "-" } else { "" };
        match rng.below(10) {
            0 => format!("{sign}{}", rng.below(1000)),
            1 => pick(
                rng,
                &[
                    "0",
                    "-0",
                    "0.0",
                    "-0.0",
                    "-0e0",
                    "18446744073709551615",
                    "18446744073709551616",
                    "9223372036854775807",
                    "9223372036854775808",
                    "-9223372036854775808",
                    "-9223372036854775809",
                    "-18446744073709551616",
                    "255",
                    "256",
                    "-128",
                    "-129",
                    "65535",
                    "65536",
                    "4294967295",
                    "4294967296",
                    "2147483648",
                    "-2147483649",
                    "1e308",
                    "1e309",
                    "1e-400",
                    "4.9e-324",
                    "2.2250738585072011e-308",
                    "9007199254740993",
                    "9007199254740993.0",
                    "0.1",
                    "1.0000000000000002",
                    "1e0005",
                    "1e00005",
                    "3.4028235e38",
                    "3.4028236e38",
                    "65504.0",
                    "65520.0",
                ],
            )
            .to_string(),
            2 => format!(
                "{sign}{:?}",
                f32::from_bits(rng.next_u64() as u32 & 0x7f7f_ffff)
            ),
            3 => format!(
                "{sign}{:?}",
                f64::from_bits(rng.next_u64() & 0x7fef_ffff_ffff_ffff)
            ),
            4 => format!(
                "{sign}{:?}",
                (rng.below(1 << 24) as f32 / (1 << 23) as f32) - 1.0
            ),
            5 => {
                // Not JSON, or not plain.
                pick(
                    rng,
                    &[
                        "01", "1.", ".5", "-", "1e", "+1", "1.5.5", "NaN", "Infinity", "1e+",
                        "--1", "0x10", "1_0", "1E5", "1e-5", "1E+05", "-.5", "00", "0e",
                    ],
                )
                .to_string()
            }
            _ => {
                let whole = if rng.below(4) == 0 {
                    "0".to_string()
                } else {
                    let n = 1 + rng.below(20);
                    format!("{}{}", 1 + rng.below(9), digits(rng, n - 1))
                };
                let frac = if rng.below(3) == 0 {
                    String::new()
                } else {
                    let n = 1 + rng.below(22);
                    format!(".{}", digits(rng, n))
                };
                let exp = if rng.below(3) == 0 {
                    let n = 1 + rng.below(3);
                    format!(
                        "{}{}{}",
                        pick(rng, &["e", "E"]),
                        pick(rng, &["", "+", "-"]),
                        digits(rng, n)
                    )
                } else {
                    String::new()
                };
                format!("{sign}{whole}{frac}{exp}")
            }
        }
    }

    fn ws(rng: &mut SplitMix64) -> &'static str {
        match rng.below(8) {
            0 => " ",
            1 => "\t",
            2 => " \r ",
            _ => "",
        }
    }

    fn value(rng: &mut SplitMix64, depth: u32) -> String {
        let k = if depth > 3 {
            rng.below(6)
        } else {
            rng.below(10)
        };
        match k {
            0..=2 => number(rng),
            3 => pick(
                rng,
                &[
                    r#""plain""#,
                    r#""é ü 日本""#,
                    r#""with \"escape\"""#,
                    r#""\u00e9""#,
                    "\"raw\u{1}control\"",
                    r#""""#,
                    r#""NaN""#,
                    r#""Infinity""#,
                    r#""unterminated"#,
                ],
            )
            .to_string(),
            4 => pick(rng, &["true", "false", "null", "nul", "truex"]).to_string(),
            5 => {
                // An array of numbers (the common NDARRAY).
                let n = rng.below(6);
                let items: Vec<String> = (0..n)
                    .map(|_| format!("{}{}{}", ws(rng), number(rng), ws(rng)))
                    .collect();
                let tail = if rng.below(20) == 0 { "," } else { "" };
                format!("[{}{tail}]", items.join(","))
            }
            6 | 7 => {
                let n = rng.below(4);
                let items: Vec<String> = (0..n).map(|_| value(rng, depth + 1)).collect();
                format!("[{}{}]", ws(rng), items.join(","))
            }
            8 => {
                let n = rng.below(3);
                let items: Vec<String> = (0..n)
                    .map(|_| {
                        format!(
                            "\"{}\"{}:{}{}",
                            pick(rng, &["k", "base64", "path", "a"]),
                            ws(rng),
                            ws(rng),
                            value(rng, depth + 1)
                        )
                    })
                    .collect();
                format!("{{{}}}", items.join(","))
            }
            _ => pick(rng, &["[true,false]", "[[1,2],[3,4]]", "[[[0.5]]]", "[]"]).to_string(),
        }
    }

    fn line(rng: &mut SplitMix64, names: &[&str]) -> String {
        match rng.below(30) {
            0 => return value(rng, 0),
            1 => return "{".to_string(),
            _ => {}
        }
        let n = rng.below(names.len() as u64 + 3);
        let members: Vec<String> = (0..n)
            .map(|_| {
                let key = match rng.below(12) {
                    0 => "unknown",
                    1 => "with\\\"quote",
                    2 => "",
                    _ => pick(rng, names),
                };
                format!(
                    "{}\"{key}\"{}:{}{}{}",
                    ws(rng),
                    ws(rng),
                    ws(rng),
                    value(rng, 0),
                    ws(rng)
                )
            })
            .collect();
        let tail = match rng.below(25) {
            0 => " x",
            1 => ",",
            _ => "",
        };
        format!("{}{{{}}}{}{tail}", ws(rng), members.join(","), ws(rng))
    }

    /// A cell as comparable text (floats by their bits, bytes resolved).
    fn norm(c: &Cell, arena: &[u8]) -> String {
        match c {
            Cell::Missing => "missing".into(),
            Cell::Int(x) => format!("int {x}"),
            Cell::Float(x) => format!("float {:#x}", x.to_bits()),
            Cell::Span(a, b) => format!("bytes {:?}", arena.get(*a..*b)),
            Cell::Bytes(v) => format!("bytes {:?}", Some(v.as_slice())),
            Cell::Text(t) => format!("text {t:?}"),
            _ => "other".into(),
        }
    }

    /// On generated lines of every shape, for an NDARRAY of every dtype:
    /// wherever the fast reader answers, the general path reads the line
    /// without error and gives the same cells, bit for bit.
    #[test]
    fn answers_only_what_the_general_path_gives() {
        let dtypes: Vec<Dtype> = (1..=13).filter_map(Dtype::from_code).collect();
        assert_eq!(dtypes.len(), 13);
        let mut rng = SplitMix64::new(17);
        let (mut answered, mut declined, mut total) = (0, 0, 0);
        for dtype in dtypes {
            let fields = vec![
                Field::new("i", FieldType::Int),
                Field::new("f", FieldType::Float),
                Field::new(
                    "x",
                    FieldType::NdArray {
                        dtype,
                        shape: vec![2],
                    },
                ),
                Field::new("t", FieldType::TextRaw),
                Field::new("b", FieldType::Bytes),
                Field::new("j", FieldType::Json),
            ];
            let names = ["i", "f", "x", "t", "b", "j"];
            let plan = Plan::new(&fields).expect("distinct names");
            for _ in 0..4000 {
                let text = line(&mut rng, &names);
                let (mut cells, mut arena) = (vec![Cell::Int(7)], vec![9u8]);
                let fast = plan.row(&text, &mut cells, &mut arena);
                let general = super::super::general_row(&text, &fields, Path::new("."));
                total += 1;
                if !fast {
                    declined += 1;
                    continue;
                }
                answered += 1;
                let general = general.unwrap_or_else(|e| {
                    panic!("fast answered {text:?}, the general path refused it: {e}")
                });
                // What was there before the row is untouched.
                assert_eq!(norm(&cells[0], &arena), "int 7");
                assert_eq!(arena.first(), Some(&9));
                let fast: Vec<String> = cells[1..].iter().map(|c| norm(c, &arena)).collect();
                let general: Vec<String> = general.iter().map(|c| norm(c, &[])).collect();
                assert_eq!(fast, general, "{dtype:?}: {text:?}");
            }
        }
        // Both ways are exercised, widely.
        assert!(answered > total / 10, "{answered} of {total} answered");
        assert!(declined > total / 10, "{declined} of {total} declined");
    }

    /// The plain lines of a numeric schema are all the fast reader's.
    #[test]
    fn takes_the_plain_lines() {
        let fields = vec![
            Field::new("id", FieldType::Int),
            Field::new("score", FieldType::Float),
            Field::new(
                "x",
                FieldType::NdArray {
                    dtype: Dtype::F32,
                    shape: vec![3],
                },
            ),
            Field::new("name", FieldType::TextRaw),
        ];
        let plan = Plan::new(&fields).expect("distinct names");
        let (mut cells, mut arena) = (Vec::new(), Vec::new());
        let line = r#" {"id": -3, "score": 0.25, "x": [1, -2.5, 3e2], "name": "a b", "other": {"k": [null, true]}} "#;
        assert!(plan.row(line, &mut cells, &mut arena));
        let got: Vec<String> = cells.iter().map(|c| norm(c, &arena)).collect();
        let x: Vec<u8> = [1f32, -2.5, 300.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(
            got,
            [
                "int -3".to_string(),
                format!("float {:#x}", 0.25f64.to_bits()),
                format!("bytes {:?}", Some(x.as_slice())),
                "text \"a b\"".to_string(),
            ]
        );
        // An absent member and a null are missing.
        cells.clear();
        assert!(plan.row(r#"{"id": null}"#, &mut cells, &mut arena));
        assert!(cells.iter().all(|c| matches!(c, Cell::Missing)));
        // Two fields of one name: no plan.
        let twice = vec![
            Field::new("a", FieldType::Int),
            Field::new("a", FieldType::Float),
        ];
        assert!(Plan::new(&twice).is_none());
    }
}
