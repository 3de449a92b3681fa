//! Byte and text strings as keys: [`Bytes`] (short keys inline), `Vec<u8>`,
//! `String` and `[u8; N]`, all hashed alike.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

use super::{fold_mul, hash_words, Key, K0, K1, K2};

/// Longest key stored inline in a [`Bytes`] (no heap allocation).
pub const INLINE_KEY_BYTES: usize = 16;

/// An owned byte-string key: keys of up to [`INLINE_KEY_BYTES`] bytes are
/// stored inline, longer ones on the heap. 24 bytes in all.
///
/// Ordered, compared and hashed as the byte string it holds. Emitted from
/// `map` as a `&[u8]`.
#[derive(Clone)]
pub struct Bytes(Repr);

#[derive(Clone)]
enum Repr {
    /// `bytes[len..]` is zero, so two inline keys are equal exactly when
    /// their lengths and both 8-byte words are.
    Inline {
        len: u8,
        bytes: InlineBytes,
    },
    Heap(Box<[u8]>),
}

/// The bytes of an inline key, aligned as a `u64`: the two words then sit
/// at offsets 8 and 16 of a [`Bytes`], where the heap form keeps its pointer
/// and length. Building either form writes whole words at the same
/// offsets, so once the insert path is inlined into `emit`, the optimizer
/// keeps a probe's words in registers; at offsets 2 and 10 (unaligned) the
/// words straddle the heap form's fields, and it cuts them into pieces that
/// every lookup reassembles.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct InlineBytes([u8; INLINE_KEY_BYTES]);

impl Bytes {
    /// Copies a byte string into a key.
    pub fn new(s: &[u8]) -> Self {
        Self::from_probe(&Self::probe(s))
    }

    /// The key's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes.0[..*len as usize],
            Repr::Heap(b) => b,
        }
    }
}

/// A byte-string key prepared for lookup: for short keys the bytes loaded,
/// zero-padded, into two words, so that comparing is three integer compares.
#[derive(Debug, Clone, Copy)]
pub struct BytesProbe<'a> {
    bytes: &'a [u8],
    words: [u64; 2],
    hash: u64,
}

impl<'a> BytesProbe<'a> {
    /// The probe of `buf[start..end]`, equal to
    /// `Bytes::probe(&buf[start..end])`. Faster for a short key followed in
    /// `buf` by the rest of a 16-byte block (a word inside a larger text):
    /// its bytes are then one load and a mask, where a key alone in its
    /// slice takes four overlapping loads that must not read past its end.
    ///
    /// # Panics
    ///
    /// If `start..end` is not a range of `buf`.
    #[inline(always)]
    pub fn within(buf: &'a [u8], start: usize, end: usize) -> Self {
        let key = &buf[start..end];
        match buf.get(start..start + INLINE_KEY_BYTES) {
            Some(block) if key.len() <= INLINE_KEY_BYTES => {
                let [m0, m1] = KEY_MASKS[key.len()];
                let words = [read_u64(block, 0) & m0, read_u64(block, 8) & m1];
                BytesProbe::short(key, words)
            }
            _ => Bytes::probe(key),
        }
    }

    /// The probe of a key of at most [`INLINE_KEY_BYTES`] bytes, `words`
    /// being its bytes loaded little-endian and zero-padded.
    #[inline(always)]
    fn short(bytes: &'a [u8], words: [u64; 2]) -> Self {
        BytesProbe {
            bytes,
            words,
            hash: hash_words(words[0], words[1], bytes.len() as u64),
        }
    }
}

impl Default for BytesProbe<'_> {
    /// The probe of the empty key.
    fn default() -> Self {
        BytesProbe::short(&[], [0, 0])
    }
}

/// For each key length up to [`INLINE_KEY_BYTES`], the two words' masks
/// over a key's bytes (a table, not variable shifts of a `u128`, which
/// take several instructions each).
const KEY_MASKS: [[u64; 2]; INLINE_KEY_BYTES + 1] = {
    let mut masks = [[0; 2]; INLINE_KEY_BYTES + 1];
    let mut n = 1;
    while n <= INLINE_KEY_BYTES {
        let byte = 0xFFu64 << (8 * ((n - 1) % 8));
        masks[n] = masks[n - 1];
        masks[n][(n - 1) / 8] |= byte;
        n += 1;
    }
    masks
};

#[inline(always)]
fn read_u64(s: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"))
}

#[inline(always)]
fn read_u32(s: &[u8], at: usize) -> u64 {
    u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes")) as u64
}

