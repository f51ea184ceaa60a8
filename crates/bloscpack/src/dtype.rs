//! numpy data types as Bloscpack and BLZ/bcolz metadata write them.
//!
//! Three spellings reach us: numpy's `dtype.str` (`<f8`, `|S10`, `<M8[ns]`),
//! the repr of a structured `dtype.descr` as a Python literal
//! (`[('x', '<f4'), ('v', '<f4', (3,))]`), and the pre-0.7.2 Bloscpack JSON
//! list form (`[["x","<f4"],["v","<f4",[3]]]`). All parse into [`Dtype`].

use std::fmt;

/// Byte order of a scalar type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// `<`
    Little,
    /// `>`
    Big,
    /// `|`: one-byte and byte-string types, where order does not apply.
    NotApplicable,
}

/// The kind of a scalar type (numpy's kind character).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    /// `b`: bool, one byte.
    Bool,
    /// `i`: signed integer.
    Int,
    /// `u`: unsigned integer.
    UInt,
    /// `f`: IEEE float.
    Float,
    /// `c`: complex (two floats).
    Complex,
    /// `S`: NUL-padded byte string.
    Bytes,
    /// `U`: NUL-padded UCS-4 text.
    Unicode,
    /// `V`: raw bytes.
    Void,
    /// `M`: datetime64 (an int64 count of `unit`).
    Datetime,
    /// `m`: timedelta64 (an int64 count of `unit`).
    Timedelta,
}

impl ScalarKind {
    fn code(self) -> char {
        match self {
            ScalarKind::Bool => 'b',
            ScalarKind::Int => 'i',
            ScalarKind::UInt => 'u',
            ScalarKind::Float => 'f',
            ScalarKind::Complex => 'c',
            ScalarKind::Bytes => 'S',
            ScalarKind::Unicode => 'U',
            ScalarKind::Void => 'V',
            ScalarKind::Datetime => 'M',
            ScalarKind::Timedelta => 'm',
        }
    }
}

/// A scalar numpy type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scalar {
    /// Byte order.
    pub order: ByteOrder,
    /// Kind.
    pub kind: ScalarKind,
    /// Size in bytes (for `U`, 4 × the character count).
    pub itemsize: usize,
    /// Time unit of datetime64/timedelta64 (`"ns"`, `"D"`...); `None` otherwise or when generic.
    pub unit: Option<String>,
}

/// A field of a structured type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Field {
    /// The field name (`""` for numpy's unnamed padding).
    pub name: String,
    /// The field's type.
    pub dtype: Dtype,
    /// Subarray shape (`[]` for a plain field).
    pub shape: Vec<u64>,
}

/// A numpy data type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// A scalar type.
    Scalar(Scalar),
    /// A packed structured (record) type.
    Record(Vec<Field>),
}

/// Why a dtype did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DtypeError(pub String);

impl fmt::Display for DtypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DtypeError {}

fn err<T>(msg: impl Into<String>) -> Result<T, DtypeError> {
    Err(DtypeError(msg.into()))
}

/// Largest itemsize we accept (keeps products of shapes and itemsizes small).
const MAX_ITEMSIZE: usize = 1 << 30;

