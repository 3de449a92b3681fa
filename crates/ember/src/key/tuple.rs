//! Tuples of keys as keys, looked up by a borrowed view of their parts.

use std::borrow::Borrow;
use std::cmp::Ordering;

use super::{mix, Key, K2};

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
            fn probe_ref<'a>(p: &Self::Probe<'a>) -> Self::Ref<'a> {
                ($($p::probe_ref(&p.0.$i),)+)
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
