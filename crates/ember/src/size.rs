//! Byte sizes as people write them (`64KiB`, `1.5GiB`, `100MB`): one
//! parser for the CLI's size options and the Python package's keyword
//! arguments, so that both accept the same spellings with the same errors.

/// Why a size did not parse; its message names the text and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// No number before the unit (`MiB`, `-4`, `1.2.3`).
    #[error("'{0}' is not a size (try 4096, 64KiB, 100MB, 1GiB)")]
    NotANumber(String),
    /// A number with a unit that is not one of the known ones.
    #[error("'{0}' has an unknown unit (use B, KiB, MiB, GiB, KB, MB, GB)")]
    UnknownUnit(String),
}

/// Parses a byte size: a number (fractions allowed) and an optional unit,
/// binary (`K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB`) or decimal (`KB`,
/// `MB`, `GB`, `TB`), case-insensitive, rounded to a whole byte.
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
/// [`SizeError`] when there is no number or the unit is unknown.
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| SizeError::NotANumber(s.to_string()))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "kb" => 1_000,
        "m" | "mib" => 1 << 20,
        "mb" => 1_000_000,
        "g" | "gib" => 1 << 30,
        "gb" => 1_000_000_000,
        "t" | "tib" => 1 << 40,
        "tb" => 1_000_000_000_000,
        _ => return Err(SizeError::UnknownUnit(s.to_string())),
    };
    Ok((n * mult as f64).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::{parse_size, SizeError};

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("100MB"), Ok(100_000_000));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size(" 1.5GiB "), Ok(3 << 29));
        assert_eq!(parse_size("2 tb"), Ok(2_000_000_000_000));
    }

    #[test]
    fn bad_sizes_say_why() {
        assert_eq!(
            parse_size("12 parsecs"),
            Err(SizeError::UnknownUnit("12 parsecs".into()))
        );
        assert_eq!(parse_size("MiB"), Err(SizeError::NotANumber("MiB".into())));
        assert_eq!(parse_size("-4"), Err(SizeError::NotANumber("-4".into())));
        assert_eq!(
            parse_size("MiB").unwrap_err().to_string(),
            "'MiB' is not a size (try 4096, 64KiB, 100MB, 1GiB)"
        );
    }
}