impl Scalar {
    /// Parses a numpy `dtype.str`: an order character (`<`, `>`, `|`, `=`,
    /// optional), a kind character and a size, plus `[unit]` for `M`/`m`.
    pub fn parse_typestr(s: &str) -> Result<Self, DtypeError> {
        let mut chars = s.chars().peekable();
        let order = match chars.peek() {
            Some('<') => ByteOrder::Little,
            Some('>') => ByteOrder::Big,
            Some('|') => ByteOrder::NotApplicable,
            Some('=') => ByteOrder::Little,
            _ => ByteOrder::Little,
        };
        if matches!(chars.peek(), Some('<' | '>' | '|' | '=')) {
            chars.next();
        }
        let kind = match chars.next() {
            Some('b') | Some('?') => ScalarKind::Bool,
            Some('i') => ScalarKind::Int,
            Some('u') => ScalarKind::UInt,
            Some('f') => ScalarKind::Float,
            Some('c') => ScalarKind::Complex,
            Some('S') | Some('a') => ScalarKind::Bytes,
            Some('U') => ScalarKind::Unicode,
            Some('V') => ScalarKind::Void,
            Some('M') => ScalarKind::Datetime,
            Some('m') => ScalarKind::Timedelta,
            Some('O') => return err(format!("object dtype `{s}` is not supported")),
            _ => return err(format!("`{s}` is not a numpy type string")),
        };
        let rest: String = chars.collect();
        let (num, unit) = match rest.split_once('[') {
            Some((n, u)) => {
                let Some(u) = u.strip_suffix(']') else {
                    return err(format!("`{s}`: unterminated time unit"));
                };
                (n.to_string(), Some(u.to_string()))
            }
            None => (rest, None),
        };
        let n: usize = if num.is_empty() && kind == ScalarKind::Bool {
            1
        } else {
            num.parse()
                .map_err(|_| DtypeError(format!("`{s}`: bad size `{num}`")))?
        };
        let itemsize = if kind == ScalarKind::Unicode {
            n.checked_mul(4)
        } else {
            Some(n)
        }
        .filter(|&x| x <= MAX_ITEMSIZE)
        .ok_or_else(|| DtypeError(format!("`{s}`: size too large")))?;
        let valid = match kind {
            ScalarKind::Bool => itemsize == 1,
            ScalarKind::Int | ScalarKind::UInt => matches!(itemsize, 1 | 2 | 4 | 8),
            ScalarKind::Float => matches!(itemsize, 2 | 4 | 8 | 16),
            ScalarKind::Complex => matches!(itemsize, 8 | 16 | 32),
            ScalarKind::Datetime | ScalarKind::Timedelta => itemsize == 8,
            ScalarKind::Bytes | ScalarKind::Unicode | ScalarKind::Void => true,
        };
        if !valid {
            return err(format!("`{s}`: size {n} is not valid for this kind"));
        }
        if unit.is_some() && !matches!(kind, ScalarKind::Datetime | ScalarKind::Timedelta) {
            return err(format!("`{s}`: only datetime/timedelta types have a unit"));
        }
        if let Some(u) = &unit {
            const UNITS: [&str; 13] = [
                "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as",
            ];
            if !UNITS.contains(&u.as_str()) {
                return err(format!("`{s}`: unknown time unit `{u}`"));
            }
        }
        // One-byte types have no byte order.
        let order = if itemsize == 1 && !matches!(kind, ScalarKind::Unicode)
            || matches!(kind, ScalarKind::Bytes | ScalarKind::Void)
        {
            ByteOrder::NotApplicable
        } else if order == ByteOrder::NotApplicable {
            ByteOrder::Little
        } else {
            order
        };
        Ok(Scalar {
            order,
            kind,
            itemsize,
            unit,
        })
    }

    /// numpy's `dtype.str` for this type (`<f8`, `|S10`, `<U5`, `<M8[ns]`).
    pub fn typestr(&self) -> String {
        let o = match self.order {
            ByteOrder::Little => '<',
            ByteOrder::Big => '>',
            ByteOrder::NotApplicable => '|',
        };
        let n = if self.kind == ScalarKind::Unicode {
            self.itemsize / 4
        } else {
            self.itemsize
        };
        match &self.unit {
            Some(u) => format!("{o}{}{n}[{u}]", self.kind.code()),
            None => format!("{o}{}{n}", self.kind.code()),
        }
    }
}

impl Dtype {
    /// Size of one element in bytes.
    pub fn itemsize(&self) -> usize {
        match self {
            Dtype::Scalar(s) => s.itemsize,
            Dtype::Record(fields) => fields
                .iter()
                .map(|f| {
                    f.dtype
                        .itemsize()
                        .saturating_mul(f.shape.iter().product::<u64>() as usize)
                })
                .fold(0usize, usize::saturating_add),
        }
    }

    /// The scalar type, if this is one.
    pub fn as_scalar(&self) -> Option<&Scalar> {
        match self {
            Dtype::Scalar(s) => Some(s),
            Dtype::Record(_) => None,
        }
    }

    /// Parses the `dtype` value of Bloscpack numpy metadata in any of its
    /// three forms (see the module docs).
    pub fn from_metadata(v: &serde_json::Value) -> Result<Self, DtypeError> {
        match v {
            serde_json::Value::String(s) => {
                let t = s.trim_start();
                if t.starts_with('\'') || t.starts_with('"') || t.starts_with('[') {
                    Self::parse_python_literal(s)
                } else {
                    Scalar::parse_typestr(s).map(Dtype::Scalar)
                }
            }
            serde_json::Value::Array(items) => Self::from_json_descr(items, 0),
            _ => err("dtype is neither a string nor a list"),
        }
    }

