//! The merge phase: ordering the reduce output, by key or by the job's
//! comparator, on all workers.
//!
//! A p-way merge (SupMR section IV, PSRS in Metis section 3.3): every run
//! is sorted on its own, in parallel; regular samples of the sorted runs
//! give splitters that cut the key space into ranges of about equal size;
//! each range is then merged from all runs at once (a branch-free loser
//! tree over the runs' heads), every range by its own task, straight into
//! its slice of the output. One pass over the data, all workers busy to
//! the end, and stable: equal items keep run order. `ember-bench merge`
//! measures it against concatenating the runs and sorting them with
//! rayon's parallel sort, whose last merge levels use few workers.
//!
//! A top-k run never sorts everything: each run keeps only its own k best
//! (selection, linear time), and only those candidates are ordered.

use std::cmp::Ordering;
use std::mem::MaybeUninit;

use crate::pool::Pool;

/// Ranges per worker in a p-way merge: a few, so that ranges balance.
const RANGES_PER_WORKER: usize = 4;
/// Regular samples taken from each sorted run.
const SAMPLES_PER_RUN: usize = 64;

/// Orders the union of the runs by `cmp` (an unstable order: the runs'
/// items are distinct under it), or selects its first `top` items when
/// given ([`top_k`]).
pub(crate) fn order<T, F>(pool: &Pool, top: Option<usize>, runs: Vec<Vec<T>>, cmp: F) -> Vec<T>
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    match top {
        Some(k) => top_k(pool, runs, k, cmp),
        None => merge::<T, F, false>(pool, runs, &cmp),
    }
}

/// Orders the union of the runs. Stable with respect to run order and, in
/// each run, to position, when `STABLE` (ties then keep input order);
/// otherwise ties are in an unspecified order. A constant, so that each
/// caller compiles only the sort it uses.
pub(crate) fn merge<T, F, const STABLE: bool>(pool: &Pool, mut runs: Vec<Vec<T>>, cmp: &F) -> Vec<T>
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    let sort = |run: &mut Vec<T>| match STABLE {
        true => run.sort_by(cmp),
        false => run.sort_unstable_by(cmp),
    };
    runs.retain(|r| !r.is_empty());
    let n: usize = runs.iter().map(Vec::len).sum();
    let ranges = pool.threads() * RANGES_PER_WORKER;
    if runs.len() <= 1 || n < 2 * ranges * SAMPLES_PER_RUN {
        // Too small to split up: one sort.
        let mut all = concat(runs);
        sort(&mut all);
        return all;
    }
    // 1. Sort every run, in parallel.
    let runs = pool.map_each(runs, |_, mut r| {
        sort(&mut r);
        r
    });
    let splitters = splitters(&runs, ranges, cmp);
    let cuts = cuts(&runs, &splitters, cmp);
    merge_ranges(pool, runs, cuts, n, cmp)
}

fn concat<T>(runs: Vec<Vec<T>>) -> Vec<T> {
    let mut all = Vec::with_capacity(runs.iter().map(Vec::len).sum());
    for run in runs {
        all.extend(run);
    }
    all
}

/// Step 2: splitters from regular samples of the sorted runs: positions
/// `(run, index)`, so that ties between runs are cut consistently.
fn splitters<T, F>(runs: &[Vec<T>], ranges: usize, cmp: &F) -> Vec<(usize, usize)>
where
    F: Fn(&T, &T) -> Ordering,
{
    let mut samples: Vec<(usize, usize)> = runs
        .iter()
        .enumerate()
        .flat_map(|(r, run)| {
            let step = run.len().div_ceil(SAMPLES_PER_RUN).max(1);
            (step / 2..run.len()).step_by(step).map(move |i| (r, i))
        })
        .collect();
    samples.sort_by(|a, b| cmp(&runs[a.0][a.1], &runs[b.0][b.1]).then(a.cmp(b)));
    (1..ranges)
        .map(|k| samples[k * samples.len() / ranges])
        .collect()
}

