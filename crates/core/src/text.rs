//! Small text helpers shared by the format crates' renderers.

/// Appends `s` to `out` as a JSON string literal (quotes, backslashes and
/// control characters escaped; everything else as is).
pub fn push_json_string(out: &mut String, s: &str) {
    use std::fmt::Write as _;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A finite float's shortest round-trip decimal (the same digits Rust's
/// own formatting finds): its digits without leading or trailing zeros and
/// the place of the decimal point, the value being `0.DIGITS × 10^point`.
struct Shortest {
    negative: bool,
    digits: [u8; 24],
    len: usize,
    point: i32,
}

impl Shortest {
    /// From the fast formatter's text for the value (`1234.5`, `0.00012`,
    /// `1.5e-7`, `1e+30`): it finds the digits, the layout is redone here.
    fn of(text: &str) -> Shortest {
        let b = text.as_bytes();
        let negative = b.first() == Some(&b'-');
        let body = if negative {
            b.get(1..).unwrap_or_default()
        } else {
            b
        };
        let (mantissa, exp) = match body.iter().position(|&c| c == b'e') {
            Some(e) => {
                let exp = std::str::from_utf8(body.get(e + 1..).unwrap_or_default())
                    .ok()
                    .and_then(|s| s.parse::<i32>().ok())
                    .unwrap_or(0);
                (body.get(..e).unwrap_or_default(), exp)
            }
            None => (body, 0),
        };
        let mut out = Shortest {
            negative,
            digits: [0; 24],
            len: 0,
            point: 0,
        };
        let mut seen_point = false;
        let mut leading = true;
        for &c in mantissa {
            if c == b'.' {
                seen_point = true;
                continue;
            }
            if !seen_point {
                out.point += 1;
            }
            if leading && c == b'0' {
                out.point -= 1;
                continue;
            }
            leading = false;
            out.push_digit(c);
        }
        out.trim_zeros();
        out.point += exp;
        out
    }

    /// Rust's choice where two shortest decimals are equally near the
    /// value (the fast formatter takes the even one, Rust the one further
    /// from zero):
    /// the value `m × 2^e` exactly, when its decimal is one digit longer
    /// than the shortest and ends in 5, rounded half up instead.
    fn round_ties_up(&mut self, mut m: u64, mut e: i32) {
        if m == 0 {
            return;
        }
        let t = m.trailing_zeros().min(e.unsigned_abs());
        m >>= t;
        e += t as i32;
        // From 2^0 up the exact value is an integer: if odd, it is its own
        // shortest decimal; if even, it cannot end in 5. From 5^31 on the
        // exact decimal has more than 21 digits, far more than the 17 a
        // shortest one needs, so no tie.
        if !(-30..0).contains(&e) {
            return;
        }
        let k = e.unsigned_abs();
        let Some(exact) = 5u128
            .checked_pow(k)
            .and_then(|p| p.checked_mul(u128::from(m)))
        else {
            return;
        };
        let len = exact.checked_ilog10().map_or(1, |l| l as usize + 1);
        if len != self.len + 1 || exact % 10 != 5 {
            return;
        }
        let up = exact / 10 + 1;
        let text = up.to_string();
        // The value is `up × 10^(1 - k)` = 0.UP × 10^(digits of up + 1 - k)
        // (a carry may make `up` a digit longer).
        self.point = text.len() as i32 + 1 - k as i32;
        self.len = 0;
        for c in text.bytes() {
            self.push_digit(c);
        }
        self.trim_zeros();
    }

    /// Appends the ASCII digit `c` (a 25th digit, which no float needs, is
    /// dropped).
    fn push_digit(&mut self, c: u8) {
        if let Some(d) = self.digits.get_mut(self.len) {
            *d = c;
            self.len += 1;
        }
    }

    /// Drops trailing zero digits.
    fn trim_zeros(&mut self) {
        while self.len > 0 && self.digits.get(self.len - 1) == Some(&b'0') {
            self.len -= 1;
        }
    }

    fn digits(&self) -> &[u8] {
        self.digits.get(..self.len).unwrap_or_default()
    }

    /// Plain decimal notation; `.0` after a whole number when `point_zero`.
    fn push_decimal(&self, out: &mut String, point_zero: bool) {
        let d = self.digits();
        let n = d.len() as i32;
        let p = self.point;
        if self.negative {
            out.push('-');
        }
        let digits = |out: &mut String, d: &[u8]| {
            out.extend(d.iter().map(|&c| char::from(c)));
        };
        if p <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-p) as usize));
            digits(out, d);
        } else if p < n {
            let (int, frac) = d.split_at(p as usize);
            digits(out, int);
            out.push('.');
            digits(out, frac);
        } else {
            digits(out, d);
            out.extend(std::iter::repeat_n('0', (p - n) as usize));
            if point_zero {
                out.push_str(".0");
            }
        }
    }

    /// `D.DDDeX` (no `.` for one digit, no `+` before the exponent).
    fn push_exponential(&self, out: &mut String) {
        use std::fmt::Write as _;
        let d = self.digits();
        if self.negative {
            out.push('-');
        }
        let (first, rest) = d.split_at(1.min(d.len()));
        out.extend(first.iter().map(|&c| char::from(c)));
        if !rest.is_empty() {
            out.push('.');
            out.extend(rest.iter().map(|&c| char::from(c)));
        }
        let _ = write!(out, "e{}", self.point - 1);
    }
}

