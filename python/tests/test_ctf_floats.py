"""CNTK text values against Python's own `float()` (what ctf2bin.py uses):
thousands of generated tokens (shortest and long decimal forms, values
halfway between two doubles and next to halfway, subnormals, overflow and
underflow, underscores, digits of other scripts, signs, inf and nan in any
case) converted to CBF in float64 with `dataformats.convert`; every value
read back has exactly the bits `float(token)` gives. Tokens `float()`
refuses make the conversion fail, naming the line.
"""

import math
import random
import struct
from decimal import Decimal, getcontext

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import dataformats

getcontext().prec = 1200

# Non-ASCII digits Python reads as 0-9 (one run per script, a few scripts).
OTHER_ZEROS = [0x660, 0x966, 0xFF10, 0x1D7CE]


def bits(v: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def random_double(r: random.Random) -> float:
    while True:
        v = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
        if math.isfinite(v):
            return v


def halfway(r: random.Random) -> str:
    """The exact decimal halfway between a double and the next one up,
    sometimes nudged by one unit in its last digit (the hardest inputs
    for correct rounding)."""
    x = abs(random_double(r))
    y = math.nextafter(x, math.inf)
    if not math.isfinite(y):
        return repr(x)
    mid = (Decimal(x) + Decimal(y)) / 2
    text = format(mid, "f") if r.random() < 0.5 else format(mid, "e")
    if r.random() < 0.5:
        mant, _, exp = text.partition("e")
        last = mant[-1]
        if last.isdigit():
            mant = mant[:-1] + str((int(last) + r.choice((1, 9))) % 10)
        text = mant + (("e" + exp) if exp else "")
    return text


def digits_token(r: random.Random) -> str:
    whole = "".join(r.choice("0123456789") for _ in range(r.randrange(0, 22)))
    frac = "".join(r.choice("0123456789") for _ in range(r.randrange(0, 22)))
    t = whole + ("." + frac if frac or r.random() < 0.3 else "")
    if not any(c.isdigit() for c in t):
        t = "0" + t
    if r.random() < 0.5:
        t += r.choice("eE") + r.choice(("", "+", "-")) + str(r.randrange(0, 340))
    return t


def with_underscores(r: random.Random, t: str) -> str:
    out = []
    for i, c in enumerate(t):
        out.append(c)
        if c.isdigit() and i + 1 < len(t) and t[i + 1].isdigit() and r.random() < 0.2:
            out.append("_")
    return "".join(out)


def with_other_digits(r: random.Random, t: str) -> str:
    zero = r.choice(OTHER_ZEROS)
    return "".join(chr(zero + int(c)) if c.isdigit() and r.random() < 0.5 else c for c in t)


def tokens(n: int, seed: int):
    r = random.Random(seed)
    out = []
    for k in range(n):
        kind = k % 8
        if kind == 0:
            t = repr(random_double(r))
        elif kind == 1:
            t = f"{random_double(r):.{r.randrange(1, 30)}e}"
        elif kind == 2:
            t = f"{r.uniform(-1e6, 1e6):.{r.randrange(0, 25)}f}"
        elif kind == 3:
            t = halfway(r)
        elif kind == 4:
            t = digits_token(r)
        elif kind == 5:
            # Subnormals, the smallest normal, overflow and underflow.
            t = r.choice(("4.9e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
                          "2.2250738585072011e-308", "2.2250738585072014e-308", "1.7976931348623157e308",
                          "1.7976931348623158e308", "1.7976931348623159e308", "1e-400", "1e400"))
            t = t if r.random() < 0.5 else f"{r.uniform(0, 10):.{r.randrange(1, 20)}f}e-{r.randrange(300, 330)}"
        elif kind == 6:
            t = "".join(c.upper() if r.random() < 0.5 else c for c in r.choice(("inf", "infinity", "nan")))
        else:
            t = with_other_digits(r, digits_token(r)) if r.random() < 0.5 else with_underscores(r, digits_token(r))
        if r.random() < 0.3:
            t = r.choice("+-") + t.lstrip("+-")
        out.append(t)
    return out


def convert_values(tmp_path, toks):
    ctf = tmp_path / "v.ctf"
    ctf.write_text("".join(f"{k} |x {t}\n" for k, t in enumerate(toks)), encoding="utf-8")
    cbf = tmp_path / "v.bin"
    dataformats.convert(ctf, cbf, to="cntk", stream=["x:dense:1"], precision="f64")
    col = dataformats.open(cbf).to_arrow().column("x").combine_chunks()
    while pa.types.is_list(col.type) or pa.types.is_fixed_size_list(col.type) or pa.types.is_large_list(col.type):
        col = pc.list_flatten(col)
    return col.to_pylist()


def test_every_value_has_the_bits_python_float_gives(tmp_path):
    toks = tokens(4000, seed=20261126)
    valid = []
    for t in toks:
        try:
            float(t)
            valid.append(t)
        except ValueError:
            pass
    assert len(valid) > 3900
    got = convert_values(tmp_path, valid)
    assert len(got) == len(valid)
    for t, v in zip(valid, got):
        want = float(t)
        if math.isnan(want):
            assert math.isnan(v) and math.copysign(1, v) == math.copysign(1, want), t
        else:
            assert bits(v) == bits(want), f"{t!r}: {v!r} != {want!r}"


@pytest.mark.parametrize(
    "token",
    ["-+5", "+-5", "1e", ".", "e5", "1__0", "_1", "1_", "1._5", "1e_5", "0x10", "infinit", "nana",
     "1.5.5", "1,5", "\u0661\u00b7", "\u2160", "\u00b2"],
)
def test_tokens_python_refuses_are_refused(tmp_path, token):
    with pytest.raises(ValueError):
        float(token)
    ctf = tmp_path / "v.ctf"
    ctf.write_text(f"0 |x 1.5\n1 |x {token}\n", encoding="utf-8")
    with pytest.raises(Exception) as e:
        dataformats.convert(ctf, tmp_path / "v.bin", to="cntk", stream=["x:dense:1"], precision="f64")
    assert "line 2" in str(e.value)
    assert not (tmp_path / "v.bin").exists()
