//! The word tokenizer of word count and inverted index, block at a time.
//!
//! A word is a maximal run of ASCII letters. The plain tokenizer
//! (`tokens_plain`, kept as the
//! tests' reference) looks every byte up in a class table and branches on
//! it, which costs a mispredicted branch at most word ends. This one
//! classifies 64 bytes at a time into two bit masks (letters, upper-case
//! letters), then walks the mask's *edges* (bits where a run of letters
//! starts or ends) with `trailing_zeros`: a few instructions per word
//! whatever its length.
//!
//! The masks come from a [`Kernel`]: AVX2 compares when the running CPU has
//! them (checked at run time), else a portable scalar loop. Both give the
//! same masks, so the same words; the tests check both against
//! `tokens_plain`.

/// Bytes classified at a time.
const BLOCK: usize = 64;

/// 0: not a letter; 1: lower-case letter; 2: upper-case letter.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match c as u8 {
            b'a'..=b'z' => 1,
            b'A'..=b'Z' => 2,
            _ => 0,
        };
        c += 1;
    }
    t
};

/// True for the bytes that separate words.
#[inline(always)]
pub(crate) fn is_separator(b: u8) -> bool {
    CLASS[b as usize] == 0
}

/// Calls `f(start, end, has_upper)` for every word `data[start..end]`, in
/// order: the byte-at-a-time reference the block tokenizer is tested
/// against.
#[cfg(test)]
pub(crate) fn tokens_plain(data: &[u8], mut f: impl FnMut(usize, usize, bool)) {
    let n = data.len();
    let mut i = 0;
    while i < n {
        while i < n && CLASS[data[i] as usize] == 0 {
            i += 1;
        }
        let start = i;
        let mut seen = 0;
        while i < n {
            let c = CLASS[data[i] as usize];
            if c == 0 {
                break;
            }
            seen |= c;
            i += 1;
        }
        if i > start {
            f(start, i, seen & 2 != 0);
        }
    }
}

/// How a block's masks are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// Portable: one table lookup per byte.
    Scalar,
    /// AVX2 compares, 32 bytes at a time (x86-64 CPUs that have AVX2).
    Avx2,
}

impl Kernel {
    /// The fastest kernel the running CPU supports.
    #[inline]
    pub(crate) fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Kernel::Avx2;
        }
        Kernel::Scalar
    }

    /// Every kernel the running CPU supports (for tests).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Kernel> {
        let mut all = vec![Kernel::Scalar];
        if Kernel::detect() == Kernel::Avx2 {
            all.push(Kernel::Avx2);
        }
        all
    }
}

/// A block's classes: bit `i` is byte `i` of the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Masks {
    /// ASCII letters.
    letters: u64,
    /// Upper-case ASCII letters.
    upper: u64,
}

/// The masks of a block, one table lookup per byte.
#[inline(always)]
fn masks_scalar(block: &[u8; BLOCK]) -> Masks {
    let (mut letters, mut upper) = (0u64, 0u64);
    for (i, &b) in block.iter().enumerate() {
        let c = CLASS[b as usize] as u64;
        letters |= u64::from(c != 0) << i;
        upper |= (c >> 1) << i;
    }
    Masks { letters, upper }
}

/// The masks of a block, with AVX2 compares.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn masks_avx2(block: &[u8; BLOCK]) -> Masks {
    use std::arch::x86_64::*;
    // Per 32 bytes: (letters, bytes with bit 5 clear).
    let half = |at: usize| {
        // SAFETY: `at + 32 <= BLOCK`, so the 32 bytes read lie in `block`;
        // the load has no alignment requirement.
        let b = unsafe { _mm256_loadu_si256(block.as_ptr().add(at).cast()) };
        // Setting bit 5 folds upper case onto lower case; a letter is then
        // a byte whose distance above 'a' is at most 25 (unsigned).
        let off = _mm256_sub_epi8(
            _mm256_or_si256(b, _mm256_set1_epi8(0x20)),
            _mm256_set1_epi8(b'a' as i8),
        );
        let letter = _mm256_cmpeq_epi8(_mm256_min_epu8(off, _mm256_set1_epi8(25)), off);
        // Bit 5 of each byte moved to bit 7, where movemask reads it (the
        // 16-bit shift carries bits across bytes only into bits 0-1).
        let lower_bit = _mm256_slli_epi16(b, 2);
        (
            _mm256_movemask_epi8(letter) as u32 as u64,
            !(_mm256_movemask_epi8(lower_bit) as u32) as u64,
        )
    };
    let (l0, c0) = half(0);
    let (l1, c1) = half(32);
    let letters = l0 | l1 << 32;
    Masks {
        letters,
        upper: letters & (c0 | c1 << 32),
    }
}

/// Bits `0..n` set, for `n < 64`.
#[inline(always)]
fn below(n: usize) -> u64 {
    (1u64 << n) - 1
}