/// Loads a slice of at most 16 bytes into two little-endian words, zero
/// padded, without reading past its end: from 4 bytes up, four
/// overlapping 4-byte loads placed at their offsets (no branch on the
/// length class, which mispredicts on words of random lengths).
#[inline(always)]
fn load_short(s: &[u8]) -> [u64; 2] {
    let n = s.len();
    debug_assert!(n <= INLINE_KEY_BYTES);
    if n >= 4 {
        let at = |i: usize| (read_u32(s, i) as u128) << (8 * i);
        let last = n - 4;
        let w = at(0) | at(4.min(last)) | at(8.min(last)) | at(last);
        [w as u64, (w >> 64) as u64]
    } else if n > 0 {
        let a =
            s[0] as u64 | (s[n / 2] as u64) << (8 * (n / 2)) | (s[n - 1] as u64) << (8 * (n - 1));
        [a, 0]
    } else {
        [0, 0]
    }
}

#[inline]
fn hash_long(s: &[u8]) -> u64 {
    let mut h = K2 ^ s.len() as u64;
    let mut chunks = s.chunks_exact(16);
    for c in &mut chunks {
        h = fold_mul(read_u64(c, 0) ^ K0 ^ h, read_u64(c, 8) ^ K1);
    }
    let [a, b] = load_short(chunks.remainder());
    hash_words(a ^ h, b, s.len() as u64)
}

/// The hash of a byte string, as [`Bytes`] hashes it.
#[inline]
pub(super) fn hash_bytes(s: &[u8]) -> u64 {
    if s.len() <= INLINE_KEY_BYTES {
        let [a, b] = load_short(s);
        hash_words(a, b, s.len() as u64)
    } else {
        hash_long(s)
    }
}

impl Borrow<[u8]> for Bytes {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Key for Bytes {
    type Ref<'a> = &'a [u8];
    type Borrowed<'a> = [u8];
    type Probe<'a> = BytesProbe<'a>;

    #[inline(always)]
    fn probe<'a>(s: Self::Ref<'a>) -> Self::Probe<'a> {
        if s.len() <= INLINE_KEY_BYTES {
            BytesProbe::short(s, load_short(s))
        } else {
            BytesProbe {
                bytes: s,
                words: [0, 0],
                hash: hash_long(s),
            }
        }
    }

    #[inline(always)]
    fn probe_ref<'a>(p: &Self::Probe<'a>) -> Self::Ref<'a> {
        p.bytes
    }

    #[inline(always)]
    fn probe_hash(p: &BytesProbe<'_>) -> u64 {
        p.hash
    }

    #[inline(always)]
    fn matches(&self, p: &BytesProbe<'_>) -> bool {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                *len as usize == p.bytes.len()
                    && read_u64(&bytes.0, 0) == p.words[0]
                    && read_u64(&bytes.0, 8) == p.words[1]
            }
            Repr::Heap(b) => **b == *p.bytes,
        }
    }

    #[inline]
    fn from_probe(p: &BytesProbe<'_>) -> Self {
        if p.bytes.len() <= INLINE_KEY_BYTES {
            let mut bytes = [0u8; INLINE_KEY_BYTES];
            bytes[..8].copy_from_slice(&p.words[0].to_le_bytes());
            bytes[8..].copy_from_slice(&p.words[1].to_le_bytes());
            Bytes(Repr::Inline {
                len: p.bytes.len() as u8,
                bytes: InlineBytes(bytes),
            })
        } else {
            Bytes(Repr::Heap(p.bytes.into()))
        }
    }

    #[inline]
    fn hash_owned(&self) -> u64 {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                hash_words(read_u64(&bytes.0, 0), read_u64(&bytes.0, 8), *len as u64)
            }
            Repr::Heap(b) => hash_long(b),
        }
    }

    #[inline(always)]
    fn borrow_ref<'a, 'r>(r: &'a Self::Ref<'r>) -> &'a Self::Borrowed<'r> {
        r
    }
}

/// Fixed-size byte keys (for example the 10-byte keys of sort records),
/// ordered as byte strings.
impl<const N: usize> Key for [u8; N] {
    type Ref<'a> = &'a [u8; N];
    type Borrowed<'a> = [u8; N];
    type Probe<'a> = (&'a [u8; N], u64);

    #[inline(always)]
    fn probe<'a>(r: Self::Ref<'a>) -> Self::Probe<'a> {
        (r, hash_long(r))
    }
    #[inline(always)]
    fn probe_ref<'a>(p: &Self::Probe<'a>) -> Self::Ref<'a> {
        p.0
    }
    #[inline(always)]
    fn probe_hash(p: &Self::Probe<'_>) -> u64 {
        p.1
    }
    #[inline(always)]
    fn matches(&self, p: &Self::Probe<'_>) -> bool {
        self == p.0
    }
    #[inline]
    fn from_probe(p: &Self::Probe<'_>) -> Self {
        *p.0
    }
    #[inline]
    fn hash_owned(&self) -> u64 {
        hash_long(self)
    }
    #[inline(always)]
    fn borrow_ref<'a, 'r>(r: &'a Self::Ref<'r>) -> &'a Self::Borrowed<'r> {
        r
    }
}

