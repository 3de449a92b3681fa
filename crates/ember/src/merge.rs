//! The merge phase: ordering the reduce output, by key or by the job's
//! comparator, on all workers.
//!
//! A full sort uses rayon's parallel sort on the pool's threads; a top-k run
//! never sorts everything: each partition keeps only its own k best
//! (selection, linear time), and only those candidates are sorted.

use std::cmp::Ordering;

use rayon::prelude::*;

use crate::pool::Pool;

/// Concatenates the per-partition runs and sorts them.
pub(crate) fn sort_all<T, F>(pool: &Pool, runs: Vec<Vec<T>>, cmp: F) -> Vec<T>
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    let mut all = Vec::with_capacity(runs.iter().map(Vec::len).sum());
    for run in runs {
        all.extend(run);
    }
    pool.install(|| all.par_sort_unstable_by(&cmp));
    all
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
    let mut best = sort_all(pool, candidates, &cmp);
    best.truncate(k);
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_equals_sorted_prefix() {
        let pool = Pool::new(2).unwrap();
        let runs: Vec<Vec<u32>> = (0..5)
            .map(|r| (0..100).map(|i| (i * 37 + r * 11) % 101).collect())
            .collect();
        let all = sort_all(&pool, runs.clone(), |a, b| b.cmp(a));
        for k in [0, 1, 7, 100, 1000] {
            let top = top_k(&pool, runs.clone(), k, |a, b| b.cmp(a));
            assert_eq!(top, all[..k.min(all.len())]);
        }
    }
}
