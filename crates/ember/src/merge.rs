//! The merge phase: ordering the reduce output, by key or by the job's
//! comparator, on all workers.
//!
//! Two strategies ([`MergeKind`]):
//!
//! - **p-way** (the default; SupMR section IV, PSRS in Metis section 3.3):
//!   every run is sorted on its own, in parallel; regular samples of the
//!   sorted runs give splitters that cut the key space into ranges of about
//!   equal size; each range is then merged from all runs at once (a heap over
//!   the runs' heads), every range by its own task. One pass over the data,
//!   all workers busy to the end, and stable: equal items keep run order.
//! - **concat-sort** (the previous merge, kept for comparison): concatenate
//!   the runs and run rayon's parallel sort over everything, a log(n)-deep
//!   tree of merges whose last levels use few workers.
//!
//! A top-k run never sorts everything: each run keeps only its own k best
//! (selection, linear time), and only those candidates are ordered.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use crate::pool::Pool;

/// How the merge phase orders the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeKind {
    /// Sort runs in parallel, then one p-way merge pass over key ranges.
    #[default]
    PWay,
    /// Concatenate, then one parallel sort (the earlier strategy).
    ConcatSort,
}

/// Ranges per worker in a p-way merge: a few, so that ranges balance.
const RANGES_PER_WORKER: usize = 4;
/// Regular samples taken from each sorted run.
const SAMPLES_PER_RUN: usize = 64;

/// Orders the union of the runs. Stable with respect to run order and, in
/// each run, to position, when `stable` is set (ties then keep input order);
/// otherwise ties are in an unspecified order.
pub(crate) fn merge<T, F>(
    pool: &Pool,
    kind: MergeKind,
    runs: Vec<Vec<T>>,
    stable: bool,
    cmp: F,
) -> Vec<T>
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    match kind {
        MergeKind::PWay => pway(pool, runs, stable, &cmp),
        MergeKind::ConcatSort => {
            let mut all = concat(runs);
            pool.install(|| {
                if stable {
                    all.par_sort_by(&cmp)
                } else {
                    all.par_sort_unstable_by(&cmp)
                }
            });
            all
        }
    }
}

fn concat<T>(runs: Vec<Vec<T>>) -> Vec<T> {
    let mut all = Vec::with_capacity(runs.iter().map(Vec::len).sum());
    for run in runs {
        all.extend(run);
    }
    all
}

fn pway<T, F>(pool: &Pool, mut runs: Vec<Vec<T>>, stable: bool, cmp: &F) -> Vec<T>
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    runs.retain(|r| !r.is_empty());
    let n: usize = runs.iter().map(Vec::len).sum();
    let ranges = pool.threads() * RANGES_PER_WORKER;
    if runs.len() <= 1 || n < 2 * ranges * SAMPLES_PER_RUN {
        // Too small to split up: one sort.
        let mut all = concat(runs);
        if stable {
            all.sort_by(cmp);
        } else {
            all.sort_unstable_by(cmp);
        }
        return all;
    }
    pool.install(|| {
        // 1. Sort every run, in parallel.
        runs.par_iter_mut().for_each(|r| {
            if stable {
                r.sort_by(cmp)
            } else {
                r.sort_unstable_by(cmp)
            }
        });
        // 2. Splitters from regular samples of the sorted runs: positions
        //    (run, index) so that ties between runs are cut consistently.
        let mut samples: Vec<(usize, usize)> = runs
            .iter()
            .enumerate()
            .flat_map(|(r, run)| {
                let step = run.len().div_ceil(SAMPLES_PER_RUN).max(1);
                (step / 2..run.len()).step_by(step).map(move |i| (r, i))
            })
            .collect();
        let by_pos = |a: &(usize, usize), b: &(usize, usize)| {
            cmp(&runs[a.0][a.1], &runs[b.0][b.1]).then(a.cmp(b))
        };
        samples.sort_by(by_pos);
        let splitters: Vec<(usize, usize)> = (1..ranges)
            .map(|k| samples[k * samples.len() / ranges])
            .collect();
        // 3. Cut every run at the splitters, in the total order
        //    (value, run, index): the splitter's own run is cut exactly at
        //    the splitter; other runs put ties before the cut when they come
        //    earlier in run order.
        let cuts: Vec<Vec<usize>> = runs
            .iter()
            .enumerate()
            .map(|(r, run)| {
                splitters
                    .iter()
                    .map(|&(sr, si)| {
                        if r == sr {
                            return si;
                        }
                        let pivot = &runs[sr][si];
                        run.partition_point(|x| match cmp(x, pivot) {
                            Ordering::Less => true,
                            Ordering::Greater => false,
                            Ordering::Equal => r < sr,
                        })
                    })
                    .collect()
            })
            .collect();
        // Owned pieces: pieces[range][run], cutting each run from its end.
        let mut pieces: Vec<Vec<Vec<T>>> = (0..ranges)
            .map(|_| Vec::with_capacity(runs.len()))
            .collect();
        let cut_runs: Vec<Vec<Vec<T>>> = runs
            .into_par_iter()
            .zip(cuts)
            .map(|(mut run, cuts)| {
                let mut out = Vec::with_capacity(ranges);
                for &c in cuts.iter().rev() {
                    out.push(run.split_off(c));
                }
                out.push(run);
                out.reverse();
                out
            })
            .collect();
        for run_pieces in cut_runs {
            for (range, piece) in run_pieces.into_iter().enumerate() {
                pieces[range].push(piece);
            }
        }
        // 4. Merge every range from all runs at once, in parallel.
        let merged: Vec<Vec<T>> = pieces.into_par_iter().map(|p| kway(p, cmp)).collect();
        concat(merged)
    })
}