    fn from_json_descr(items: &[serde_json::Value], depth: usize) -> Result<Self, DtypeError> {
        if depth > 32 {
            return err("structured dtype nested too deeply");
        }
        if items.is_empty() {
            return err("structured dtype with no fields");
        }
        let mut fields = Vec::new();
        for it in items {
            let serde_json::Value::Array(parts) = it else {
                return err("a field of a structured dtype is not a list");
            };
            let (name, format, shape) = match parts.as_slice() {
                [n, f] => (n, f, None),
                [n, f, s] => (n, f, Some(s)),
                _ => return err("a field must be [name, format] or [name, format, shape]"),
            };
            let name = name
                .as_str()
                .ok_or_else(|| DtypeError("field name is not a string".into()))?;
            let dtype = match format {
                serde_json::Value::String(s) => Dtype::Scalar(Scalar::parse_typestr(s)?),
                serde_json::Value::Array(sub) => Self::from_json_descr(sub, depth + 1)?,
                _ => return err("field format is neither a string nor a list"),
            };
            let shape = match shape {
                None => Vec::new(),
                Some(serde_json::Value::Number(n)) => vec![
                    n.as_u64()
                        .ok_or_else(|| DtypeError("bad subarray shape".into()))?,
                ],
                Some(serde_json::Value::Array(dims)) => dims
                    .iter()
                    .map(|d| {
                        d.as_u64()
                            .ok_or_else(|| DtypeError("bad subarray shape".into()))
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return err("bad subarray shape"),
            };
            fields.push(Field {
                name: name.to_string(),
                dtype,
                shape,
            });
        }
        check_size(Dtype::Record(fields))
    }

    /// Parses the Python repr of a `dtype.str` (`'<f8'`) or of a structured
    /// `dtype.descr` (`[('x', '<f4'), ('v', '<f4', (3,))]`).
    pub fn parse_python_literal(s: &str) -> Result<Self, DtypeError> {
        let mut p = Lit {
            s: s.as_bytes(),
            pos: 0,
            depth: 0,
        };
        p.ws();
        let d = if p.peek() == Some(b'[') {
            p.fields()?
        } else {
            Dtype::Scalar(Scalar::parse_typestr(&p.string()?)?)
        };
        p.ws();
        if p.pos != p.s.len() {
            return err(format!("trailing characters in dtype literal `{s}`"));
        }
        check_size(d)
    }

    /// numpy's `dtype.str` for a scalar, or the `descr` as JSON-style lists
    /// for a record (the form sidecars use).
    pub fn descr_json(&self) -> serde_json::Value {
        match self {
            Dtype::Scalar(s) => serde_json::Value::String(s.typestr()),
            Dtype::Record(fields) => serde_json::Value::Array(
                fields
                    .iter()
                    .map(|f| {
                        let mut v = vec![
                            serde_json::Value::String(f.name.clone()),
                            f.dtype.descr_json(),
                        ];
                        if !f.shape.is_empty() {
                            v.push(serde_json::Value::Array(
                                f.shape.iter().map(|&d| d.into()).collect(),
                            ));
                        }
                        serde_json::Value::Array(v)
                    })
                    .collect(),
            ),
        }
    }

    /// The Python literal Bloscpack writes into metadata (`'<f8'`, or the
    /// repr of the `descr` list of tuples).
    pub fn python_literal(&self) -> String {
        fn lit(d: &Dtype, out: &mut String) {
            match d {
                Dtype::Scalar(s) => {
                    out.push('\'');
                    out.push_str(&s.typestr());
                    out.push('\'');
                }
                Dtype::Record(fields) => {
                    out.push('[');
                    for (i, f) in fields.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        out.push_str("('");
                        for c in f.name.chars() {
                            match c {
                                '\\' => out.push_str("\\\\"),
                                '\'' => out.push_str("\\'"),
                                c => out.push(c),
                            }
                        }
                        out.push_str("', ");
                        lit(&f.dtype, out);
                        if !f.shape.is_empty() {
                            out.push_str(", (");
                            for (k, d) in f.shape.iter().enumerate() {
                                if k > 0 {
                                    out.push_str(", ");
                                }
                                out.push_str(&d.to_string());
                            }
                            if f.shape.len() == 1 {
                                out.push(',');
                            }
                            out.push(')');
                        }
                        out.push(')');
                    }
                    out.push(']');
                }
            }
        }
        let mut s = String::new();
        lit(self, &mut s);
        s
    }
}

/// Accepts a dtype whose size fits `MAX_ITEMSIZE` (and, for records, is not zero).
fn check_size(d: Dtype) -> Result<Dtype, DtypeError> {
    fn size(d: &Dtype) -> Option<u64> {
        match d {
            Dtype::Scalar(s) => Some(s.itemsize as u64),
            Dtype::Record(fields) => fields.iter().try_fold(0u64, |acc, f| {
                let n = f.shape.iter().try_fold(1u64, |a, &x| a.checked_mul(x))?;
                acc.checked_add(size(&f.dtype)?.checked_mul(n)?)
            }),
        }
    }
    let ok = match (&d, size(&d)) {
        (Dtype::Scalar(_), _) => true,
        (Dtype::Record(_), Some(n)) => n > 0 && n <= MAX_ITEMSIZE as u64,
        (Dtype::Record(_), None) => false,
    };
    if ok {
        Ok(d)
    } else {
        err("structured dtype is empty or too large")
    }
}

/// A small recursive-descent parser for the Python literal grammar.
struct Lit<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Lit<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Result<(), DtypeError> {
        self.ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            err(format!(
                "expected `{}` at character {} of the dtype literal",
                c as char, self.pos
            ))
        }
    }

    fn try_eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn string(&mut self) -> Result<String, DtypeError> {
        self.ws();
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return err(format!("expected a string at character {}", self.pos)),
        };
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return err("unterminated string in dtype literal");
            };
            self.pos += 1;
            if c == q {
                break;
            }
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.peek() else {
                return err("unterminated escape in dtype literal");
            };
            self.pos += 1;
            let hex = |p: &mut Self, n: usize| -> Result<u32, DtypeError> {
                let digits =
                    p.s.get(p.pos..p.pos + n)
                        .ok_or_else(|| DtypeError("short escape".into()))?;
                p.pos += n;
                let t = std::str::from_utf8(digits).map_err(|_| DtypeError("bad escape".into()))?;
                u32::from_str_radix(t, 16).map_err(|_| DtypeError("bad escape".into()))
            };
            let ch =
                match e {
                    b'\\' => '\\',
                    b'\'' => '\'',
                    b'"' => '"',
                    b'n' => '\n',
                    b't' => '\t',
                    b'r' => '\r',
                    b'x' => char::from_u32(hex(self, 2)?)
                        .ok_or_else(|| DtypeError("bad escape".into()))?,
                    b'u' => char::from_u32(hex(self, 4)?)
                        .ok_or_else(|| DtypeError("bad escape".into()))?,
                    b'U' => char::from_u32(hex(self, 8)?)
                        .ok_or_else(|| DtypeError("bad escape".into()))?,
                    _ => return err("unknown escape in dtype literal"),
                };
            let mut b = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
        }
        String::from_utf8(out).map_err(|_| DtypeError("dtype literal string is not UTF-8".into()))
    }

    fn int(&mut self) -> Result<u64, DtypeError> {
        self.ws();
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        let t = std::str::from_utf8(self.s.get(start..self.pos).unwrap_or_default()).unwrap_or("");
        t.parse()
            .map_err(|_| DtypeError(format!("expected an integer at character {start}")))
    }

    fn fields(&mut self) -> Result<Dtype, DtypeError> {
        self.depth += 1;
        if self.depth > 32 {
            return err("structured dtype nested too deeply");
        }
        self.eat(b'[')?;
        let mut fields = Vec::new();
        loop {
            if self.try_eat(b']') {
                break;
            }
            self.eat(b'(')?;
            let name = self.string()?;
            self.eat(b',')?;
            self.ws();
            let dtype = if self.peek() == Some(b'[') {
                self.fields()?
            } else {
                Dtype::Scalar(Scalar::parse_typestr(&self.string()?)?)
            };
            let mut shape = Vec::new();
            if self.try_eat(b',') {
                self.ws();
                if self.peek() == Some(b'(') {
                    self.pos += 1;
                    loop {
                        if self.try_eat(b')') {
                            break;
                        }
                        shape.push(self.int()?);
                        if !self.try_eat(b',') {
                            self.eat(b')')?;
                            break;
                        }
                    }
                    let _ = self.try_eat(b',');
                } else if self.peek() != Some(b')') {
                    shape.push(self.int()?);
                    let _ = self.try_eat(b',');
                }
            }
            self.eat(b')')?;
            fields.push(Field { name, dtype, shape });
            if !self.try_eat(b',') {
                self.eat(b']')?;
                break;
            }
        }
        self.depth -= 1;
        if fields.is_empty() {
            return err("structured dtype with no fields");
        }
        Ok(Dtype::Record(fields))
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dtype::Scalar(s) => f.write_str(&s.typestr()),
            Dtype::Record(_) => f.write_str(&self.python_literal()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typestrs() {
        for s in [
            "<f8", "|u1", "|b1", ">i4", "|S10", "<U5", "<M8[s]", "<c16", "<f2", "<m8[ns]", "|V8",
            "<i8",
        ] {
            let t = Scalar::parse_typestr(s).unwrap();
            assert_eq!(t.typestr(), s);
        }
        assert_eq!(Scalar::parse_typestr("<U5").unwrap().itemsize, 20);
        assert_eq!(Scalar::parse_typestr("|S10").unwrap().itemsize, 10);
        assert!(Scalar::parse_typestr("|O8").is_err());
        assert!(Scalar::parse_typestr("<f3").is_err());
        assert!(Scalar::parse_typestr("<M8[xs]").is_err());
        assert!(Scalar::parse_typestr("zz").is_err());
        assert!(Scalar::parse_typestr("<U99999999999999").is_err());
    }

    #[test]
    fn python_literals() {
        let d = Dtype::parse_python_literal("'<f8'").unwrap();
        assert_eq!(d, Dtype::Scalar(Scalar::parse_typestr("<f8").unwrap()));
        let s = "[('x', '<f4'), ('y', '<i2'), ('tag', '|S6')]";
        let d = Dtype::parse_python_literal(s).unwrap();
        assert_eq!(d.itemsize(), 12);
        assert_eq!(d.python_literal(), s);
        let nested = "[('pos', [('x', '<f8'), ('y', '<f8')]), ('id', '<u4'), ('v', '<f4', (3,))]";
        let d = Dtype::parse_python_literal(nested).unwrap();
        assert_eq!(d.itemsize(), 16 + 4 + 12);
        assert_eq!(d.python_literal(), nested);
        assert_eq!(
            d.descr_json(),
            serde_json::json!([
                ["pos", [["x", "<f8"], ["y", "<f8"]]],
                ["id", "<u4"],
                ["v", "<f4", [3]]
            ])
        );
        let d = Dtype::parse_python_literal(r#"[("a\x41", '<i4', 2), ('', '|V4',)]"#).unwrap();
        let Dtype::Record(f) = &d else { panic!() };
        assert_eq!(f[0].name, "aA");
        assert_eq!(f[0].shape, vec![2]);
        assert_eq!(d.itemsize(), 12);
        for bad in [
            "",
            "[",
            "[]",
            "[('x')]",
            "'<f8",
            "[('x', '<f8'))",
            "'<f8' x",
            "[('x', '<O8')]",
        ] {
            assert!(Dtype::parse_python_literal(bad).is_err(), "{bad}");
        }
        let deep = "[('a', ".repeat(40) + "'<f8'" + &")]".repeat(40);
        assert!(Dtype::parse_python_literal(&deep).is_err());
    }

    #[test]
    fn metadata_forms() {
        use serde_json::json;
        let a = Dtype::from_metadata(&json!("'<f8'")).unwrap();
        let b = Dtype::from_metadata(&json!("<f8")).unwrap();
        assert_eq!(a, b);
        let r = Dtype::from_metadata(&json!([["x", "<f4"], ["v", "<f4", [3]]])).unwrap();
        assert_eq!(r.itemsize(), 16);
        let r2 = Dtype::from_metadata(&json!("[('x', '<f4'), ('v', '<f4', (3,))]")).unwrap();
        assert_eq!(r, r2);
        assert!(Dtype::from_metadata(&json!(5)).is_err());
        assert!(Dtype::from_metadata(&json!([["x"]])).is_err());
    }
}
