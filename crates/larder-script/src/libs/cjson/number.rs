//! Numbers as lua_cjson reads and writes them: glibc's `strtod` (decimal, hexadecimal,
//! `inf`, `nan`) and `printf("%.<precision>g")`.

/// `snprintf(buf, n, "%.<precision>g", x)` as glibc writes it (precision 1 to 14).
pub(crate) fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let p = precision.max(1);
    // Rust's `{:e}` rounds the exact binary value half to even, as glibc does.
    let e_form = format!("{:.*e}", p - 1, x.abs());
    let (mantissa, exp) = e_form.split_once('e').unwrap_or((&e_form, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let mut out = String::new();
    if x.is_sign_negative() {
        out.push('-');
    }
    if exp < -4 || exp >= p as i64 {
        out.push(char::from(digits[0]));
        let frac = trim_zeros(&digits[1..]);
        if !frac.is_empty() {
            out.push('.');
            out.extend(frac.iter().map(|&b| char::from(b)));
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.abs()));
    } else if exp >= 0 {
        let split = exp as usize + 1;
        out.extend(digits[..split].iter().map(|&b| char::from(b)));
        let frac = trim_zeros(&digits[split..]);
        if !frac.is_empty() {
            out.push('.');
            out.extend(frac.iter().map(|&b| char::from(b)));
        }
    } else {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.extend(trim_zeros(&digits).iter().map(|&b| char::from(b)));
    }
    out
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let end = digits.iter().rposition(|&d| d != b'0').map_or(0, |i| i + 1);
    &digits[..end]
}

/// glibc's `strtod` on `s` from `start` (bytes past the end read as NUL): the value and the
/// position just after what it consumed, `None` where it converts nothing.
pub(crate) fn strtod(s: &[u8], start: usize) -> Option<(f64, usize)> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut p = start;
    while matches!(at(p), b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        p += 1;
    }
    let negative = at(p) == b'-';
    if matches!(at(p), b'+' | b'-') {
        p += 1;
    }
    let sign = |v: f64| if negative { -v } else { v };
    if starts_with_ci(s, p, b"inf") {
        let end = if starts_with_ci(s, p + 3, b"inity") {
            p + 8
        } else {
            p + 3
        };
        return Some((sign(f64::INFINITY), end));
    }
    if starts_with_ci(s, p, b"nan") {
        let mut end = p + 3;
        if at(end) == b'(' {
            let mut q = end + 1;
            while at(q).is_ascii_alphanumeric() || at(q) == b'_' {
                q += 1;
            }
            if at(q) == b')' {
                end = q + 1;
            }
        }
        return Some((sign(f64::NAN), end));
    }
    if at(p) == b'0'
        && (at(p + 1) | 0x20) == b'x'
        && (at(p + 2).is_ascii_hexdigit() || (at(p + 2) == b'.' && at(p + 3).is_ascii_hexdigit()))
    {
        let (v, end) = hex_float(s, p + 2);
        return Some((sign(v), end));
    }
    let int_start = p;
    while at(p).is_ascii_digit() {
        p += 1;
    }
    let int_digits = &s[int_start..p];
    let mut frac_digits: &[u8] = &[];
    if at(p) == b'.' {
        let frac_start = p + 1;
        let mut q = frac_start;
        while at(q).is_ascii_digit() {
            q += 1;
        }
        if int_digits.is_empty() && q == frac_start {
            return None;
        }
        frac_digits = &s[frac_start..q];
        p = q;
    } else if int_digits.is_empty() {
        return None;
    }
    let mut exp_text: &[u8] = b"0";
    if (at(p) | 0x20) == b'e' {
        let mut q = p + 1;
        if matches!(at(q), b'+' | b'-') {
            q += 1;
        }
        let digits_start = q;
        while at(q).is_ascii_digit() {
            q += 1;
        }
        if q > digits_start {
            exp_text = &s[p + 1..q];
            p = q;
        }
    }
    let text = format!(
        "{}.{}e{}",
        ascii_or(int_digits, "0"),
        ascii_or(frac_digits, "0"),
        ascii_or(exp_text, "0")
    );
    let value: f64 = text.parse().ok()?;
    Some((sign(value), p))
}

fn ascii_or<'a>(digits: &'a [u8], empty: &'a str) -> &'a str {
    match std::str::from_utf8(digits) {
        Ok(s) if !s.is_empty() => s,
        _ => empty,
    }
}

fn starts_with_ci(s: &[u8], p: usize, word: &[u8]) -> bool {
    word.iter()
        .enumerate()
        .all(|(i, &w)| s.get(p + i).is_some_and(|&c| c.to_ascii_lowercase() == w))
}

/// A hexadecimal float's digits from `p` (just after `0x`), rounded to nearest-even.
fn hex_float(s: &[u8], mut p: usize) -> (f64, usize) {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut mantissa: u64 = 0;
    let mut sticky = false;
    // Binary exponent of the mantissa's last bit.
    let mut exp2: i64 = 0;
    let mut seen_point = false;
    loop {
        let c = at(p);
        if c == b'.' && !seen_point {
            seen_point = true;
            p += 1;
            continue;
        }
        let Some(d) = char::from(c).to_digit(16) else {
            break;
        };
        if mantissa >> 60 == 0 {
            mantissa = (mantissa << 4) | u64::from(d);
            if seen_point {
                exp2 -= 4;
            }
        } else {
            sticky |= d != 0;
            if !seen_point {
                exp2 += 4;
            }
        }
        p += 1;
    }
    if (at(p) | 0x20) == b'p' {
        let mut q = p + 1;
        let negative = at(q) == b'-';
        if matches!(at(q), b'+' | b'-') {
            q += 1;
        }
        let digits_start = q;
        let mut e: i64 = 0;
        while at(q).is_ascii_digit() {
            e = (e * 10 + i64::from(at(q) - b'0')).min(1 << 40);
            q += 1;
        }
        if q > digits_start {
            exp2 += if negative { -e } else { e };
            p = q;
        }
    }
    (compose(mantissa, sticky, exp2), p)
}

/// `mantissa * 2^exp2` (plus less than one unit when `sticky`) rounded to an f64.
fn compose(mantissa: u64, sticky: bool, exp2: i64) -> f64 {
    if mantissa == 0 {
        return 0.0;
    }
    let bits = 64 - i64::from(mantissa.leading_zeros());
    // The value lies in [2^top, 2^(top+1)).
    let top = exp2 + bits - 1;
    if top > 1023 {
        return f64::INFINITY;
    }
    // Significant bits an f64 keeps at this magnitude (fewer when subnormal).
    let keep = if top >= -1022 { 53 } else { top + 1075 };
    if keep <= 0 {
        // Below half the smallest subnormal, or exactly half of it without more bits.
        let half = keep == 0 && (mantissa.is_power_of_two() && !sticky);
        return if keep == 0 && !half {
            f64::from_bits(1)
        } else {
            0.0
        };
    }
    let shift = bits - keep;
    let (mut kept, mut scale) = (mantissa, exp2);
    if shift > 0 {
        let dropped = mantissa & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        kept = mantissa >> shift;
        scale += shift;
        let round_up = dropped > half || (dropped == half && (sticky || kept & 1 == 1));
        if round_up {
            kept += 1;
        }
    }
    ldexp(kept as f64, scale)
}

/// `x * 2^e`, exact while the result is representable.
fn ldexp(mut x: f64, mut e: i64) -> f64 {
    while e > 1000 {
        x *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 {
        x *= 2f64.powi(-1000);
        e += 1000;
    }
    x * 2f64.powi(e as i32)
}
