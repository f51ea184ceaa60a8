//! Strict JSON verdicts (RFC 8259 plus `mldf.md` R25: no duplicate
//! member names, depth at most 64, no lone surrogate escapes, no numbers
//! that overflow f64), shared by the MLDF and FFCV readers.

use std::collections::HashSet;

/// The deepest nesting accepted.
pub const MAX_DEPTH: usize = 64;

struct P<'a> {
    b: &'a [u8],
    i: usize,
}

type R<T> = Result<T, String>;

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn err<T>(&self, m: &str) -> R<T> {
        Err(format!("{m} at byte {}", self.i))
    }

    fn lit(&mut self, s: &[u8]) -> R<()> {
        if self.b.get(self.i..self.i + s.len()) == Some(s) {
            self.i += s.len();
            Ok(())
        } else {
            self.err("invalid literal")
        }
    }

    /// A value; returns its depth.
    fn value(&mut self, depth: usize) -> R<usize> {
        self.ws();
        match self.peek() {
            Some(b'{') => {
                if depth >= MAX_DEPTH {
                    return self.err("nesting deeper than 64");
                }
                self.i += 1;
                let mut names = HashSet::new();
                let mut deepest = 0;
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(1);
                }
                loop {
                    self.ws();
                    if self.peek() != Some(b'"') {
                        return self.err("expected a member name");
                    }
                    let name = self.string()?;
                    if !names.insert(name) {
                        return self.err("duplicate member name");
                    }
                    self.ws();
                    if self.peek() != Some(b':') {
                        return self.err("expected ':'");
                    }
                    self.i += 1;
                    deepest = deepest.max(self.value(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(deepest + 1);
                        }
                        _ => return self.err("expected ',' or '}'"),
                    }
                }
            }
            Some(b'[') => {
                if depth >= MAX_DEPTH {
                    return self.err("nesting deeper than 64");
                }
                self.i += 1;
                let mut deepest = 0;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(1);
                }
                loop {
                    deepest = deepest.max(self.value(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(deepest + 1);
                        }
                        _ => return self.err("expected ',' or ']'"),
                    }
                }
            }
            Some(b'"') => self.string().map(|_| 0),
            Some(b't') => self.lit(b"true").map(|()| 0),
            Some(b'f') => self.lit(b"false").map(|()| 0),
            Some(b'n') => self.lit(b"null").map(|()| 0),
            Some(b'-' | b'0'..=b'9') => self.number().map(|()| 0),
            _ => self.err("expected a value"),
        }
    }

    fn hex4(&mut self) -> R<u32> {
        let h = self.b.get(self.i..self.i + 4).ok_or("cut \\u escape")?;
        let s = std::str::from_utf8(h).map_err(|_| "bad \\u escape")?;
        let v =
            u32::from_str_radix(s, 16).map_err(|_| format!("bad \\u escape at byte {}", self.i))?;
        if !h.iter().all(u8::is_ascii_hexdigit) {
            return self.err("bad \\u escape");
        }
        self.i += 4;
        Ok(v)
    }

    /// A string (at its opening quote); returns it unescaped.
    fn string(&mut self) -> R<String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            out.push_str(
                std::str::from_utf8(self.b.get(start..self.i).unwrap_or_default())
                    .map_err(|_| "invalid UTF-8")?,
            );
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let e = self.peek().ok_or("cut escape")?;
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let u = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&u) {
                                if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                                    return self.err("lone high surrogate escape");
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return self.err("high surrogate escape without a low one");
                                }
                                0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&u) {
                                return self.err("lone low surrogate escape");
                            } else {
                                u
                            };
                            out.push(char::from_u32(cp).ok_or("bad escape")?);
                        }
                        _ => return self.err("invalid escape"),
                    }
                }
                _ => return self.err("unterminated string or control character"),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let s = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - s
    }

    fn number(&mut self) -> R<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.err("invalid number"),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return self.err("invalid number");
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return self.err("invalid number");
            }
        }
        let text =
            std::str::from_utf8(self.b.get(start..self.i).unwrap_or_default()).unwrap_or("x");
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(()),
            _ => Err(format!("number {text} overflows f64 at byte {start}")),
        }
    }
}

/// Checks one JSON text; the error says what and where.
pub fn check(text: &[u8]) -> Result<(), String> {
    std::str::from_utf8(text).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut p = P { b: text, i: 0 };
    p.value(0)?;
    p.ws();
    if p.i != text.len() {
        return p.err("text after the JSON value");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn verdicts() {
        for ok in [
            "0",
            " {\"a\":[1,2,{\"b\":null}]} ",
            "\"\\ud83d\\ude00\"",
            "1e-400",
            "18446744073709551616",
            "-0.0e+1",
            "\"é\"",
        ] {
            assert!(check(ok.as_bytes()).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "{\"a\":1,\"\\u0061\":2}",
            "\"\\ud800\"",
            "\"\\udc00\\ud800\"",
            "1e400",
            "-1e400",
            "[1,]",
            "01",
            "NaN",
            "{\"a\" 1}",
            "\"a\" x",
            "\"\t\"",
        ] {
            assert!(check(bad.as_bytes()).is_err(), "{bad:?}");
        }
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(check(deep(64).as_bytes()).is_ok());
        assert!(check(deep(65).as_bytes()).is_err());
        assert!(check(format!("1{}", "0".repeat(309)).as_bytes()).is_err());
    }
}

/// The first integer literal of a JSON text (outside strings) that no
/// 64-bit integer holds: serde_json reads such a number as a float, which
/// changes it, so a reader that must keep integers exact refuses the text.
pub fn wide_integer(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let (mut i, mut in_string) = (0, false);
    while let Some(&c) = b.get(i) {
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'-' | b'0'..=b'9' => {
                let start = i;
                while b
                    .get(i)
                    .is_some_and(|c| c.is_ascii_digit() || b"-+.eE".contains(c))
                {
                    i += 1;
                }
                let lit = line.get(start..i).unwrap_or_default();
                let integer = !lit.contains(['.', 'e', 'E']);
                if integer && lit.parse::<i64>().is_err() && lit.parse::<u64>().is_err() {
                    return Some(lit);
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod wide_integer_tests {
    use super::wide_integer;

    #[test]
    fn integers_beyond_64_bits_are_found_outside_strings() {
        assert_eq!(wide_integer(r#"{"a": 18446744073709551615}"#), None);
        assert_eq!(wide_integer(r#"{"a": -9223372036854775808}"#), None);
        assert_eq!(
            wide_integer(r#"{"a": 18446744073709551616}"#),
            Some("18446744073709551616")
        );
        assert_eq!(
            wide_integer(r#"{"a": [1, -9223372036854775809]}"#),
            Some("-9223372036854775809")
        );
        assert_eq!(wide_integer(r#"{"a": "99999999999999999999999"}"#), None);
        assert_eq!(wide_integer(r#"{"a": "x\"", "b": 1e400}"#), None);
        assert_eq!(
            wide_integer(r#"{"a": 1.5e3, "b": 123456789012345678901.0}"#),
            None
        );
    }
}
