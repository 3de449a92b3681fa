//! Integers appended to output lines in decimal, without `fmt`'s
//! machinery: the ids of an inverted index's lines and the counts of word
//! count's are most of their output's bytes.

/// Numbers below this (eight digits or fewer: every document id of an
/// index of up to 100 million lines) are converted at once by [`digits8`].
const SHORT: u64 = 100_000_000;
/// Digits written at a time on the long path: as many bytes as a `u128`
/// holds.
const WIDE: usize = 16;
/// 10^WIDE.
const WIDE_POWER: u64 = 10u64.pow(WIDE as u32);

/// Appends `n` in decimal.
#[inline]
fn push_decimal(out: &mut Vec<u8>, n: u64) {
    if n < SHORT {
        push_short(out, None, n as u32);
    } else if n < WIDE_POWER {
        push_digits(out, n, n.ilog10() as usize + 1);
    } else {
        push_decimal(out, n / WIDE_POWER);
        push_digits(out, n % WIDE_POWER, WIDE);
    }
}

/// Appends `sep` and then `n` in decimal: one store for both when `n` is
/// short (an inverted index's `,id`).
#[inline]
pub(crate) fn push_after(out: &mut Vec<u8>, sep: u8, n: u64) {
    if n < SHORT {
        push_short(out, Some(sep), n as u32);
    } else {
        out.push(sep);
        push_decimal(out, n);
    }
}

/// Appends `head`, if any, and then `n` (below [`SHORT`]) in decimal, in
/// one 16-byte store whose unused tail is then cut off.
#[inline(always)]
fn push_short(out: &mut Vec<u8>, head: Option<u8>, n: u32) {
    let (digits, len) = short(n);
    let head_len = usize::from(head.is_some());
    let bytes = u128::from(digits) << (8 * head_len) | u128::from(head.unwrap_or(0));
    let at = out.len();
    out.extend_from_slice(&bytes.to_le_bytes());
    out.truncate(at + head_len + len);
}

/// The digits of `n` (below [`SHORT`]), the first in the lowest byte, and
/// how many there are.
#[inline(always)]
fn short(n: u32) -> (u64, usize) {
    let len = n.checked_ilog10().unwrap_or(0) as usize + 1;
    (digits8(n) >> ((8 - len) * 8), len)
}

/// The eight decimal digits of `n` (below [`SHORT`]), zero padded, as ASCII
/// in a `u64`, the first digit in its lowest byte. The digits are split in
/// SIMD-within-a-register steps, each a multiply and a shift per lane for
/// all lanes at once, where a digit at a time is a chain of eight
/// dependent divisions: the number into two 4-digit halves (32-bit lanes),
/// each half into two 2-digit pairs (16-bit lanes), each pair into two
/// digits (8-bit lanes). A lane's product never reaches the next lane:
/// 9,999 * 10,486 < 2^32, 99 * 103 < 2^16.
#[inline(always)]
fn digits8(n: u32) -> u64 {
    let n = u64::from(n);
    let high = n / 10_000;
    let halves = high | (n - high * 10_000) << 32;
    // x * 10,486 >> 20 is x / 100 for x < 10,000.
    let hundreds = ((halves * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let pairs = hundreds | (halves - hundreds * 100) << 16;
    // x * 103 >> 10 is x / 10 for x < 100.
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    let digits = tens | (pairs - tens * 10) << 8;
    digits | 0x3030_3030_3030_3030
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
    use proptest::prelude::*;

    /// `push_decimal` and `push_after` of every number in `all`, each
    /// after a space, against `fmt`.
    fn check(all: &[u64]) {
        let (mut out, mut after) = (b"x".to_vec(), b"x".to_vec());
        let mut want = String::from("x");
        for &n in all {
            out.push(b' ');
            push_decimal(&mut out, n);
            push_after(&mut after, b' ', n);
            want += &format!(" {n}");
        }
        assert_eq!(String::from_utf8(out).unwrap(), want);
        assert_eq!(String::from_utf8(after).unwrap(), want);
    }

    #[test]
    fn every_digit_count_and_the_extremes_print_as_fmt_does() {
        let mut all: Vec<u64> = vec![0, u64::MAX, u32::MAX as u64, SHORT - 1, SHORT];
        all.extend(
            (0..20)
                .map(|k| 10u64.pow(k) - 1)
                .chain((0..20).map(|k| 10u64.pow(k))),
        );
        all.extend((0..5000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i % 64)));
        check(&all);
    }

    #[test]
    fn every_number_below_a_million_converts_at_once_as_fmt_prints_it() {
        for n in 0..1_000_000u32 {
            let (digits, len) = short(n);
            assert_eq!(&digits.to_le_bytes()[..len], n.to_string().as_bytes());
            assert!(digits.to_le_bytes()[len..].iter().all(|&b| b == 0), "{n}");
        }
    }

    proptest! {
        #[test]
        fn numbers_print_as_fmt_does(small in proptest::collection::vec(0..SHORT, 0..50),
                                     any_u64 in proptest::collection::vec(any::<u64>(), 0..10)) {
            check(&small);
            check(&any_u64);
        }
    }
}
