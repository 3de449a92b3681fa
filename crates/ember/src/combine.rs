//! Combiners: how the values emitted for one key fold together, at insert
//! time in each worker's container and again when reduce joins the workers'
//! partitions (Phoenix++'s `sum_combiner` / `buffer_combiner`, Metis'
//! combiner), and what `reduce` receives for a key.
//!
//! A combiner must be associative; jobs whose results must not depend on the
//! thread count also need it to be commutative, or must make `reduce`
//! insensitive to the order of values (the order in which workers' values are
//! joined depends on the schedule).
//!
//! A combiner is a value: the runtime gets it from
//! [`Job::combiner`](crate::Job::combiner) once per run and hands a copy to
//! every worker, so it can carry parameters (a top-k's `k`, a threshold).

/// Folds the values of one key into a state, and hands a key's values to
/// `reduce`.
///
/// ```
/// use ember::Combiner;
///
/// /// Keeps the `k` largest values.
/// #[derive(Clone, Default)]
/// struct TopK {
///     k: usize,
/// }
///
/// impl Combiner<u32> for TopK {
///     type State = Vec<u32>;
///     type Reduced<'a> = Vec<u32>;
///     fn init(&self, v: u32) -> Vec<u32> {
///         vec![v]
///     }
///     fn add(&self, state: &mut Vec<u32>, v: u32) {
///         state.push(v);
///         state.sort_unstable_by(|a, b| b.cmp(a));
///         state.truncate(self.k);
///     }
///     fn merge(&self, state: &mut Vec<u32>, other: Vec<u32>) {
///         for v in other {
///             self.add(state, v);
///         }
///     }
///     fn finish<O>(&self, state: Vec<u32>, reduce: impl FnOnce(Vec<u32>) -> O) -> O {
///         reduce(state)
///     }
/// }
///
/// let top2 = TopK { k: 2 };
/// let mut s = top2.init(3);
/// top2.add(&mut s, 9);
/// top2.merge(&mut s, vec![5]);
/// assert_eq!(s, vec![9, 5]);
/// ```
pub trait Combiner<V>: Clone + Send + Sync {
    /// The per-key state a container stores.
    type State: Send;
    /// What `reduce` receives for a key: the state itself for folding
    /// combiners ([`Sum`]'s total), a slice of the values for [`KeepAll`].
    type Reduced<'a>
    where
        V: 'a;
    /// Whether a state is smaller than the values folded into it (true for
    /// sums, false when the state keeps every value, as [`KeepAll`] does).
    /// When it does not fold, combining at insert saves little, and `Auto`
    /// prefers the append container unless keys repeat heavily.
    const FOLDS: bool = true;
    /// The state for a key's first value.
    fn init(&self, v: V) -> Self::State;
    /// Adds one more value.
    fn add(&self, state: &mut Self::State, v: V);
    /// Joins the state another worker built for the same key.
    fn merge(&self, state: &mut Self::State, other: Self::State);
    /// Calls `reduce` with a key's state, as `reduce` receives it.
    fn finish<O>(&self, state: Self::State, reduce: impl FnOnce(Self::Reduced<'_>) -> O) -> O;
    /// Calls `reduce` with a key's values where the container already holds
    /// them together (the append container; Phoenix's value iterator). By
    /// default folds them into a state first; [`KeepAll`] hands them over
    /// as a slice, with no per-key vector.
    fn finish_values<O>(
        &self,
        mut values: Values<'_, V>,
        reduce: impl FnOnce(Self::Reduced<'_>) -> O,
    ) -> O {
        let first = values.next().expect("a key has at least one value");
        let mut state = self.init(first);
        for v in values {
            self.add(&mut state, v);
        }
        self.finish(state, reduce)
    }
}

/// One key's values, held together by the container: iterate them (owned),
/// or view them as a mutable slice. Values not taken are dropped with it.
#[derive(Debug)]
pub struct Values<'a, V> {
    rest: &'a mut std::vec::IntoIter<V>,
    len: usize,
}

impl<'a, V> Values<'a, V> {
    /// The next `len` values of `rest` (at most as many as it holds).
    pub(crate) fn new(rest: &'a mut std::vec::IntoIter<V>, len: usize) -> Self {
        let len = len.min(rest.len());
        Values { rest, len }
    }

    /// The values not yet taken, in place.
    pub fn as_mut_slice(&mut self) -> &mut [V] {
        &mut self.rest.as_mut_slice()[..self.len]
    }
}

impl<V> Iterator for Values<'_, V> {
    type Item = V;

    #[inline]
    fn next(&mut self) -> Option<V> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        self.rest.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }
}

impl<V> ExactSizeIterator for Values<'_, V> {}

impl<V> Drop for Values<'_, V> {
    fn drop(&mut self) {
        // Skip (and drop) what reduce left, so the next key starts at its
        // own first value: in one step (values without drop glue are not
        // visited one by one).
        if let Some(last) = std::mem::take(&mut self.len).checked_sub(1) {
            self.rest.nth(last);
        }
    }
}

