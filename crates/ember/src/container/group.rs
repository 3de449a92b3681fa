//! Values grouped by key number: the counting sort that the append and
//! intern containers' reduce (and the intern container's spill) share.
//!
//! Both containers number a partition's keys `0..n` and know how many
//! values each key has; [`Groups`] then lays every key's values out
//! together, each key's in the order they were placed, with one write per
//! value and no key comparisons.

use crate::combine::Values;

/// A partition's values being laid out key by key.
pub(crate) struct Groups<V> {
    /// Where each key's next value goes.
    next: Vec<usize>,
    /// Where each key's run ends (the next key's run starts).
    ends: Vec<usize>,
    /// Room for every value; the first `ends.last()` slots are written by
    /// [`Groups::place`].
    values: Vec<V>,
}

impl<V> Groups<V> {
    /// Room for keys that have `counts[i]` values each, `i` their number.
    pub(crate) fn new(counts: impl ExactSizeIterator<Item = usize>) -> Self {
        let mut next = Vec::with_capacity(counts.len());
        let mut ends = Vec::with_capacity(counts.len());
        let mut at = 0;
        for c in counts {
            next.push(at);
            at += c;
            ends.push(at);
        }
        Groups {
            next,
            ends,
            values: Vec::with_capacity(at),
        }
    }

    /// Places the next value of key `key`.
    #[inline(always)]
    pub(crate) fn place(&mut self, key: usize, value: V) {
        let at = self.next[key];
        // Bounds-checked: a key given more values than counted writes past
        // its run, which `runs` finds before reading any slot.
        self.values.spare_capacity_mut()[at].write(value);
        self.next[key] = at + 1;
    }

    /// Calls `f` with each key of `keys` (in number order) and its run of
    /// values, in the order they were placed; returns what `f` returned.
    ///
    /// Panics if a key was not given exactly as many values as counted.
    pub(crate) fn runs<K, T>(
        self,
        keys: impl IntoIterator<Item = K>,
        mut f: impl FnMut(K, Values<'_, V>) -> T,
    ) -> Vec<T> {
        let Groups {
            next,
            ends,
            mut values,
        } = self;
        assert!(
            next == ends,
            "every key got as many values as counted for it"
        );
        let n = ends.last().copied().unwrap_or(0);
        // SAFETY: key `i`'s run is the slots from the previous key's end to
        // `ends[i]`, and `place` wrote them in turn, from the run's start up
        // to `next[i]`, which equals `ends[i]`: the runs tile `0..n`, so
        // every slot below `n` was written (a slot written twice would have
        // left another unwritten, and the runs' ends would not match).
        unsafe { values.set_len(n) };
        let mut rest = values.into_iter();
        let mut out = Vec::with_capacity(ends.len());
        let mut start = 0;
        for (key, &end) in keys.into_iter().zip(&ends) {
            out.push(f(key, Values::new(&mut rest, end - start)));
            start = end;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_group_by_key_in_placement_order() {
        let mut g = Groups::new([2, 0, 3].into_iter());
        for (k, v) in [(2, 'a'), (0, 'b'), (2, 'c'), (0, 'd'), (2, 'e')] {
            g.place(k, v);
        }
        let runs = g.runs(["x", "y", "z"], |k, run| (k, run.collect::<String>()));
        assert_eq!(
            runs,
            [
                ("x", "bd".into()),
                ("y", String::new()),
                ("z", "ace".into())
            ]
        );
    }

    #[test]
    #[should_panic(expected = "as many values as counted")]
    fn a_miscounted_key_is_caught_before_any_read() {
        let mut g = Groups::new([1, 1].into_iter());
        g.place(0, String::from("a"));
        g.place(0, String::from("b"));
        g.runs([0, 1], |_, run| run.count());
    }
}