/// Calls `f(start, end, has_upper)` for every word `data[start..end]`, in
/// order, the masks computed by `masks`.
#[inline(always)]
fn tokens_with(
    data: &[u8],
    masks: impl Fn(&[u8; BLOCK]) -> Masks,
    mut f: impl FnMut(usize, usize, bool),
) {
    // Inside a word: where it started and whether it had upper case in the
    // blocks before this one.
    let mut open: Option<(usize, bool)> = None;
    // 1 when the last byte of the previous block was a letter.
    let mut carry = 0u64;
    let mut tail = [0u8; BLOCK];
    for base in (0..data.len()).step_by(BLOCK) {
        let block: &[u8; BLOCK] = match data[base..].first_chunk() {
            Some(b) => b,
            None => {
                // The last, short block, padded with separators.
                let rest = &data[base..];
                tail[..rest.len()].copy_from_slice(rest);
                &tail
            }
        };
        let m = masks(block);
        // A bit for every byte whose class differs from the byte before:
        // words start and end there, alternately.
        let mut edges = m.letters ^ (m.letters << 1 | carry);
        carry = m.letters >> 63;
        while edges != 0 {
            let at = edges.trailing_zeros() as usize;
            edges &= edges - 1;
            match open.take() {
                None => open = Some((base + at, false)),
                Some((start, up)) => {
                    let from = start.saturating_sub(base);
                    let upper = m.upper & below(at) & !below(from) != 0;
                    f(start, base + at, up || upper);
                }
            }
        }
        if let Some((start, up)) = &mut open {
            *up |= m.upper >> start.saturating_sub(base) != 0;
        }
    }
    if let Some((start, up)) = open {
        f(start, data.len(), up);
    }
}

/// Calls `f(start, end, has_upper)` for every word `data[start..end]`, in
/// order, with the given kernel.
#[inline(always)]
pub(crate) fn tokens(kernel: Kernel, data: &[u8], f: impl FnMut(usize, usize, bool)) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Kernel::Avx2` is only chosen on CPUs with AVX2
        // (`Kernel::detect`, `Kernel::available`).
        Kernel::Avx2 => unsafe { tokens_avx2(data, f) },
        _ => tokens_with(data, masks_scalar, f),
    }
}

/// [`tokens_with`] and `f` compiled with AVX2 enabled, so the mask kernel
/// and `f` inline into one loop.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tokens_avx2(data: &[u8], f: impl FnMut(usize, usize, bool)) {
    // SAFETY: this function's caller guarantees AVX2.
    tokens_with(data, |b| unsafe { masks_avx2(b) }, f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn plain(data: &[u8]) -> Vec<(usize, usize, bool)> {
        let mut out = Vec::new();
        tokens_plain(data, |s, e, u| out.push((s, e, u)));
        out
    }

    fn blocked(kernel: Kernel, data: &[u8]) -> Vec<(usize, usize, bool)> {
        let mut out = Vec::new();
        tokens(kernel, data, |s, e, u| out.push((s, e, u)));
        out
    }

    #[test]
    fn kernels_give_the_scalar_masks_for_every_byte() {
        let mut block = [0u8; BLOCK];
        for first in (0..256).step_by(BLOCK) {
            for (i, b) in block.iter_mut().enumerate() {
                *b = (first + i) as u8;
            }
            let want = masks_scalar(&block);
            assert_eq!(want.letters.count_ones(), {
                block.iter().filter(|b| b.is_ascii_alphabetic()).count() as u32
            });
            #[cfg(target_arch = "x86_64")]
            if Kernel::detect() == Kernel::Avx2 {
                // SAFETY: AVX2 was detected.
                assert_eq!(unsafe { masks_avx2(&block) }, want);
            }
        }
    }

    #[test]
    fn words_across_blocks_and_at_the_ends() {
        let mut long = vec![b'a'; 200];
        long[70] = b'Q';
        long[130] = b' ';
        let texts: Vec<Vec<u8>> = vec![
            vec![],
            b"x".to_vec(),
            b" Hello, WORLD! caf\xc3\xa9 x2y\0z ".to_vec(),
            long,
            [vec![b' '; 63], b"Ab".to_vec(), vec![b'c'; 64]].concat(),
        ];
        for text in texts {
            for kernel in Kernel::available() {
                assert_eq!(blocked(kernel, &text), plain(&text), "{kernel:?}");
            }
        }
    }

    proptest! {
        /// Words of every length, upper case and bytes >= 0x80 anywhere,
        /// words straddling the 64-byte blocks.
        #[test]
        fn block_tokenizer_matches_the_plain_one(
            data in proptest::collection::vec(
                prop_oneof![
                    4 => b'a'..=b'z',
                    2 => b'A'..=b'Z',
                    1 => any::<u8>(),
                    1 => Just(b' '),
                ],
                0..700,
            ),
            skip in 0usize..64,
        ) {
            let data = &data[skip.min(data.len())..];
            for kernel in Kernel::available() {
                prop_assert_eq!(blocked(kernel, data), plain(data));
            }
        }
    }
}
