//! Integers, `bool` and `char` as keys: emitted by value, hashed with one
//! multiply, indexed by the array container.

use super::{fold_mul, hash_words, Key, K0, K1};

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
            fn probe_ref<'a>(p: &Self::Probe<'a>) -> Self::Ref<'a> {
                *p
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
            const INDEXED: bool = true;
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
