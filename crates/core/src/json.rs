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

    /// Steps over the ASCII digits from here; how many there were.
    fn digits(&mut self) -> usize {
        let start = self.i;
        // Eight bytes at a time: a byte `x` is a digit when `y = x ^ 0x30`
        // is below 10, so its high bit and that of `(y & 0x7F) + 0x76`
        // (no carry into the next byte) are both clear.
        while let Some(word) = self.b.get(self.i..self.i + 8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            let y = u64::from_le_bytes(w) ^ 0x3030_3030_3030_3030;
            let other =
                (((y & 0x7F7F_7F7F_7F7F_7F7F) + 0x7676_7676_7676_7676) | y) & 0x8080_8080_8080_8080;
            if other != 0 {
                self.i += (other.trailing_zeros() / 8) as usize;
                return self.i - start;
            }
            self.i += 8;
        }
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> R<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        // Where the number's first significant digit stands: its power of
        // ten before the exponent (`None` while every digit is 0).
        let mut lead = match self.peek() {
            Some(b'0') => {
                self.i += 1;
                None
            }
            Some(b'1'..=b'9') => Some(self.digits() as i64 - 1),
            _ => return self.err("invalid number"),
        };
        if self.peek() == Some(b'.') {
            self.i += 1;
            let from = self.i;
            let n = self.digits();
            if n == 0 {
                return self.err("invalid number");
            }
            if lead.is_none() {
                let fraction = self.b.get(from..from + n).unwrap_or_default();
                lead = fraction
                    .iter()
                    .position(|&c| c != b'0')
                    .map(|z| -(z as i64) - 1);
            }
        }
        let mut exponent = 0i64;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            let negative = match self.peek() {
                Some(b'-') => {
                    self.i += 1;
                    true
                }
                Some(b'+') => {
                    self.i += 1;
                    false
                }
                _ => false,
            };
            let from = self.i;
            if self.digits() == 0 {
                return self.err("invalid number");
            }
            // Saturated far beyond any number's digits: the verdict is
            // the same for every larger exponent.
            for &c in self.b.get(from..self.i).unwrap_or_default() {
                exponent = (exponent * 10 + i64::from(c - b'0')).min(1 << 40);
            }
            if negative {
                exponent = -exponent;
            }
        }
        // A number below 10^308 is finite, one from 10^309 is not (f64's
        // largest is about 1.8e308); only one whose first digit stands
        // at 10^308 is parsed to decide. Zero, and any number rounding
        // to it, is finite.
        let overflows = match lead.map(|l| l.saturating_add(exponent)) {
            None => false,
            Some(at) if at < 308 => false,
            Some(at) if at > 308 => true,
            Some(_) => {
                let text = std::str::from_utf8(self.b.get(start..self.i).unwrap_or_default())
                    .unwrap_or("x");
                !text.parse::<f64>().is_ok_and(f64::is_finite)
            }
        };
        if overflows {
            let text =
                String::from_utf8_lossy(self.b.get(start..self.i).unwrap_or_default()).into_owned();
            return Err(format!("number {text} overflows f64 at byte {start}"));
        }
        Ok(())
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
        assert!(check(format!("1{}", "0".repeat(308)).as_bytes()).is_ok());
        assert!(check(format!("0.{}1e400", "0".repeat(100)).as_bytes()).is_ok());
        assert!(check(b"0.000e999999999999999999999").is_ok());
        assert!(check(b"1e-999999999999999999999").is_ok());
        assert!(check(b"1e999999999999999999999").is_err());
    }

    /// A number is refused for overflowing exactly when the standard
    /// library's parse gives an infinity: numbers of every shape around
    /// f64's largest, and far from it.
    #[test]
    fn overflow_verdicts_are_the_parses() {
        let mut r = crate::rng::SplitMix64::new(308);
        let digits = |r: &mut crate::rng::SplitMix64, n: u64, first: bool| -> String {
            (0..n)
                .map(|k| {
                    let d = if k == 0 && first {
                        1 + r.below(9)
                    } else {
                        r.below(10)
                    };
                    char::from(b'0' + d as u8)
                })
                .collect()
        };
        let edges = [
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791.9",
            "9.99999999999999999999e307",
            "0.00001e313",
            "17976.931348623158e304",
        ];
        let mut seen = [0usize; 2];
        for k in 0..20_000 {
            let text = match edges.get(k) {
                Some(e) => e.to_string(),
                None => {
                    let mut t = String::new();
                    if r.below(2) == 0 {
                        t.push('-');
                    }
                    let int = r.below(4);
                    if int == 0 {
                        t.push('0');
                    } else {
                        let n = 1 + r.below(if int == 3 { 320 } else { 20 });
                        t.push_str(&digits(&mut r, n, true));
                    }
                    if r.below(2) == 0 {
                        t.push('.');
                        let zeros = r.below(4) * r.below(120);
                        t.push_str(&"0".repeat(zeros as usize));
                        let n = 1 + r.below(25);
                        t.push_str(&digits(&mut r, n, false));
                    }
                    if r.below(3) != 0 {
                        t.push(if r.below(2) == 0 { 'e' } else { 'E' });
                        match r.below(3) {
                            0 => t.push('+'),
                            1 => t.push('-'),
                            _ => {}
                        }
                        let e = match r.below(3) {
                            0 => 300 + r.below(20),
                            1 => r.below(400),
                            _ => r.below(1000),
                        };
                        t.push_str(&e.to_string());
                    }
                    t
                }
            };
            let finite = text.parse::<f64>().is_ok_and(f64::is_finite);
            seen[usize::from(finite)] += 1;
            assert_eq!(check(text.as_bytes()).is_ok(), finite, "{text}");
        }
        // Both verdicts were given often.
        assert!(seen[0] > 1000 && seen[1] > 1000, "{seen:?}");
    }
}

