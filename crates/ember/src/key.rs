//! Keys: what `map` emits, what containers store, and how both are hashed
//! and compared.
//!
//! A job's key type has two forms. `map` emits the cheap borrowed form
//! ([`Key::Ref`], e.g. a `&[u8]` slice of the input); a container turns it
//! into a [`Key::Probe`] once per emit (hash computed, short keys loaded into
//! machine words) and copies it into the owned form only the first time it
//! sees the key (Metis' *keycopy*). The owned form is what reduce and the
//! output see.
//!
//! Keys ready to use: integers, `bool` and `char` (emitted by value; the
//! array container indexes them), [`Bytes`] and `Vec<u8>` (emitted as
//! `&[u8]`), `String` (emitted as `&str`), `[u8; N]`, and 2- and 3-tuples of
//! keys (emitted as the tuple of the parts' emitted forms). Any other
//! `Copy + Ord + Hash` type becomes a key with one line of
//! [`plain_key!`](crate::plain_key).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A key type usable by ember's containers.
///
/// The contract, relied on by every container, for any emitted keys `r`,
/// `q` and their owned forms `k = Key::from_probe(&Key::probe(r))`, `j`
/// (likewise from `q`):
///
/// - `Key::probe_hash(&Key::probe(r)) == k.hash_owned()`;
/// - `j.matches(&Key::probe(r))` exactly when `j == k`;
/// - the borrowed forms are ordered as the owned keys:
///   `Key::borrow_ref(&r).cmp(Key::borrow_ref(&q)) == k.cmp(&j)`, and
///   `Borrow::borrow(&j).cmp(Key::borrow_ref(&r)) == j.cmp(&k)`.
///
/// Implementing it by hand is rarely needed: see the module's list of
/// ready keys and [`plain_key!`](crate::plain_key).
pub trait Key: Ord + Send + Sync + Sized + for<'a> Borrow<Self::Borrowed<'a>> + 'static {
    /// The form `map` emits: cheap to build, usually borrowed from the input.
    type Ref<'a>: Copy + 'a;
    /// The borrowed form ordered trees look keys up by (`[u8]` for
    /// [`Bytes`], a [`TupleView2`] for a pair); ordered exactly as the key.
    /// `'a` is the lifetime of the emitted form it may be borrowed from.
    type Borrowed<'a>: ?Sized + Ord;
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
    fn borrow_ref<'a, 'r>(r: &'a Self::Ref<'r>) -> &'a Self::Borrowed<'r>;

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

/// Folds one more part's hash into a running hash (tuple keys,
/// [`KeyHasher`]).
#[inline(always)]
fn mix(h: u64, part: u64) -> u64 {
    fold_mul(h ^ K0, part ^ K1)
}

/// `Key` for a type that is its own emitted, borrowed and probe form: the
/// key's hash is `hash(k)`, its array index `index(k)`, and the key at
/// index `i` is `from(i)`.
macro_rules! word_key {
    ($t:ty, hash($h:ident) = $hash:expr, index($x:ident) = $index:expr, from($i:ident) = $from:expr) => {
        impl Key for $t {
            type Ref<'a> = $t;
            type Borrowed<'a> = $t;
            type Probe<'a> = $t;
            #[inline(always)]
            fn probe<'a>(r: Self::Ref<'a>) -> Self::Probe<'a> {
                r
            }
            #[inline(always)]
            fn probe_hash(p: &$t) -> u64 {
                let $h = *p;
                $hash
            }
            #[inline(always)]
            fn matches(&self, p: &$t) -> bool {
                self == p
            }
            #[inline(always)]
            fn from_probe(p: &$t) -> $t {
                *p
            }
            #[inline(always)]
            fn hash_owned(&self) -> u64 {
                Self::probe_hash(self)
            }
            #[inline(always)]
            fn borrow_ref<'a, 'r>(r: &'a Self::Ref<'r>) -> &'a Self::Borrowed<'r> {
                r
            }
            #[inline(always)]
            fn as_index($x: $t) -> Option<usize> {
                $index
            }
            fn from_index($i: usize) -> Option<$t> {
                $from
            }
        }
    };
}

