//! [`KeyHasher`], and [`plain_key!`](crate::plain_key), which hashes with it.

use std::hash::{Hash, Hasher};

use super::bytes::hash_bytes;
use super::{mix, K2};

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
            fn probe_ref<'a>(p: &Self::Probe<'a>) -> Self::Ref<'a> {
                p.0
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