/// The first integer literal of a JSON text (outside strings) that no
/// 64-bit integer holds: serde_json reads such a number as a float, which
/// changes it, so a reader that must keep integers exact refuses the text.
pub fn wide_integer(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    // Every integer of up to 18 digits fits an i64, and a literal's digits
    // stand together: a text without 19 digits in a row (strings
    // included) has none to find, which most texts show in one pass.
    let mut run = 0u32;
    let long_run = b.iter().any(|&c| {
        run = if c.is_ascii_digit() { run + 1 } else { 0 };
        run >= 19
    });
    if !long_run {
        return None;
    }
    first_wide(line)
}

/// [`wide_integer`] by reading every literal.
fn first_wide(line: &str) -> Option<&str> {
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
                // A literal without a digit (a lone sign: not JSON) is
                // left for the parser to refuse.
                let integer =
                    !lit.contains(['.', 'e', 'E']) && lit.bytes().any(|c| c.is_ascii_digit());
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

    /// The quick look for 19 digits in a row never hides a literal the
    /// full reading finds: random texts of integers (up to 25 digits, at
    /// and around the 64-bit limits), floats and strings of digits.
    #[test]
    fn the_quick_look_agrees_with_reading_every_literal() {
        let mut r = crate::rng::SplitMix64::new(19);
        let mut found = 0;
        for _ in 0..5_000 {
            let mut line = String::from("{");
            for k in 0..1 + r.below(6) {
                if k > 0 {
                    line.push(',');
                }
                line.push_str(&format!("\"f{k}\":"));
                let n = 1 + r.below(25);
                let mut digits: String = (0..n)
                    .map(|i| {
                        char::from(b'0' + if i == 0 { 1 + r.below(9) } else { r.below(10) } as u8)
                    })
                    .collect();
                match r.below(8) {
                    0 => digits = "18446744073709551615".into(),
                    1 => digits = "18446744073709551616".into(),
                    2 => digits = "9223372036854775808".into(),
                    _ => {}
                }
                if r.below(3) == 0 {
                    line.push('-');
                }
                match r.below(4) {
                    0 => line.push_str(&format!("\"{digits}\"")),
                    1 => line.push_str(&format!("{digits}.5e3")),
                    2 => line.push_str(&format!("[{digits}, 1]")),
                    _ => line.push_str(&digits),
                }
            }
            line.push('}');
            let want = super::first_wide(&line);
            found += usize::from(want.is_some());
            assert_eq!(wide_integer(&line), want, "{line}");
        }
        assert!(found > 500, "{found}");
    }
}
