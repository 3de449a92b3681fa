//! Combiners: how the values emitted for one key fold together, at insert
//! time in each worker's container and again when reduce joins the workers'
//! partitions (Phoenix++'s `sum_combiner` / `buffer_combiner`, Metis'
//! combiner).
//!
//! A combiner must be associative; jobs whose results must not depend on the
//! thread count also need it to be commutative, or must make `reduce`
//! insensitive to the order of values (the order in which workers' values are
//! joined depends on the schedule).

/// Folds the values of one key into a state.
pub trait Combiner<V>: Send + Sync {
    /// The per-key state a container stores.
    type State: Send;
    /// Whether a state is smaller than the values folded into it (true for
    /// sums, false when the state keeps every value, as [`KeepAll`] does).
    /// When it does not fold, combining at insert saves little, and `Auto`
    /// prefers the append container unless keys repeat heavily.
    const FOLDS: bool = true;
    /// The state for a key's first value.
    fn init(v: V) -> Self::State;
    /// Adds one more value.
    fn add(state: &mut Self::State, v: V);
    /// Joins the state another worker built for the same key.
    fn merge(state: &mut Self::State, other: Self::State);
}

/// Sums values: word count, histogram, linear regression. `reduce` receives
/// the total.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sum;

impl<V: std::ops::AddAssign + Send> Combiner<V> for Sum {
    type State = V;
    #[inline(always)]
    fn init(v: V) -> V {
        v
    }
    #[inline(always)]
    fn add(state: &mut V, v: V) {
        *state += v;
    }
    #[inline(always)]
    fn merge(state: &mut V, other: V) {
        *state += other;
    }
}

/// Keeps every value: `reduce` receives them all as a `Vec` (in an order
/// that depends on the schedule; sort them if order matters).
#[derive(Debug, Clone, Copy, Default)]
pub struct KeepAll;

impl<V: Send> Combiner<V> for KeepAll {
    type State = Vec<V>;
    const FOLDS: bool = false;
    #[inline(always)]
    fn init(v: V) -> Vec<V> {
        vec![v]
    }
    #[inline(always)]
    fn add(state: &mut Vec<V>, v: V) {
        state.push(v);
    }
    fn merge(state: &mut Vec<V>, mut other: Vec<V>) {
        if other.len() > state.len() {
            std::mem::swap(state, &mut other);
        }
        state.append(&mut other);
    }
}

/// Keeps the smallest value.
#[derive(Debug, Clone, Copy, Default)]
pub struct Min;

impl<V: Ord + Send> Combiner<V> for Min {
    type State = V;
    #[inline(always)]
    fn init(v: V) -> V {
        v
    }
    #[inline(always)]
    fn add(state: &mut V, v: V) {
        if v < *state {
            *state = v;
        }
    }
    fn merge(state: &mut V, other: V) {
        Self::add(state, other);
    }
}

/// Keeps the largest value.
#[derive(Debug, Clone, Copy, Default)]
pub struct Max;

impl<V: Ord + Send> Combiner<V> for Max {
    type State = V;
    #[inline(always)]
    fn init(v: V) -> V {
        v
    }
    #[inline(always)]
    fn add(state: &mut V, v: V) {
        if v > *state {
            *state = v;
        }
    }
    fn merge(state: &mut V, other: V) {
        Self::add(state, other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combiners_fold() {
        let mut s = <Sum as Combiner<u64>>::init(2);
        <Sum as Combiner<u64>>::add(&mut s, 3);
        <Sum as Combiner<u64>>::merge(&mut s, 5);
        assert_eq!(s, 10);
        let mut k = <KeepAll as Combiner<u8>>::init(1);
        <KeepAll as Combiner<u8>>::add(&mut k, 2);
        <KeepAll as Combiner<u8>>::merge(&mut k, vec![3, 4, 5]);
        k.sort();
        assert_eq!(k, vec![1, 2, 3, 4, 5]);
        let mut m = <Min as Combiner<i32>>::init(4);
        <Min as Combiner<i32>>::add(&mut m, -1);
        <Min as Combiner<i32>>::merge(&mut m, 7);
        assert_eq!(m, -1);
        let mut x = <Max as Combiner<i32>>::init(4);
        <Max as Combiner<i32>>::add(&mut x, -1);
        <Max as Combiner<i32>>::merge(&mut x, 7);
        assert_eq!(x, 7);
    }
}