/// Sums values: word count, histogram, linear regression. `reduce` receives
/// the total.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sum;

/// Keeps the smallest value.
#[derive(Debug, Clone, Copy, Default)]
pub struct Min;

/// Keeps the largest value.
#[derive(Debug, Clone, Copy, Default)]
pub struct Max;

/// A combiner whose state is one value (`add` folds a value in, `merge` is
/// `add`): `reduce` receives that value.
macro_rules! one_value {
    ($name:ident, $bound:path, |$state:ident, $v:ident| $add:expr) => {
        impl<V: $bound + Send> Combiner<V> for $name {
            type State = V;
            type Reduced<'a>
                = V
            where
                V: 'a;
            #[inline(always)]
            fn init(&self, v: V) -> V {
                v
            }
            #[inline(always)]
            fn add(&self, $state: &mut V, $v: V) {
                $add
            }
            #[inline(always)]
            fn merge(&self, state: &mut V, other: V) {
                self.add(state, other);
            }
            #[inline(always)]
            fn finish<O>(&self, state: V, reduce: impl FnOnce(V) -> O) -> O {
                reduce(state)
            }
        }
    };
}

one_value!(Sum, std::ops::AddAssign, |state, v| *state += v);
one_value!(Min, Ord, |state, v| if v < *state {
    *state = v
});
one_value!(Max, Ord, |state, v| if v > *state {
    *state = v
});

/// Keeps every value: `reduce` receives them all as a mutable slice (in an
/// order that depends on the schedule; sort them if order matters). Where
/// the container holds a key's values together (append), the slice is
/// theirs, with no per-key vector built.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeepAll;

impl<V: Send> Combiner<V> for KeepAll {
    type State = Vec<V>;
    type Reduced<'a>
        = &'a mut [V]
    where
        V: 'a;
    const FOLDS: bool = false;
    #[inline(always)]
    fn init(&self, v: V) -> Vec<V> {
        vec![v]
    }
    #[inline(always)]
    fn add(&self, state: &mut Vec<V>, v: V) {
        state.push(v);
    }
    fn merge(&self, state: &mut Vec<V>, mut other: Vec<V>) {
        if other.len() > state.len() {
            std::mem::swap(state, &mut other);
        }
        state.append(&mut other);
    }
    fn finish<O>(&self, mut state: Vec<V>, reduce: impl FnOnce(&mut [V]) -> O) -> O {
        reduce(&mut state)
    }
    fn finish_values<O>(&self, mut values: Values<'_, V>, reduce: impl FnOnce(&mut [V]) -> O) -> O {
        reduce(values.as_mut_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combiners_fold() {
        let mut s = Combiner::<u64>::init(&Sum, 2);
        Sum.add(&mut s, 3);
        Sum.merge(&mut s, 5);
        assert_eq!(s, 10);
        let mut k = Combiner::<u8>::init(&KeepAll, 1);
        KeepAll.add(&mut k, 2);
        KeepAll.merge(&mut k, vec![3, 4, 5]);
        k.sort();
        assert_eq!(k, vec![1, 2, 3, 4, 5]);
        let mut m = Combiner::<i32>::init(&Min, 4);
        Min.add(&mut m, -1);
        Min.merge(&mut m, 7);
        assert_eq!(m, -1);
        let mut x = Combiner::<i32>::init(&Max, 4);
        Max.add(&mut x, -1);
        Max.merge(&mut x, 7);
        assert_eq!(x, 7);
    }

    #[test]
    fn values_hand_over_one_key_and_skip_the_rest() {
        let mut all = vec![3, 1, 2, 9, 8].into_iter();
        let sorted = KeepAll.finish_values(Values::new(&mut all, 3), |vs: &mut [i32]| {
            vs.sort();
            vs.to_vec()
        });
        assert_eq!(sorted, vec![1, 2, 3]);
        // A reduce that takes one value leaves the others skipped.
        let first = Values::new(&mut all, 1).next();
        assert_eq!(first, Some(9));
        let total = Sum.finish_values(Values::new(&mut all, 5), |t: i32| t);
        assert_eq!(total, 8);
        assert_eq!(all.len(), 0);
    }

    #[test]
    fn values_left_by_reduce_are_dropped_once_and_skipped() {
        let token = std::rc::Rc::new(());
        let count = || std::rc::Rc::strong_count(&token);
        let mut all: std::vec::IntoIter<_> = (0..5)
            .map(|i| (i, token.clone()))
            .collect::<Vec<_>>()
            .into_iter();
        let first = Values::new(&mut all, 3).next().map(|v| v.0);
        // The first key's other two values are dropped; three are left.
        assert_eq!((first, count()), (Some(0), 1 + 2));
        let rest: Vec<i32> = Values::new(&mut all, 2).map(|v| v.0).collect();
        assert_eq!((rest, count(), all.len()), (vec![3, 4], 1, 0));
    }
}
