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

mod bytes;
mod hasher;
mod int;
mod tuple;

pub use bytes::{Bytes, BytesProbe, INLINE_KEY_BYTES};
pub use hasher::KeyHasher;
pub use tuple::{TupleView2, TupleView3};

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
    /// The emitted form a probe was prepared from: `probe_ref(&probe(r))`
    /// is `r`.
    fn probe_ref<'a>(p: &Self::Probe<'a>) -> Self::Ref<'a>;
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

    /// True for key types that [`Key::from_index`] can make (integer
    /// keys): only those can use the array container, and a key type
    /// that cannot is compiled without it.
    const INDEXED: bool = false;

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Ordering;
    use std::fmt;

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
        let indexed = [u32::INDEXED, char::INDEXED, bool::INDEXED];
        let not_indexed = [Bytes::INDEXED, <(u32, u32)>::INDEXED, Cell::INDEXED];
        assert_eq!((indexed, not_indexed), ([true; 3], [false; 3]));
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