/// Whether `m × 2^e` can lie exactly halfway between two shortest
/// decimals (cheap and conservative; [`Shortest::round_ties_up`] decides):
/// only a value whose exact decimal has at most 18 digits can.
fn may_tie(m: u64, e: i32) -> bool {
    if m == 0 || e >= 0 {
        return false;
    }
    let t = m.trailing_zeros().min(e.unsigned_abs());
    let (m, k) = (m >> t, e.unsigned_abs() - t);
    if k == 0 {
        return false;
    }
    // log10(m × 5^k) is at least this; 18 digits or fewer need it under 18.
    let low = f64::from(63 - m.leading_zeros()) * std::f64::consts::LOG10_2
        + f64::from(k) * (1.0 - std::f64::consts::LOG10_2);
    low < 18.5
}

macro_rules! float_text {
    ($debug:ident, $display:ident, $t:ty, $parts:ident) => {
        #[doc = concat!("Appends `x` exactly as `format!(\"{x:?}\")` writes an `", stringify!($t), "`, several")]
        /// times faster: the shortest decimal that reads back to the same
        /// bits, with `.0` after whole numbers, in exponent form below 1e-4
        /// and from 1e16 (`NaN`, `inf` and `-inf` as Rust writes them).
        pub fn $debug(out: &mut String, x: $t) {
            if !x.is_finite() {
                use std::fmt::Write as _;
                let _ = write!(out, "{x:?}");
                return;
            }
            if x == 0.0 {
                out.push_str(if x.is_sign_negative() { "-0.0" } else { "0.0" });
                return;
            }
            let mut buf = zmij::Buffer::new();
            let text = buf.format_finite(x);
            let (m, e) = $parts(x);
            let tie = may_tie(m, e);
            let abs = x.abs();
            let exponent = !(1e-4..1e16).contains(&abs);
            // The formatter's plain decimals are laid out as Rust's
            // (`1234.0`, `12.34`, `0.001234`).
            if !tie && !exponent && !text.contains('e') {
                out.push_str(text);
                return;
            }
            let mut s = Shortest::of(text);
            s.round_ties_up(m, e);
            if exponent {
                s.push_exponential(out);
            } else {
                s.push_decimal(out, true);
            }
        }

        #[doc = concat!("Appends `x` exactly as `format!(\"{x}\")` writes an `", stringify!($t), "`, several")]
        /// times faster: the shortest decimal that reads back to the same
        /// bits, never in exponent form, whole numbers without `.0`.
        pub fn $display(out: &mut String, x: $t) {
            if !x.is_finite() {
                use std::fmt::Write as _;
                let _ = write!(out, "{x}");
                return;
            }
            if x == 0.0 {
                out.push_str(if x.is_sign_negative() { "-0" } else { "0" });
                return;
            }
            let mut buf = zmij::Buffer::new();
            let text = buf.format_finite(x);
            let (m, e) = $parts(x);
            if !may_tie(m, e) && !text.contains('e') {
                out.push_str(text.strip_suffix(".0").unwrap_or(text));
                return;
            }
            let mut s = Shortest::of(text);
            s.round_ties_up(m, e);
            s.push_decimal(out, false);
        }
    };
}

/// `x` as `m × 2^e` (finite `x`; the sign dropped).
fn parts_f64(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    if exp == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, exp - 1075)
    }
}

/// `x` as `m × 2^e` (finite `x`; the sign dropped).
fn parts_f32(x: f32) -> (u64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32;
    let frac = u64::from(bits & ((1 << 23) - 1));
    if exp == 0 {
        (frac, -149)
    } else {
        (frac | 1 << 23, exp - 150)
    }
}

float_text!(push_f64_debug, push_f64_display, f64, parts_f64);
float_text!(push_f32_debug, push_f32_display, f32, parts_f32);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Values where the layouts change, and random bits of every kind
    /// (subnormals, huge, tiny, NaN payloads), against Rust's own text.
    #[test]
    fn floats_read_as_rust_writes_them() {
        let mut edges: Vec<f64> = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            1e-4,
            9.999e-5,
            1e-5,
            1e15,
            1e16,
            9.99e15,
            1.5e16,
            1e17,
            123456789.0,
            0.000123,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            1e21,
            1e22,
            1e100,
            100.0,
            1e-7,
        ];
        edges.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
        let mut r = SplitMix64::new(31);
        let mut s = String::new();
        let mut check64 = |x: f64| {
            s.clear();
            push_f64_debug(&mut s, x);
            assert_eq!(s, format!("{x:?}"), "{:#x}", x.to_bits());
            s.clear();
            push_f64_display(&mut s, x);
            assert_eq!(s, format!("{x}"), "{:#x}", x.to_bits());
        };
        for &x in &edges {
            check64(x);
            check64(-x);
        }
        for _ in 0..200_000 {
            check64(f64::from_bits(r.next_u64()));
            // Values of everyday size too, where decimal layout applies.
            check64((r.next_u64() >> 11) as f64 / (1u64 << (r.below(60) as u32)) as f64);
        }
        let mut s = String::new();
        let mut check32 = |x: f32| {
            s.clear();
            push_f32_debug(&mut s, x);
            assert_eq!(s, format!("{x:?}"), "{:#x}", x.to_bits());
            s.clear();
            push_f32_display(&mut s, x);
            assert_eq!(s, format!("{x}"), "{:#x}", x.to_bits());
        };
        for &x in &edges {
            check32(x as f32);
            check32(-(x as f32));
        }
        for _ in 0..200_000 {
            check32(f32::from_bits(r.next_u64() as u32));
            check32((r.next_u64() >> 40) as f32 / (1u32 << (r.below(30) as u32)) as f32);
        }
    }
    #[test]
    fn escapes() {
        let mut s = String::new();
        push_json_string(&mut s, "a\"b\\c\n\u{1}é");
        assert_eq!(s, r#""a\"b\\c\n\u0001é""#);
    }
}
