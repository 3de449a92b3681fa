//! Keys: what `map` emits, what containers store, and how both are hashed
//! and compared.
//!
//! A job's key type has two forms. `map` emits the cheap borrowed form
//! ([`Key::Ref`], e.g. a `&[u8]` slice of the input); a container turns it
//! into a [`Key::Probe`] once per emit (hash computed, short keys loaded into
//! machine words) and copies it into the owned form only the first time it
//! sees the key (Metis' *keycopy*). The owned form is what reduce and the
//! output see.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

/// A key type usable by ember's containers.
///
/// The contract, relied on by every container:
/// `Key::probe_hash(&Key::probe(r)) == Key::from_probe(&Key::probe(r)).hash_owned()`,
/// and `k.matches(&Key::probe(r))` exactly when `k == Key::from_probe(&Key::probe(r))`.
pub trait Key: Ord + Send + Sync + Sized + Borrow<Self::Borrowed> + 'static {
    /// The form `map` emits: cheap to build, usually borrowed from the input.
    type Ref<'a>: Copy;
    /// The borrowed form ordered trees look keys up by (`[u8]` for
    /// [`Bytes`]); ordered exactly as the key.
    type Borrowed: ?Sized + Ord;
    /// The form a container looks a key up with: computed once per emit.
    type Probe<'a>;

    /// Prepares a lookup: hashes the key and loads what comparisons need.
    fn probe<'a>(r: Self::Ref<'a>) -> Self::Probe<'a>;
    /// The hash of a probe.
    fn probe_hash(p: &Self::Probe<'_>) -> u64;
    /// True when this stored key equals the probed one.
    fn matches(&self, p: &Self::Probe<'_>) -> bool;
    /// Copies a probed key into its owned form (done once per distinct key
    /// per worker).
    fn from_probe(p: &Self::Probe<'_>) -> Self;
    /// The hash of an owned key; equal to the hash of its probe.
    fn hash_owned(&self) -> u64;
    /// An emitted key in its borrowed form.
    fn borrow_ref<'a>(r: &'a Self::Ref<'_>) -> &'a Self::Borrowed;

    /// For integer keys: the key as an array index (the array container),
    /// `None` if it is negative or not an integer key.
    #[inline(always)]
    fn as_index(r: Self::Ref<'_>) -> Option<usize> {
        let _ = r;
        None
    }
    /// The key at an array index: the inverse of [`Key::as_index`].
    fn from_index(i: usize) -> Option<Self> {
        let _ = i;
        None
    }
}

/// Mixes two words into one 64-bit hash (the folded 128-bit multiply of
/// wyhash/foldhash: fast, and good in both the low bits hashbrown indexes
/// with and the top bits it tags with).
#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let full = (a as u128).wrapping_mul(b as u128);
    (full as u64) ^ ((full >> 64) as u64)
}

const K0: u64 = 0x243f_6a88_85a3_08d3;
const K1: u64 = 0x1319_8a2e_0370_7344;
const K2: u64 = 0xa409_3822_299f_31d0;

#[inline(always)]
fn hash_words(a: u64, b: u64, len: u64) -> u64 {
    fold_mul(a ^ K0, b ^ K1 ^ len.wrapping_mul(K2))
}

macro_rules! int_key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            type Ref<'a> = $t;
            type Borrowed = $t;
            type Probe<'a> = $t;
            #[inline(always)]
            fn probe<'a>(r: Self::Ref<'a>) -> Self::Probe<'a> { r }
            #[inline(always)]
            fn probe_hash(p: &$t) -> u64 { fold_mul(*p as u64 ^ K0, K1) }
            #[inline(always)]
            fn matches(&self, p: &$t) -> bool { self == p }
            #[inline(always)]
            fn from_probe(p: &$t) -> $t { *p }
            #[inline(always)]
            fn hash_owned(&self) -> u64 { Self::probe_hash(self) }
            #[inline(always)]
            fn borrow_ref(r: &$t) -> &$t { r }
            #[inline(always)]
            fn as_index(r: $t) -> Option<usize> { usize::try_from(r).ok() }
            fn from_index(i: usize) -> Option<$t> { <$t>::try_from(i).ok() }
        }
    )*};
}
int_key!(u8, u16, u32, u64, usize, i32, i64);

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
        bytes: [u8; INLINE_KEY_BYTES],
    },
    Heap(Box<[u8]>),
}