impl PartialEq for Bytes {
    /// Two inline keys compare as three words (their padding is zero), not
    /// with a `memcmp` call: joining tables compares owned keys.
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Inline { len: a, bytes: x }, Repr::Inline { len: b, bytes: y }) => {
                let (x, y) = (&x.0, &y.0);
                a == b && read_u64(x, 0) == read_u64(y, 0) && read_u64(x, 8) == read_u64(y, 8)
            }
            _ => self.as_bytes() == other.as_bytes(),
        }
    }
}
impl Eq for Bytes {}
impl PartialOrd for Bytes {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Bytes {
    /// Two inline keys compare as their words read big-endian, then their
    /// lengths (their padding is zero, so a key that is a prefix of the
    /// other comes first either way), not with a `memcmp` call: sorting the
    /// output compares keys.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            (Repr::Inline { len: a, bytes: x }, Repr::Inline { len: b, bytes: y }) => {
                let be = |s: &[u8; INLINE_KEY_BYTES], at| u64::from_be(read_u64(s, at));
                let (x, y) = (&x.0, &y.0);
                (be(x, 0), be(x, 8), a).cmp(&(be(y, 0), be(y, 8), b))
            }
            _ => self.as_bytes().cmp(other.as_bytes()),
        }
    }
}
impl std::hash::Hash for Bytes {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}
impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}
impl From<&[u8]> for Bytes {
    fn from(s: &[u8]) -> Self {
        Bytes::new(s)
    }
}
impl From<&str> for Bytes {
    fn from(s: &str) -> Self {
        Bytes::new(s.as_bytes())
    }
}

/// `Key` for an owned byte or text string emitted as its slice: hashed as
/// [`Bytes`] hashes the same bytes, ordered as the slice.
macro_rules! slice_key {
    ($owned:ty, $slice:ty) => {
        impl Key for $owned {
            type Ref<'a> = &'a $slice;
            type Borrowed<'a> = $slice;
            type Probe<'a> = (&'a $slice, u64);
            #[inline(always)]
            fn probe<'a>(r: Self::Ref<'a>) -> Self::Probe<'a> {
                (r, hash_bytes(r.as_ref()))
            }
            #[inline(always)]
            fn probe_ref<'a>(p: &Self::Probe<'a>) -> Self::Ref<'a> {
                p.0
            }
            #[inline(always)]
            fn probe_hash(p: &Self::Probe<'_>) -> u64 {
                p.1
            }
            #[inline(always)]
            fn matches(&self, p: &Self::Probe<'_>) -> bool {
                Borrow::<$slice>::borrow(self) == p.0
            }
            #[inline]
            fn from_probe(p: &Self::Probe<'_>) -> Self {
                p.0.to_owned()
            }
            #[inline]
            fn hash_owned(&self) -> u64 {
                hash_bytes(Borrow::<$slice>::borrow(self).as_ref())
            }
            #[inline(always)]
            fn borrow_ref<'a, 'r>(r: &'a Self::Ref<'r>) -> &'a Self::Borrowed<'r> {
                r
            }
        }
    };
}
slice_key!(String, str);
slice_key!(Vec<u8>, [u8]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_loads_are_the_bytes_zero_padded_at_every_length() {
        let data: Vec<u8> = (1..=40u8).map(|b| b.wrapping_mul(37) | 1).collect();
        for start in 0..8 {
            for n in 0..=INLINE_KEY_BYTES {
                let s = &data[start..start + n];
                let mut padded = [0u8; INLINE_KEY_BYTES];
                padded[..n].copy_from_slice(s);
                let want = [read_u64(&padded, 0), read_u64(&padded, 8)];
                assert_eq!(load_short(s), want, "{start} {n}");
            }
        }
    }

    proptest::proptest! {
        /// A probe prepared inside a buffer is the probe of the key alone,
        /// for keys of every length, at every place in the buffer (a block
        /// or less before its end, at its start and end, empty).
        #[test]
        fn probes_within_a_buffer_are_the_keys_own(
            buf in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48),
            a in 0usize..48,
            b in 0usize..48,
        ) {
            let (start, end) = (a.min(b).min(buf.len()), a.max(b).min(buf.len()));
            let got = BytesProbe::within(&buf, start, end);
            let want = Bytes::probe(&buf[start..end]);
            proptest::prop_assert_eq!(got.bytes, want.bytes);
            proptest::prop_assert_eq!(got.words, want.words);
            proptest::prop_assert_eq!(got.hash, want.hash);
            proptest::prop_assert_eq!(Bytes::probe_ref(&got), &buf[start..end]);
        }
    }

    #[test]
    fn the_default_probe_is_the_empty_keys() {
        let (got, want) = (BytesProbe::default(), Bytes::probe(&[]));
        assert_eq!(
            (got.bytes, got.words, got.hash),
            (want.bytes, want.words, want.hash)
        );
    }
}