/// Merges sorted pieces into one sorted vector; ties go to the lower piece
/// index, so the merge is stable in piece order.
fn kway<T, F: Fn(&T, &T) -> Ordering>(pieces: Vec<Vec<T>>, cmp: &F) -> Vec<T> {
    struct Head<'c, T, F> {
        item: T,
        piece: usize,
        cmp: &'c F,
    }
    impl<T, F: Fn(&T, &T) -> Ordering> PartialEq for Head<'_, T, F> {
        fn eq(&self, o: &Self) -> bool {
            self.cmp(o) == Ordering::Equal
        }
    }
    impl<T, F: Fn(&T, &T) -> Ordering> Eq for Head<'_, T, F> {}
    impl<T, F: Fn(&T, &T) -> Ordering> PartialOrd for Head<'_, T, F> {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl<T, F: Fn(&T, &T) -> Ordering> Ord for Head<'_, T, F> {
        // Reversed: BinaryHeap is a max-heap and we want the least first.
        fn cmp(&self, o: &Self) -> Ordering {
            (self.cmp)(&o.item, &self.item).then(o.piece.cmp(&self.piece))
        }
    }
    let total = pieces.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    let mut iters: Vec<_> = pieces.into_iter().map(Vec::into_iter).collect();
    let mut heap = BinaryHeap::with_capacity(iters.len());
    for (piece, it) in iters.iter_mut().enumerate() {
        if let Some(item) = it.next() {
            heap.push(Head { item, piece, cmp });
        }
    }
    while let Some(mut head) = heap.peek_mut() {
        let piece = head.piece;
        match iters[piece].next() {
            Some(next) => out.push(std::mem::replace(&mut head.item, next)),
            None => out.push(std::collections::binary_heap::PeekMut::pop(head).item),
        }
    }
    out
}

/// The `k` first items of the union of the runs, in order.
pub(crate) fn top_k<T, F>(pool: &Pool, runs: Vec<Vec<T>>, k: usize, cmp: F) -> Vec<T>
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    if k == 0 {
        return Vec::new();
    }
    let candidates: Vec<Vec<T>> = pool.install(|| {
        runs.into_par_iter()
            .map(|mut run| {
                if run.len() > k {
                    run.select_nth_unstable_by(k - 1, &cmp);
                    run.truncate(k);
                }
                run
            })
            .collect()
    });
    let mut best = concat(candidates);
    best.sort_unstable_by(&cmp);
    best.truncate(k);
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn top_k_equals_sorted_prefix() {
        let pool = Pool::new(2).unwrap();
        let runs: Vec<Vec<u32>> = (0..5)
            .map(|r| (0..100).map(|i| (i * 37 + r * 11) % 101).collect())
            .collect();
        let all = merge(&pool, MergeKind::ConcatSort, runs.clone(), false, |a, b| {
            b.cmp(a)
        });
        for k in [0, 1, 7, 100, 1000] {
            let top = top_k(&pool, runs.clone(), k, |a, b| b.cmp(a));
            assert_eq!(top, all[..k.min(all.len())]);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Both merges give the stable sort of the runs' concatenation:
        /// equal keys keep (run, position) order. Few distinct keys force
        /// ties across range boundaries.
        #[test]
        fn pway_is_a_stable_sort(
            runs in proptest::collection::vec(proptest::collection::vec(0u8..6, 0..700), 0..12),
            threads in 1usize..4,
        ) {
            let runs: Vec<Vec<(u8, u32)>> = runs.into_iter().enumerate().map(|(r, run)| {
                run.into_iter().enumerate().map(|(i, k)| (k, (r * 1000 + i) as u32)).collect()
            }).collect();
            let mut want: Vec<(u8, u32)> = runs.concat();
            want.sort_by_key(|p| p.0);
            let pool = Pool::new(threads).unwrap();
            for kind in [MergeKind::PWay, MergeKind::ConcatSort] {
                let got = merge(&pool, kind, runs.clone(), true, |a, b| a.0.cmp(&b.0));
                prop_assert_eq!(&got, &want);
            }
        }
    }
}