impl Bytes {
    /// Copies a byte string into a key.
    pub fn new(s: &[u8]) -> Self {
        Self::from_probe(&Self::probe(s))
    }

    /// The key's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
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

#[inline(always)]
fn read_u64(s: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"))
}

#[inline(always)]
fn read_u32(s: &[u8], at: usize) -> u64 {
    u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes")) as u64
}

/// Loads a slice of at most 16 bytes into two little-endian words, zero
/// padded, without reading past its end (overlapping loads, as wyhash does).
#[inline(always)]
fn load_short(s: &[u8]) -> [u64; 2] {
    let n = s.len();
    debug_assert!(n <= INLINE_KEY_BYTES);
    if n >= 8 {
        let tail = if n > 8 {
            read_u64(s, n - 8) >> (8 * (16 - n))
        } else {
            0
        };
        [read_u64(s, 0), tail]
    } else if n >= 4 {
        [read_u32(s, 0) | (read_u32(s, n - 4) << (8 * (n - 4))), 0]
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

impl Borrow<[u8]> for Bytes {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Key for Bytes {
    type Ref<'a> = &'a [u8];
    type Borrowed = [u8];
    type Probe<'a> = BytesProbe<'a>;

    #[inline(always)]
    fn probe<'a>(s: Self::Ref<'a>) -> Self::Probe<'a> {
        if s.len() <= INLINE_KEY_BYTES {
            let words = load_short(s);
            BytesProbe {
                bytes: s,
                words,
                hash: hash_words(words[0], words[1], s.len() as u64),
            }
        } else {
            BytesProbe {
                bytes: s,
                words: [0, 0],
                hash: hash_long(s),
            }
        }
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
                    && read_u64(bytes, 0) == p.words[0]
                    && read_u64(bytes, 8) == p.words[1]
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
                bytes,
            })
        } else {
            Bytes(Repr::Heap(p.bytes.into()))
        }
    }

    #[inline]
    fn hash_owned(&self) -> u64 {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                hash_words(read_u64(bytes, 0), read_u64(bytes, 8), *len as u64)
            }
            Repr::Heap(b) => hash_long(b),
        }
    }

    #[inline(always)]
    fn borrow_ref<'a>(r: &'a &[u8]) -> &'a [u8] {
        r
    }
}

/// Fixed-size byte keys (for example the 10-byte keys of sort records),
/// ordered as byte strings.
impl<const N: usize> Key for [u8; N] {
    type Ref<'a> = &'a [u8; N];
    type Borrowed = [u8; N];
    type Probe<'a> = (&'a [u8; N], u64);

    #[inline(always)]
    fn probe<'a>(r: Self::Ref<'a>) -> Self::Probe<'a> {
        (r, hash_long(r))
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
    fn borrow_ref<'a>(r: &'a &[u8; N]) -> &'a [u8; N] {
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
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bytes_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Bytes>(), 24);
    }

    proptest! {
        #[test]
        fn probe_contract_holds(a in proptest::collection::vec(any::<u8>(), 0..40),
                                b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let pa = Bytes::probe(&a);
            let ka = Bytes::from_probe(&pa);
            prop_assert_eq!(ka.as_bytes(), &a[..]);
            prop_assert_eq!(ka.hash_owned(), Bytes::probe_hash(&pa));
            prop_assert!(ka.matches(&pa));
            let pb = Bytes::probe(&b);
            prop_assert_eq!(ka.matches(&pb), a == b);
            prop_assert_eq!(ka.cmp(&Bytes::new(&b)), a.cmp(&b));
        }

        #[test]
        fn short_keys_differing_in_one_byte_differ(s in proptest::collection::vec(any::<u8>(), 1..=16), i in 0usize..16, x in 1u8..) {
            let i = i % s.len();
            let mut t = s.clone();
            t[i] ^= x;
            prop_assert!(!Bytes::new(&s).matches(&Bytes::probe(&t)));
        }
    }
}