/// Step 3: where each run is cut at each splitter, in the total order
/// (value, run, index): the splitter's own run is cut exactly at the
/// splitter; other runs put ties before the cut when they come earlier in
/// run order. Each run's cuts start at 0 and end at its length.
fn cuts<T, F>(runs: &[Vec<T>], splitters: &[(usize, usize)], cmp: &F) -> Vec<Vec<usize>>
where
    F: Fn(&T, &T) -> Ordering,
{
    let cut = |r: usize, run: &[T], (sr, si): (usize, usize)| {
        if r == sr {
            return si;
        }
        let pivot = &runs[sr][si];
        run.partition_point(|x| match cmp(x, pivot) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => r < sr,
        })
    };
    runs.iter()
        .enumerate()
        .map(|(r, run)| {
            let inner = splitters.iter().map(|&s| cut(r, run, s));
            std::iter::once(0).chain(inner).chain([run.len()]).collect()
        })
        .collect()
}

/// Step 4: merges every range from all runs at once, in parallel, each range
/// straight into its own slice of the output: every item is moved once,
/// from its run to its place (cutting the runs into owned pieces and
/// concatenating the merged ranges would copy everything twice more).
fn merge_ranges<T, F>(
    pool: &Pool,
    mut runs: Vec<Vec<T>>,
    starts: Vec<Vec<usize>>,
    n: usize,
    cmp: &F,
) -> Vec<T>
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    let ranges = starts.first().map_or(0, |s| s.len() - 1);
    let mut out: Vec<T> = Vec::with_capacity(n);
    let mut tasks: Vec<Task<'_, T>> = Vec::with_capacity(ranges);
    let mut rest = &mut out.spare_capacity_mut()[..n];
    for k in 0..ranges {
        let pieces: Vec<Piece<T>> = runs
            .iter()
            .zip(&starts)
            .map(|(run, start)| Piece {
                // In bounds: cuts are positions in the run, in order.
                next: run[start[k]..start[k + 1]].as_ptr(),
                left: start[k + 1] - start[k],
            })
            .filter(|p| p.left > 0)
            .collect();
        let len = pieces.iter().map(|p| p.left).sum();
        let (dst, tail) = rest.split_at_mut(len);
        rest = tail;
        tasks.push((pieces, dst));
    }
    // The items now belong to the pieces: each is read out exactly once
    // below, so the runs must not drop them (if a comparison panics, the
    // items not yet moved leak, which is safe).
    for run in &mut runs {
        // SAFETY: 0 <= capacity, and no item of the run is dropped or read
        // through the run again: the pieces own them.
        unsafe { run.set_len(0) };
    }
    pool.map_each(tasks, |_, (mut pieces, dst)| kway(&mut pieces, dst, cmp));
    // SAFETY: the ranges' slices tile out[..n] and `kway` wrote every slot
    // of its slice (it writes exactly as many items as its pieces hold,
    // which is the slice's length).
    unsafe { out.set_len(n) };
    drop(runs);
    out
}

/// One range of a p-way merge: its pieces of every run, and its slice of
/// the output.
type Task<'o, T> = (Vec<Piece<T>>, &'o mut [MaybeUninit<T>]);

/// The unread part of a sorted piece of a run, whose items the merge owns
/// and moves out one by one.
struct Piece<T> {
    next: *const T,
    left: usize,
}

// SAFETY: a piece is the only owner of its items (the run gave them up), so
// sending it sends the items: sound when they are `Send`.
unsafe impl<T: Send> Send for Piece<T> {}

impl<T> Piece<T> {
    /// The piece's next item.
    fn head(&self) -> &T {
        // SAFETY: `left > 0` whenever a piece is in the merge's heap, and
        // `next` then points at an item not yet moved out.
        unsafe { &*self.next }
    }

    /// Moves the next item out.
    fn take(&mut self) -> T {
        // SAFETY: as in `head`; the item is read once, then skipped.
        let item = unsafe { self.next.read() };
        self.left -= 1;
        // SAFETY: at most one past the piece's last item.
        self.next = unsafe { self.next.add(1) };
        item
    }
}

