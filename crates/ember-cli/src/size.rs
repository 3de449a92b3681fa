//! Byte sizes on the command line (`--split-size 64KiB`, `--memory-limit
//! 1.5GiB`): parsed exactly, in whole bytes, and written back in the same
//! form.

/// Units and their bytes; the first name of each is the one [`format`]
/// writes. Names match without regard to case.
const UNITS: [(&[&str], u64); 9] = [
    (&["B", ""], 1),
    (&["KiB", "k"], 1 << 10),
    (&["KB"], 1_000),
    (&["MiB", "m"], 1 << 20),
    (&["MB"], 1_000_000),
    (&["GiB", "g"], 1 << 30),
    (&["GB"], 1_000_000_000),
    (&["TiB", "t"], 1 << 40),
    (&["TB"], 1_000_000_000_000),
];

/// Fraction digits that count: the rest are below a millionth of a byte
/// in any unit.
const FRACTION_DIGITS: usize = 18;

/// Parses a byte size: `4096`, `64KiB`, `100MB`, `1.5GiB`, `256M`, to the
/// nearest byte. An error (a number missing or malformed, an unknown
/// unit, more than `u64::MAX` bytes) quotes the text.
///
/// ```
/// use ember_cli::size::parse;
///
/// assert_eq!(parse("64KiB"), Ok(65536));
/// assert_eq!(parse("1.5 GiB"), Ok(3 << 29));
/// assert!(parse("12 parsecs").unwrap_err().contains("'12 parsecs'"));
/// ```
pub fn parse(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let not_a_size = || format!("'{s}' is not a size (try 4096, 64KiB, 100MB, 1GiB)");
    let (whole, fraction) = num.split_once('.').unwrap_or((num, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if whole.len() + fraction.len() == 0 || !digits(whole) || !digits(fraction) {
        return Err(not_a_size());
    }
    let unit = unit.trim();
    let Some(&(_, mult)) = UNITS
        .iter()
        .find(|(names, _)| names.iter().any(|n| n.eq_ignore_ascii_case(unit)))
    else {
        return Err(format!(
            "'{s}' has an unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
        ));
    };
    let too_large = || format!("'{s}' is more than {} bytes", u64::MAX);
    // Whole part: exact, in u128 (the leading zeros of "000...1" aside).
    let whole = whole.trim_start_matches('0');
    if whole.len() > 20 {
        return Err(too_large());
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| not_a_size())?
    };
    // Fraction: its first digits, as a numerator over 10^digits, rounded
    // to the nearest byte.
    let fraction = &fraction[..fraction.len().min(FRACTION_DIGITS)];
    let scale = 10u128.pow(fraction.len() as u32);
    let numerator: u128 = if fraction.is_empty() {
        0
    } else {
        fraction.parse().map_err(|_| not_a_size())?
    };
    let part = (numerator * u128::from(mult) + scale / 2) / scale;
    let bytes = whole * u128::from(mult) + part;
    u64::try_from(bytes).map_err(|_| too_large())
}

/// Writes `bytes` as the largest unit that divides it exactly (`64KiB`,
/// `100MB`), or in bytes: [`parse`] reads it back to the same number.
///
/// ```
/// use ember_cli::size::{format, parse};
///
/// assert_eq!(format(65536), "64KiB");
/// assert_eq!(format(100_000_000), "100MB");
/// assert_eq!(format(1234), "1234B");
/// assert_eq!(parse(&format(u64::MAX)), Ok(u64::MAX));
/// ```
pub fn format(bytes: u64) -> String {
    let (names, mult) = UNITS
        .iter()
        .rev()
        .find(|&&(_, m)| bytes != 0 && bytes.is_multiple_of(m))
        .unwrap_or(&UNITS[0]);
    format!("{}{}", bytes / mult, names[0])
}

#[cfg(test)]
mod tests {
    use super::{format, parse};

    #[test]
    fn sizes_parse() {
        assert_eq!(parse("4096"), Ok(4096));
        assert_eq!(parse("64KiB"), Ok(65536));
        assert_eq!(parse("100MB"), Ok(100_000_000));
        assert_eq!(parse("256MiB"), Ok(256 << 20));
        assert_eq!(parse("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse(" 2 tb "), Ok(2_000_000_000_000));
        assert_eq!(parse(".5KiB"), Ok(512));
        assert_eq!(parse("0.0004KB"), Ok(0));
        assert_eq!(parse("0.0005KB"), Ok(1));
        assert!(parse("12 parsecs").is_err());
        assert!(parse("MiB").is_err());
        assert!(parse(".").is_err());
        assert!(parse("1.2.3").is_err());
    }

    /// The parser this one replaced read the number as an `f64`: a byte
    /// count above 2^53 came back rounded (9007199254740993 as ...992),
    /// and one above `u64::MAX` saturated to `u64::MAX` instead of failing.
    #[test]
    fn large_sizes_are_exact_or_refused() {
        assert_eq!(parse("9007199254740993"), Ok(9_007_199_254_740_993));
        assert_eq!(parse("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse("16777215.999999999999TiB"), Ok(u64::MAX));
        for big in [
            "18446744073709551616",
            "16777216TiB",
            "99999999999999999999999999GB",
        ] {
            assert_eq!(
                parse(big),
                Err(format!("'{big}' is more than 18446744073709551615 bytes"))
            );
        }
    }

    #[test]
    fn formatted_sizes_parse_back() {
        for n in [
            0,
            1,
            1023,
            1024,
            1000,
            3 << 29,
            1 << 40,
            u64::MAX,
            u64::MAX - 1,
        ] {
            assert_eq!(parse(&format(n)), Ok(n), "{n} as {}", format(n));
        }
        assert_eq!(format(0), "0B");
        assert_eq!(format(1 << 20), "1MiB");
    }
}