/// Integers of up to 64 bits: one multiply to hash, indexed when
/// non-negative.
macro_rules! int_key {
    ($($t:ty),*) => {$(
        word_key!($t,
            hash(k) = fold_mul(k as u64 ^ K0, K1),
            index(k) = usize::try_from(k).ok(),
            from(i) = <$t>::try_from(i).ok());
    )*};
}
int_key!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

/// 128-bit integers: both halves hashed (packed keys, such as sort's, may
/// differ only in their top 64 bits).
macro_rules! wide_int_key {
    ($($t:ty),*) => {$(
        word_key!($t,
            hash(k) = hash_words(k as u64, (k >> 64) as u64, 16),
            index(k) = usize::try_from(k).ok(),
            from(i) = <$t>::try_from(i).ok());
    )*};
}
wide_int_key!(u128, i128);

word_key!(
    bool,
    hash(k) = fold_mul(k as u64 ^ K0, K1),
    index(k) = Some(k as usize),
    from(i) = match i {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
);
word_key!(
    char,
    hash(k) = fold_mul(k as u64 ^ K0, K1),
    index(k) = Some(k as usize),
    from(i) = u32::try_from(i).ok().and_then(char::from_u32)
);

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

/// The hash of a byte string, as [`Bytes`] hashes it.
#[inline]
fn hash_bytes(s: &[u8]) -> u64 {
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

/// An owned tuple key seen as its borrowed form: the owned side of the
/// tuple views (the emitted side is the tuple of the parts' `Ref`s itself).
#[repr(transparent)]
struct Owned<T>(T);

/// `Key` for tuples of keys, with `$view` the public trait their borrowed
/// form is a trait object of. A tuple is emitted as the tuple of its parts'
/// emitted forms, probed part by part, hashed by folding the parts' hashes
/// in order, and ordered as the tuple (lexicographically).
macro_rules! tuple_key {
    ($view:ident, $n:literal; $($p:ident $i:tt),+) => {
        #[doc = concat!("The borrowed form of a ", $n, "-tuple key: what ordered")]
        /// containers look it up by, from either the owned tuple or the
        /// emitted tuple of the parts' `Ref`s. Ordered as the tuple.
        /// Implemented by ember; a job never names it.
        pub trait $view<'r, $($p: Key),+> {
            /// The parts' borrowed forms, in order.
            fn parts(&self) -> ($(&$p::Borrowed<'r>,)+);
        }

        impl<'r, $($p: Key),+> $view<'r, $($p),+> for ($($p::Ref<'r>,)+) {
            #[inline]
            fn parts(&self) -> ($(&$p::Borrowed<'r>,)+) {
                ($($p::borrow_ref(&self.$i),)+)
            }
        }

        impl<'r, $($p: Key),+> $view<'r, $($p),+> for Owned<($($p,)+)> {
            #[inline]
            fn parts(&self) -> ($(&$p::Borrowed<'r>,)+) {
                ($(<$p as Borrow<$p::Borrowed<'r>>>::borrow(&self.0.$i),)+)
            }
        }

        impl<'r, $($p: Key),+> PartialEq for dyn $view<'r, $($p),+> + 'r {
            fn eq(&self, other: &Self) -> bool {
                self.parts() == other.parts()
            }
        }
        impl<'r, $($p: Key),+> Eq for dyn $view<'r, $($p),+> + 'r {}
        impl<'r, $($p: Key),+> PartialOrd for dyn $view<'r, $($p),+> + 'r {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(self.cmp(other))
            }
        }
        impl<'r, $($p: Key),+> Ord for dyn $view<'r, $($p),+> + 'r {
            fn cmp(&self, other: &Self) -> Ordering {
                self.parts().cmp(&other.parts())
            }
        }

        impl<'r, $($p: Key),+> Borrow<dyn $view<'r, $($p),+> + 'r> for ($($p,)+) {
            #[inline]
            fn borrow(&self) -> &(dyn $view<'r, $($p),+> + 'r) {
                // SAFETY: `Owned<T>` is `repr(transparent)` over `T`, so a
                // `&T` is a valid `&Owned<T>` (same address, layout and
                // validity), borrowed for as long as `self` is.
                unsafe { &*(self as *const Self).cast::<Owned<Self>>() }
            }
        }

        impl<$($p: Key),+> Key for ($($p,)+) {
            type Ref<'a> = ($($p::Ref<'a>,)+);
            type Borrowed<'a> = dyn $view<'a, $($p),+> + 'a;
            /// The parts' probes and the tuple's hash.
            type Probe<'a> = (($($p::Probe<'a>,)+), u64);

            #[inline(always)]
            fn probe<'a>(r: Self::Ref<'a>) -> Self::Probe<'a> {
                let parts = ($($p::probe(r.$i),)+);
                let mut h = K2;
                $(h = mix(h, $p::probe_hash(&parts.$i));)+
                (parts, h)
            }
            #[inline(always)]
            fn probe_hash(p: &Self::Probe<'_>) -> u64 {
                p.1
            }
            #[inline(always)]
            fn matches(&self, p: &Self::Probe<'_>) -> bool {
                $(self.$i.matches(&p.0.$i))&&+
            }
            #[inline]
            fn from_probe(p: &Self::Probe<'_>) -> Self {
                ($($p::from_probe(&p.0.$i),)+)
            }
            #[inline]
            fn hash_owned(&self) -> u64 {
                let mut h = K2;
                $(h = mix(h, self.$i.hash_owned());)+
                h
            }
            #[inline(always)]
            fn borrow_ref<'a, 'r>(r: &'a Self::Ref<'r>) -> &'a Self::Borrowed<'r> {
                r
            }
        }
    };
}
tuple_key!(TupleView2, "2"; A 0, B 1);
tuple_key!(TupleView3, "3"; A 0, B 1, C 2);