/// Merges sorted pieces into `out` (exactly as long as the pieces hold);
/// ties go to the lower piece index, so the merge is stable in piece order.
///
/// A loser tree (Knuth's tournament tree): after each output only the
/// winner's leaf-to-root path is replayed, one comparison per level, half
/// the comparisons of a binary heap's sift-down. On random keys every
/// comparison is a coin flip the branch predictor loses, so their number
/// is the merge's cost (`ember-bench merge` measures it; the heap it
/// replaced is in `docs/measurements.md`).
///
/// The replay is written as selects, not branches, so it compiles to
/// conditional moves; an exhausted piece leaves the tree (rebuilt, O(k),
/// k times per range), so the hot loop has no end-of-piece test.
fn kway<T, F: Fn(&T, &T) -> Ordering>(
    pieces: &mut Vec<Piece<T>>,
    out: &mut [MaybeUninit<T>],
    cmp: &F,
) {
    // Pieces stay in run order as exhausted ones leave, so ties between
    // positions are ties between runs.
    pieces.retain(|p| p.left > 0);
    let before = |pieces: &[Piece<T>], a: usize, b: usize| {
        cmp(pieces[a].head(), pieces[b].head()).then(a.cmp(&b)) == Ordering::Less
    };
    let mut tree = Vec::new();
    let mut at = 0;
    while !pieces.is_empty() {
        build(pieces, &mut tree, before);
        let k = pieces.len();
        loop {
            let mut win = tree[0];
            out[at].write(pieces[win].take());
            at += 1;
            if pieces[win].left == 0 {
                pieces.remove(win);
                break;
            }
            // Replay the winner's path with its next head.
            let mut node = (k + win) / 2;
            while node > 0 {
                let other = tree[node];
                let swap = before(pieces, other, win);
                tree[node] = if swap { win } else { other };
                win = if swap { other } else { win };
                node /= 2;
            }
            tree[0] = win;
        }
    }
    debug_assert_eq!(at, out.len(), "the output is as long as the pieces");
}

/// Builds the loser tree of `pieces` (all non-empty) into `tree`: leaves
/// are k..2k (leaf k + p is piece p), node i in 1..k holds the loser of the
/// match between its subtrees, `tree[0]` the overall winner.
fn build<T>(
    pieces: &[Piece<T>],
    tree: &mut Vec<usize>,
    before: impl Fn(&[Piece<T>], usize, usize) -> bool,
) {
    let k = pieces.len();
    let mut winners: Vec<usize> = (0..2 * k).map(|i| i.saturating_sub(k)).collect();
    tree.clear();
    tree.resize(k, 0);
    for i in (1..k).rev() {
        let (a, b) = (winners[2 * i], winners[2 * i + 1]);
        let (win, lose) = if before(pieces, b, a) { (b, a) } else { (a, b) };
        winners[i] = win;
        tree[i] = lose;
    }
    tree[0] = if k == 1 { 0 } else { winners[1] };
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
    let candidates = pool.map_each(runs, |_, mut run| {
        if run.len() > k {
            run.select_nth_unstable_by(k - 1, &cmp);
            run.truncate(k);
        }
        run
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
        let pool = Pool::new(2, true).unwrap();
        let runs: Vec<Vec<u32>> = (0..5)
            .map(|r| (0..100).map(|i| (i * 37 + r * 11) % 101).collect())
            .collect();
        let mut all = runs.concat();
        all.sort_by(|a, b| b.cmp(a));
        for k in [0, 1, 7, 100, 1000] {
            let top = top_k(&pool, runs.clone(), k, |a, b| b.cmp(a));
            assert_eq!(top, all[..k.min(all.len())]);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The stable merge gives the stable sort of the runs'
        /// concatenation: equal keys keep (run, position) order, and the
        /// unstable one the same keys in the same order. Few distinct keys
        /// force ties across range boundaries.
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
            let pool = Pool::new(threads, true).unwrap();
            let by_key = |a: &(u8, u32), b: &(u8, u32)| a.0.cmp(&b.0);
            let got = merge::<_, _, true>(&pool, runs.clone(), &by_key);
            prop_assert_eq!(&got, &want);
            let keys = |v: &[(u8, u32)]| v.iter().map(|p| p.0).collect::<Vec<_>>();
            let unstable = merge::<_, _, false>(&pool, runs, &by_key);
            prop_assert_eq!(keys(&unstable), keys(&want));
        }
    }
}
