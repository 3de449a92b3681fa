//! Integers appended to output lines in decimal, without `fmt`'s
//! machinery: the ids of an inverted index's lines and the counts of word
//! count's are most of their output's bytes.

/// Digits written at a time: as many bytes as a `u128` holds.
const WIDE: usize = 16;
/// 10^WIDE.
const WIDE_POWER: u64 = 10u64.pow(WIDE as u32);

/// Appends `n` in decimal.
#[inline]
pub(crate) fn push_decimal(out: &mut Vec<u8>, n: u64) {
    if n < WIDE_POWER {
        let len = n.checked_ilog10().unwrap_or(0) as usize + 1;
        push_digits(out, n, len);
    } else {
        push_decimal(out, n / WIDE_POWER);
        push_digits(out, n % WIDE_POWER, WIDE);
    }
}

/// Appends the last `len` (at most [`WIDE`]) decimal digits of `n`, zero
/// padded. The digits are gathered in a register, the first in its lowest
/// byte, and appended as its 16 bytes, the unused tail then cut off: a
/// fixed-size store, where appending just the digits from a byte array is
/// a call to copy a few bytes, and reading them from one as a vector
/// stalls on the bytes just written.
#[inline]
fn push_digits(out: &mut Vec<u8>, mut n: u64, len: usize) {
    let mut digits = 0u128;
    for _ in 0..len {
        digits = digits << 8 | u128::from(b'0' + (n % 10) as u8);
        n /= 10;
    }
    out.extend_from_slice(&digits.to_le_bytes());
    out.truncate(out.len() - (WIDE - len));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_digit_count_and_the_extremes_print_as_fmt_does() {
        let mut all: Vec<u64> = vec![0, u64::MAX, u32::MAX as u64];
        all.extend(
            (0..20)
                .map(|k| 10u64.pow(k) - 1)
                .chain((0..20).map(|k| 10u64.pow(k))),
        );
        all.extend((0..5000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i % 64)));
        let mut out = b"x".to_vec();
        let mut want = String::from("x");
        for &n in &all {
            push_decimal(&mut out, n);
            out.push(b' ');
            want += &format!("{n} ");
        }
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
