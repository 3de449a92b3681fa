//! Byte sizes as people write them (`64KiB`, `1.5GiB`, `100MB`): one
//! parser for the CLI's size options and the Python package's keyword
//! arguments, so that both accept the same spellings with the same errors.
//! Sizes are parsed exactly, in whole bytes (no floating point), and
//! [`format_size`] writes them back in a form that parses to the same
//! number.

/// Units and their bytes; the first name of each is the one
/// [`format_size`] writes. Names match without regard to case.
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

/// Fraction digits that count: the rest are below a millionth of a byte in
/// any unit.
const FRACTION_DIGITS: usize = 18;

/// Why a size did not parse; its message quotes the text and names the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// No number before the unit (`MiB`, `-4`, `1.2.3`).
    #[error("'{0}' is not a size (try 4096, 64KiB, 100MB, 1GiB)")]
    NotANumber(String),
    /// A number with a unit that is not one of the known ones.
    #[error("'{0}' has an unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)")]
    UnknownUnit(String),
    /// More bytes than a `u64` holds.
    #[error("'{0}' is more than 18446744073709551615 bytes")]
    TooLarge(String),
}

/// Parses a byte size: a number (fractions allowed) and an optional unit,
/// binary (`K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB`) or decimal (`KB`,
/// `MB`, `GB`, `TB`), case-insensitive, to the nearest whole byte.
///
/// ```
/// use ember::tune::parse_size;
///
/// assert_eq!(parse_size("64KiB"), Ok(65536));
/// assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
/// assert!(parse_size("12 parsecs").is_err());
/// ```
///
/// # Errors
///
/// [`SizeError`] when there is no number, the unit is unknown, or the size
/// is more than `u64::MAX` bytes.
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let not_a_size = || SizeError::NotANumber(s.to_string());
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
        return Err(SizeError::UnknownUnit(s.to_string()));
    };
    let too_large = || SizeError::TooLarge(s.to_string());
    // The whole part, exactly, in u128 (leading zeros aside).
    let whole = whole.trim_start_matches('0');
    if whole.len() > 20 {
        return Err(too_large());
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| not_a_size())?
    };
    // The fraction: its first digits as a numerator over 10^digits, rounded
    // to the nearest byte.
    let fraction = &fraction[..fraction.len().min(FRACTION_DIGITS)];
    let scale = 10u128.pow(fraction.len() as u32);
    let numerator: u128 = if fraction.is_empty() {
        0
    } else {
        fraction.parse().map_err(|_| not_a_size())?
    };
    let part = (numerator * u128::from(mult) + scale / 2) / scale;
    u64::try_from(whole * u128::from(mult) + part).map_err(|_| too_large())
}

/// Writes `bytes` in the largest unit that divides it exactly (`64KiB`,
/// `100MB`), or in bytes: [`parse_size`] reads it back to the same number.
///
/// ```
/// use ember::tune::{format_size, parse_size};
///
/// assert_eq!(format_size(65536), "64KiB");
/// assert_eq!(format_size(100_000_000), "100MB");
/// assert_eq!(format_size(1234), "1234B");
/// assert_eq!(parse_size(&format_size(u64::MAX)), Ok(u64::MAX));
/// ```
pub fn format_size(bytes: u64) -> String {
    let (names, mult) = UNITS
        .iter()
        .rev()
        .find(|&&(_, m)| bytes != 0 && bytes.is_multiple_of(m))
        .unwrap_or(&UNITS[0]);
    format!("{}{}", bytes / mult, names[0])
}

#[cfg(test)]
mod tests {
    use super::{format_size, parse_size, SizeError};

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("100MB"), Ok(100_000_000));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size(" 1.5GiB "), Ok(3 << 29));
        assert_eq!(parse_size("2 tb"), Ok(2_000_000_000_000));
        assert_eq!(parse_size(".5KiB"), Ok(512));
        assert_eq!(parse_size("0.0004KB"), Ok(0));
        assert_eq!(parse_size("0.0005KB"), Ok(1));
    }

    #[test]
    fn bad_sizes_say_why() {
        assert_eq!(
            parse_size("12 parsecs"),
            Err(SizeError::UnknownUnit("12 parsecs".into()))
        );
        for bad in ["MiB", "-4", ".", "1.2.3"] {
            assert_eq!(parse_size(bad), Err(SizeError::NotANumber(bad.into())));
        }
        assert_eq!(
            parse_size("MiB").unwrap_err().to_string(),
            "'MiB' is not a size (try 4096, 64KiB, 100MB, 1GiB)"
        );
    }

    /// An earlier parser read the number as an `f64`: a byte count above
    /// 2^53 came back rounded (9007199254740993 as ...992), and one above
    /// `u64::MAX` saturated to `u64::MAX` instead of failing.
    #[test]
    fn large_sizes_are_exact_or_refused() {
        assert_eq!(parse_size("9007199254740993"), Ok(9_007_199_254_740_993));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_size("16777215.999999999999TiB"), Ok(u64::MAX));
        for big in [
            "18446744073709551616",
            "16777216TiB",
            "99999999999999999999999999GB",
        ] {
            assert_eq!(
                parse_size(big).unwrap_err().to_string(),
                format!("'{big}' is more than 18446744073709551615 bytes")
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
            assert_eq!(
                parse_size(&format_size(n)),
                Ok(n),
                "{n} as {}",
                format_size(n)
            );
        }
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1 << 20), "1MiB");
    }
}