/// A fast, non-cryptographic [`Hasher`] with the mixing ember's own keys
/// use (a folded 64x64->128-bit multiply per word): what
/// [`plain_key!`](crate::plain_key) hashes a type's `Hash` impl with. Not
/// meant to resist keys chosen to collide.
#[derive(Debug, Clone, Copy)]
pub struct KeyHasher(u64);

impl KeyHasher {
    /// A hasher in its initial state.
    pub fn new() -> Self {
        KeyHasher(K2)
    }

    /// The hash of one value.
    #[inline]
    pub fn hash_one<T: Hash + ?Sized>(value: &T) -> u64 {
        let mut h = KeyHasher::new();
        value.hash(&mut h);
        h.finish()
    }
}

impl Default for KeyHasher {
    fn default() -> Self {
        KeyHasher::new()
    }
}

/// Every integer write is one word folded in; byte strings are hashed as
/// [`Bytes`] hashes them, then folded in.
impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.write_u64(hash_bytes(bytes));
    }
    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.write_u64(n as u64);
    }
    #[inline]
    fn write_u16(&mut self, n: u16) {
        self.write_u64(n as u64);
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = mix(self.0, n);
    }
    #[inline]
    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// Makes plain types keys, in one line each: any
/// `Copy + Ord + Hash + Send + Sync + 'static` type, emitted, stored and
/// looked up by value (`Ref`, `Borrowed` and the owned key are the type;
/// the probe is the value and its hash), hashed through its `Hash` impl
/// with [`KeyHasher`], ordered by its `Ord`.
///
/// ```
/// use ember::{Emit, Input, Job, MapResult, Records, Runtime, Split, Sum};
///
/// /// A cell of a grid.
/// #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
/// struct Cell {
///     x: i16,
///     y: i16,
/// }
/// ember::plain_key!(Cell);
///
/// /// Counts points (pairs of bytes) per 16x16 cell.
/// struct Grid;
/// impl Job for Grid {
///     type Key = Cell;
///     type Value = u64;
///     type Combiner = Sum;
///     type Out = u64;
///     fn records(&self) -> Records {
///         Records::Fixed(2)
///     }
///     fn map<E: Emit<Cell, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
///         for p in split.data.chunks_exact(2) {
///             emit.emit(Cell { x: p[0] as i16 / 16, y: p[1] as i16 / 16 }, 1);
///         }
///         Ok(())
///     }
///     fn reduce(&self, _cell: &Cell, n: u64) -> u64 {
///         n
///     }
/// }
///
/// let rt = Runtime::builder().threads(2).build()?;
/// let out = rt.run(&Grid, &Input::bytes(&[1, 2, 3, 4, 200, 5]))?;
/// assert_eq!(out.pairs, vec![(Cell { x: 0, y: 0 }, 2), (Cell { x: 12, y: 0 }, 1)]);
/// # Ok::<(), ember::Error>(())
/// ```
#[macro_export]
macro_rules! plain_key {
    ($($t:ty),+ $(,)?) => {$(
        impl $crate::Key for $t {
            type Ref<'a> = $t;
            type Borrowed<'a> = $t;
            type Probe<'a> = ($t, u64);
            #[inline(always)]
            fn probe<'a>(r: Self::Ref<'a>) -> Self::Probe<'a> {
                (r, $crate::plumbing::KeyHasher::hash_one(&r))
            }
            #[inline(always)]
            fn probe_hash(p: &Self::Probe<'_>) -> u64 {
                p.1
            }
            #[inline(always)]
            fn matches(&self, p: &Self::Probe<'_>) -> bool {
                *self == p.0
            }
            #[inline(always)]
            fn from_probe(p: &Self::Probe<'_>) -> Self {
                p.0
            }
            #[inline(always)]
            fn hash_owned(&self) -> u64 {
                $crate::plumbing::KeyHasher::hash_one(self)
            }
            #[inline(always)]
            fn borrow_ref<'a, 'r>(r: &'a Self::Ref<'r>) -> &'a Self::Borrowed<'r> {
                r
            }
        }
    )+};
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Checks the `Key` contract on two emitted keys whose owned forms
    /// compare as `expected`, both ways round and each with itself.
    fn contract<'r, K: Key + fmt::Debug>(
        a: K::Ref<'r>,
        b: K::Ref<'r>,
        expected: Ordering,
    ) -> Result<(), TestCaseError> {
        for (x, y, want) in [
            (a, b, expected),
            (b, a, expected.reverse()),
            (a, a, Ordering::Equal),
        ] {
            let (px, py) = (K::probe(x), K::probe(y));
            let (kx, ky) = (K::from_probe(&px), K::from_probe(&py));
            prop_assert_eq!(K::probe_hash(&px), kx.hash_owned());
            prop_assert!(kx.matches(&px));
            prop_assert_eq!(kx.matches(&py), want == Ordering::Equal);
            prop_assert_eq!(kx.cmp(&ky), want);
            prop_assert_eq!(K::borrow_ref(&x).cmp(K::borrow_ref(&y)), want);
            let owned: &K::Borrowed<'r> = kx.borrow();
            prop_assert_eq!(owned.cmp(K::borrow_ref(&y)), want);
            if want == Ordering::Equal {
                prop_assert_eq!(kx.hash_owned(), ky.hash_owned());
            }
        }
        Ok(())
    }

    /// A user type made a key by `plain_key!`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    struct Cell {
        x: i16,
        y: i16,
    }
    crate::plain_key!(Cell);

    /// An enum key, with data.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    enum Shape {
        Dot,
        Line(u8),
    }
    crate::plain_key!(Shape);

    fn shape(n: Option<u8>) -> Shape {
        n.map_or(Shape::Dot, Shape::Line)
    }

    proptest! {
        #[test]
        fn word_keys_keep_the_contract(
            (a, b) in any::<(i8, i8)>(),
            (c, d) in any::<(i16, i16)>(),
            (e, f) in any::<(bool, bool)>(),
            (g, h) in any::<(char, char)>(),
            (i, j) in any::<(u128, u128)>(),
            (k, l) in any::<(i128, i128)>(),
        ) {
            contract::<i8>(a, b, a.cmp(&b))?;
            contract::<i16>(c, d, c.cmp(&d))?;
            contract::<bool>(e, f, e.cmp(&f))?;
            contract::<char>(g, h, g.cmp(&h))?;
            contract::<u128>(i, j, i.cmp(&j))?;
            contract::<i128>(k, l, k.cmp(&l))?;
        }

        #[test]
        fn string_keys_keep_the_contract(a in "[ab]{0,20}", b in "[ab]{0,20}") {
            contract::<String>(&a, &b, a.cmp(&b))?;
            contract::<Vec<u8>>(a.as_bytes(), b.as_bytes(), a.cmp(&b))?;
            // Hashed as `Bytes` hashes the same bytes.
            let bytes = Bytes::probe_hash(&Bytes::probe(a.as_bytes()));
            prop_assert_eq!(String::probe_hash(&String::probe(&a)), bytes);
        }

        #[test]
        fn tuple_keys_keep_the_contract(
            a in (0u32..3, "[ab]{0,20}", any::<bool>()),
            b in (0u32..3, "[ab]{0,20}", any::<bool>()),
        ) {
            let pair = |t: &(u32, String, bool)| (t.0, t.1.clone());
            contract::<(u32, Bytes)>(
                (a.0, a.1.as_bytes()),
                (b.0, b.1.as_bytes()),
                pair(&a).cmp(&pair(&b)),
            )?;
            let words = |t: &(u32, String, bool)| (t.0 as u64, t.1.len() as u64);
            contract::<(u64, u64)>(words(&a), words(&b), words(&a).cmp(&words(&b)))?;
            contract::<(String, u32, bool)>((&a.1, a.0, a.2), (&b.1, b.0, b.2), {
                (&a.1, a.0, a.2).cmp(&(&b.1, b.0, b.2))
            })?;
            // Nested: the inner pair's borrowed form is itself a view.
            contract::<((u32, String), bool)>(((a.0, &a.1), a.2), ((b.0, &b.1), b.2), {
                ((a.0, &a.1), a.2).cmp(&((b.0, &b.1), b.2))
            })?;
        }

        #[test]
        fn plain_keys_keep_the_contract(
            a in (-2i16..2, -2i16..2),
            b in (-2i16..2, -2i16..2),
            (m, n) in any::<(Option<u8>, Option<u8>)>(),
        ) {
            let (ca, cb) = (Cell { x: a.0, y: a.1 }, Cell { x: b.0, y: b.1 });
            contract::<Cell>(ca, cb, a.cmp(&b))?;
            contract::<Shape>(shape(m), shape(n), shape(m).cmp(&shape(n)))?;
        }
    }

    #[test]
    fn word_keys_index_both_ways() {
        assert_eq!(bool::as_index(true), Some(1));
        assert_eq!(bool::from_index(1), Some(true));
        assert_eq!(bool::from_index(2), None);
        assert_eq!(char::as_index('a'), Some(97));
        assert_eq!(char::from_index(97), Some('a'));
        // A surrogate is not a char.
        assert_eq!(char::from_index(0xD800), None);
        assert_eq!(i8::as_index(-1), None);
        assert_eq!(i16::from_index(300), Some(300));
        assert_eq!(u128::from_index(5), Some(5));
        assert_eq!(Cell::from_index(0), None);
    }

    #[test]
    fn wide_keys_hash_their_top_half() {
        let hashes: std::collections::HashSet<u64> =
            (0..64u128).map(|i| u128::probe_hash(&(i << 64))).collect();
        assert_eq!(hashes.len(), 64);
    }

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

        /// Keys that share a prefix (zero bytes included) order as their
        /// byte strings, inline or not.
        #[test]
        fn keys_with_a_common_prefix_order_as_byte_strings(
            a in proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), any::<u8>()], 0..24),
            cut in 0usize..24,
            tail in proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), any::<u8>()], 0..8),
        ) {
            let b = [&a[..cut.min(a.len())], &tail[..]].concat();
            prop_assert_eq!(Bytes::new(&a).cmp(&Bytes::new(&b)), a.cmp(&b));
            prop_assert_eq!(Bytes::new(&b).cmp(&Bytes::new(&a)), b.cmp(&a));
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
