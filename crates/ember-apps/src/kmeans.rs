//! k-means: Lloyd's iterative clustering of integer points (Phoenix's
//! `kmeans`), one MapReduce job per iteration on the same runtime.
//!
//! **Input**: a [`matrix`](crate::matrix) file, one point per row (`cols`
//! dimensions, `i32` coordinates).
//!
//! **Definition** (so that results are exact and the same for any thread
//! count or split size):
//! - the initial means are the first `k` points;
//! - each point goes to the nearest mean by squared Euclidean distance,
//!   ties to the lowest cluster index;
//! - a cluster's new mean is the floor of the exact (`i64`) sum of its points
//!   divided by their count, coordinate by coordinate; a cluster that gets no
//!   point keeps its mean;
//! - the iterations stop when an iteration leaves every mean unchanged (so the
//!   next one would assign every point as this one did), or after
//!   `max_iterations`.
//!
//! **Job**: map assigns each point of its split and sums, per cluster, the
//! points it got (locally, for the whole split), then emits one
//! `(cluster, ClusterSum)` pair per non-empty cluster; the [`AddClusters`]
//! combiner adds them; reduce divides.

use ember::{
    Combiner, Emit, Error, Input, Job, KeyHint, MapResult, Records, Result, RunOptions, Runtime,
    Split, Stats,
};

use crate::isa::{vectorized, Any, Fixed, Len};
use crate::matrix::{decode_into, Matrix};
use crate::multijob::add_stats;

/// The sum and count of the points a cluster got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSum {
    /// Sum of each coordinate.
    pub sums: Vec<i64>,
    /// Number of points.
    pub count: u64,
}

impl ClusterSum {
    fn add(&mut self, other: &ClusterSum) {
        for (s, o) in self.sums.iter_mut().zip(&other.sums) {
            *s += o;
        }
        self.count += other.count;
    }

    /// The mean: the floor of each coordinate's sum over the count (which
    /// must not be 0).
    pub fn mean(&self) -> Vec<i32> {
        let n = self.count as i64;
        // The floor of an average of i32 values is an i32.
        self.sums.iter().map(|s| s.div_euclid(n) as i32).collect()
    }
}

/// Adds [`ClusterSum`]s coordinate by coordinate.
#[derive(Debug, Clone, Copy, Default)]
pub struct AddClusters;

impl Combiner<ClusterSum> for AddClusters {
    type State = ClusterSum;
    type Reduced<'a> = ClusterSum;
    fn init(&self, v: ClusterSum) -> ClusterSum {
        v
    }
    fn add(&self, state: &mut ClusterSum, v: ClusterSum) {
        state.add(&v);
    }
    fn merge(&self, state: &mut ClusterSum, other: ClusterSum) {
        state.add(&other);
    }
    fn finish<O>(&self, state: ClusterSum, reduce: impl FnOnce(ClusterSum) -> O) -> O {
        reduce(state)
    }
}

/// What to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Number of clusters `k` (at least 1, at most the number of points).
    pub clusters: usize,
    /// Stop after this many iterations even if not converged (at least 1).
    pub max_iterations: usize,
}

impl Default for Params {
    /// WORKLOADS.md: 100 clusters, run to convergence (capped at 1000).
    fn default() -> Self {
        Params {
            clusters: 100,
            max_iterations: 1000,
        }
    }
}

/// The result of a clustering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clustering {
    /// Dimensions of a point.
    pub dims: usize,
    /// The means, `dims` coordinates per cluster, cluster by cluster.
    pub means: Vec<i32>,
    /// Points per cluster in the last iteration's assignment.
    pub sizes: Vec<u64>,
    /// Iterations run (each one a MapReduce job in the ember version).
    pub iterations: usize,
    /// True when the last iteration left every mean unchanged.
    pub converged: bool,
}

impl Clustering {
    /// The mean of cluster `c`.
    pub fn mean(&self, c: usize) -> &[i32] {
        &self.means[c * self.dims..(c + 1) * self.dims]
    }
}

/// Reported after each iteration of [`run`].
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// The iteration just done, from 1.
    pub iteration: usize,
    /// Clusters whose mean it changed.
    pub changed: usize,
}

/// How distances are computed: exactly, in `i32` lanes when the data's
/// range allows (the fast path), else in `i128`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    /// Every squared distance between a point and a mean fits in an `i32`.
    Narrow,
    /// Any `i32` coordinates.
    Wide,
}

impl Metric {
    /// The fastest exact metric for `dims`-dimensional data within `lo..=hi`.
    /// Means stay within the data's range (they are points, or floors of
    /// averages of points), so no coordinate difference exceeds `hi - lo`.
    fn for_data(dims: usize, (lo, hi): (i32, i32)) -> Metric {
        let span = (hi as i64 - lo as i64) as u128;
        if dims as u128 * span * span <= i32::MAX as u128 {
            Metric::Narrow
        } else {
            Metric::Wide
        }
    }
}

/// Per-cluster sums of the points assigned so far.
struct Accum {
    dims: usize,
    sums: Vec<i64>,
    counts: Vec<u64>,
}

impl Accum {
    fn new(k: usize, dims: usize) -> Accum {
        Accum {
            dims,
            sums: vec![0; k * dims],
            counts: vec![0; k],
        }
    }

    #[inline(always)]
    fn add(&mut self, c: usize, p: &[i32]) {
        for (s, &x) in self.sums[c * self.dims..(c + 1) * self.dims]
            .iter_mut()
            .zip(p)
        {
            *s += x as i64;
        }
        self.counts[c] += 1;
    }

    /// Adds the point in lane `l` of `coords` (one row of lanes per
    /// dimension).
    #[inline(always)]
    fn add_lane(&mut self, c: usize, coords: &[[i32; LANES]], l: usize) {
        for (s, xs) in self.sums[c * self.dims..(c + 1) * self.dims]
            .iter_mut()
            .zip(coords)
        {
            *s += xs[l] as i64;
        }
        self.counts[c] += 1;
    }

    /// The non-empty clusters' sums.
    fn clusters(&self) -> impl Iterator<Item = (usize, ClusterSum)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|c| *c.1 > 0)
            .map(|(c, &count)| {
                let sums = self.sums[c * self.dims..(c + 1) * self.dims].to_vec();
                (c, ClusterSum { sums, count })
            })
    }
}

/// Where a kernel reads coordinates from: values decoded once (the
/// sequential version) or the input's little-endian bytes, read in place
/// (the map tasks: nothing is copied at each iteration).
trait Source: Copy {
    /// Number of coordinates.
    fn len(self) -> usize;
    /// Coordinate `i` (of point `i / dims`).
    fn get(self, i: usize) -> i32;
}

impl Source for &[i32] {
    #[inline(always)]
    fn len(self) -> usize {
        <[i32]>::len(self)
    }
    #[inline(always)]
    fn get(self, i: usize) -> i32 {
        self[i]
    }
}

impl Source for &[u8] {
    #[inline(always)]
    fn len(self) -> usize {
        <[u8]>::len(self) / 4
    }
    #[inline(always)]
    fn get(self, i: usize) -> i32 {
        i32::from_le_bytes(self[4 * i..4 * i + 4].try_into().expect("4 bytes"))
    }
}

/// Assigns every point of `points` (`dims` coordinates each) to its nearest
/// mean (`means`: `dims` coordinates per cluster) and adds it to `acc`.
fn assign(metric: Metric, dims: usize, means: &[i32], points: impl Source, acc: &mut Accum) {
    vectorized(
        #[inline(always)]
        || match (metric, dims) {
            (Metric::Narrow, 1) => assign_narrow(Fixed::<1>, means, points, acc),
            (Metric::Narrow, 2) => assign_narrow(Fixed::<2>, means, points, acc),
            (Metric::Narrow, 3) => assign_narrow(Fixed::<3>, means, points, acc),
            (Metric::Narrow, 4) => assign_narrow(Fixed::<4>, means, points, acc),
            (Metric::Narrow, _) => assign_narrow(Any(dims), means, points, acc),
            (Metric::Wide, _) => assign_wide(dims, means, points, acc),
        },
    )
}

/// Points the narrow kernel handles at once, one per vector lane.
const LANES: usize = 16;

/// The narrow kernel: `LANES` points at a time, coordinate by coordinate in
/// vector lanes, against every mean in turn; a strict `<` keeps the lowest
/// cluster index on ties.
#[inline(always)]
fn assign_narrow<D: Len>(dims: D, means: &[i32], points: impl Source, acc: &mut Accum) {
    let d = dims.get();
    let n = points.len() / d;
    let mut coords = vec![[0i32; LANES]; d];
    let coords = &mut coords[..d];
    for first in (0..n).step_by(LANES) {
        let count = LANES.min(n - first);
        // Lanes past the last point repeat it; they are not added.
        for l in 0..LANES {
            let p = first + l.min(count - 1);
            for (j, c) in coords.iter_mut().enumerate() {
                c[l] = points.get(p * d + j);
            }
        }
        let mut best = [i32::MAX; LANES];
        let mut which = [0i32; LANES];
        for (c, m) in means.chunks_exact(d).enumerate() {
            let mut dist = [0i32; LANES];
            for (xs, &mj) in coords.iter().zip(m) {
                for (s, &x) in dist.iter_mut().zip(xs) {
                    let t = x.wrapping_sub(mj);
                    *s = s.wrapping_add(t.wrapping_mul(t));
                }
            }
            for l in 0..LANES {
                if dist[l] < best[l] {
                    best[l] = dist[l];
                    which[l] = c as i32;
                }
            }
        }
        for (l, &c) in which.iter().enumerate().take(count) {
            acc.add_lane(c as usize, coords, l);
        }
    }
}

/// The exact kernel for any coordinates: `i128` distances, point by point.
#[inline(always)]
fn assign_wide(dims: usize, means: &[i32], points: impl Source, acc: &mut Accum) {
    let mut p = vec![0i32; dims];
    for first in (0..points.len()).step_by(dims) {
        for (j, x) in p.iter_mut().enumerate() {
            *x = points.get(first + j);
        }
        acc.add(nearest(&p, means), &p);
    }
}

/// The cluster of point `p` by the definition (the module's notes): the
/// nearest of `means` (`p.len()` coordinates each) by exact squared
/// distance, ties to the lowest index.
pub(crate) fn nearest(p: &[i32], means: &[i32]) -> usize {
    let mut best = (i128::MAX, 0);
    for (c, m) in means.chunks_exact(p.len()).enumerate() {
        let s: i128 = p
            .iter()
            .zip(m)
            .map(|(&x, &y)| (x as i128 - y as i128).pow(2))
            .sum();
        if s < best.0 {
            best = (s, c);
        }
    }
    best.1
}

/// The sums, per nearest mean, of the points in `data` (rows of `dims`
/// little-endian `i32`s), for the non-empty clusters: one iteration's map
/// over a split on its own. A worker process does not see the whole
/// input's range, so the metric is chosen from the split's values and the
/// means' (every difference it computes is between the two).
pub(crate) fn split_sums(dims: usize, means: &[i32], data: &[u8]) -> Vec<(usize, ClusterSum)> {
    let values = data
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes")));
    let (lo, hi) = values
        .chain(means.iter().copied())
        .fold((i32::MAX, i32::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let metric = match lo <= hi {
        true => Metric::for_data(dims, (lo, hi)),
        false => Metric::Wide,
    };
    let mut acc = Accum::new(means.len() / dims, dims);
    assign(metric, dims, means, data, &mut acc);
    acc.clusters().collect()
}

/// One iteration as a MapReduce job.
struct Step<'a> {
    dims: usize,
    means: &'a [i32],
    metric: Metric,
}

impl Job for Step<'_> {
    type Key = u32;
    type Value = ClusterSum;
    type Combiner = AddClusters;
    /// The new mean and the cluster's size.
    type Out = (Vec<i32>, u64);

    fn records(&self) -> Records {
        Records::Fixed(4 * self.dims)
    }

    /// Cluster ids are dense: the array container holds them, no sampling.
    fn keys(&self) -> KeyHint {
        KeyHint::Dense(self.means.len() / self.dims)
    }

    fn map<E: Emit<u32, ClusterSum>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let mut acc = Accum::new(self.means.len() / self.dims, self.dims);
        assign(self.metric, self.dims, self.means, split.data, &mut acc);
        for (c, sum) in acc.clusters() {
            emit.emit(c as u32, sum);
        }
        Ok(())
    }

    fn reduce(&self, _cluster: &u32, sum: ClusterSum) -> (Vec<i32>, u64) {
        (sum.mean(), sum.count)
    }
    /// Cluster sums and counts fold in any order.
    fn pipelinable(&self) -> bool {
        true
    }
}

/// A checked problem.
struct Setup {
    dims: usize,
    metric: Metric,
    params: Params,
    initial: Vec<i32>,
}

fn setup(points: &Matrix<'_>, params: Params) -> Result<Setup> {
    let k = params.clusters;
    if k == 0 {
        return Err(Error::Config("k-means needs at least 1 cluster".into()));
    }
    if params.max_iterations == 0 {
        return Err(Error::Config("k-means needs at least 1 iteration".into()));
    }
    if points.rows < k {
        return Err(Error::InvalidInput(format!(
            "{} points, fewer than the {k} clusters (the first {k} points are the initial means)",
            points.rows
        )));
    }
    if points.rows as u64 > u32::MAX as u64 {
        // Keeps every cluster's coordinate sum within an i64.
        return Err(Error::InvalidInput(format!(
            "{} points: at most {} are supported",
            points.rows,
            u32::MAX
        )));
    }
    let range = points.range().expect("at least one point");
    let mut initial = Vec::with_capacity(k * points.cols);
    decode_into(&points.data[..k * points.row_bytes()], &mut initial);
    Ok(Setup {
        dims: points.cols,
        metric: Metric::for_data(points.cols, range),
        params,
        initial,
    })
}

/// The new mean and size of each non-empty cluster, and what else a step
/// reports.
type StepResult<T, E = Error> = std::result::Result<(Vec<(usize, (Vec<i32>, u64))>, T), E>;

/// Lloyd's loop: `step(means)` assigns the points and computes the new
/// means; `on_iteration` sees the progress and what the step reported.
fn lloyd<T, E>(
    s: &Setup,
    mut step: impl FnMut(&[i32]) -> StepResult<T, E>,
    mut on_iteration: impl FnMut(&Progress, T),
) -> std::result::Result<Clustering, E> {
    let dims = s.dims;
    let mut means = s.initial.clone();
    let mut sizes = vec![0; s.params.clusters];
    for iteration in 1..=s.params.max_iterations {
        let mut next = means.clone();
        sizes.fill(0);
        let (clusters, report) = step(&means)?;
        for (c, (mean, count)) in clusters {
            next[c * dims..(c + 1) * dims].copy_from_slice(&mean);
            sizes[c] = count;
        }
        let changed = next
            .chunks_exact(dims)
            .zip(means.chunks_exact(dims))
            .filter(|(a, b)| a != b)
            .count();
        means = next;
        on_iteration(&Progress { iteration, changed }, report);
        if changed == 0 {
            return Ok(Clustering {
                dims,
                means,
                sizes,
                iterations: iteration,
                converged: true,
            });
        }
    }
    Ok(Clustering {
        dims,
        means,
        sizes,
        iterations: s.params.max_iterations,
        converged: false,
    })
}

/// Clusters the points with ember: one job per iteration, all on `rt`.
/// `on_iteration` is called after each one with its stats; the returned
/// stats are summed over the iterations.
///
/// The points are in memory (a [`Matrix`] over bytes, memory-mapped by the
/// CLI): every iteration reads all of them again, which a stream read once
/// in chunks cannot serve, so chunked ingest does not apply here.
pub fn run(
    rt: &Runtime,
    points: &Matrix<'_>,
    params: Params,
    opts: &RunOptions,
    mut on_iteration: impl FnMut(&Progress, &Stats),
) -> Result<(Clustering, Stats)> {
    let s = setup(points, params)?;
    let input = Input::bytes(points.data);
    let mut total = Stats::default();
    let clustering = lloyd(
        &s,
        |means| {
            let step = Step {
                dims: s.dims,
                means,
                metric: s.metric,
            };
            let out = rt.run_with(&step, &input, opts)?;
            let clusters = out.pairs.into_iter().map(|(c, m)| (c as usize, m));
            Ok((clusters.collect(), out.stats))
        },
        |p, stats| {
            add_stats(&mut total, &stats);
            on_iteration(p, &stats);
        },
    )?;
    Ok((clustering, total))
}

/// Clusters the points as [`run`] does, with each iteration's cluster sums
/// computed by `step` from the means (in worker processes, for `ember
/// kmeans --isolate`): the non-empty clusters' sums, which must be those of
/// every point's nearest mean. `on_iteration` is called after each one.
pub fn run_stepped<E: From<Error>>(
    points: &Matrix<'_>,
    params: Params,
    mut step: impl FnMut(&[i32]) -> std::result::Result<Vec<(usize, ClusterSum)>, E>,
    mut on_iteration: impl FnMut(&Progress),
) -> std::result::Result<Clustering, E> {
    let s = setup(points, params)?;
    lloyd(
        &s,
        |means| {
            let mut clusters = Vec::new();
            for (c, sum) in step(means)? {
                if c >= params.clusters {
                    return Err(Error::InvalidInput(format!(
                        "an iteration's sums name cluster {c} of {}",
                        params.clusters
                    ))
                    .into());
                }
                if sum.count > 0 {
                    clusters.push((c, (sum.mean(), sum.count)));
                }
            }
            Ok((clusters, ()))
        },
        |p, ()| on_iteration(p),
    )
}

/// The plain sequential k-means: the correctness oracle and the benchmark
/// baseline.
pub fn sequential(points: &Matrix<'_>, params: Params) -> Result<Clustering> {
    let s = setup(points, params)?;
    let values = points.values();
    lloyd(
        &s,
        |means| {
            let mut acc = Accum::new(params.clusters, s.dims);
            assign(s.metric, s.dims, means, &values[..], &mut acc);
            let clusters = acc.clusters().map(|(c, sum)| (c, (sum.mean(), sum.count)));
            Ok((clusters.collect(), ()))
        },
        |_, ()| {},
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// The nearest center by the definition, computed plainly.
    fn nearest(p: &[i32], means: &[i32]) -> usize {
        let d = p.len();
        let dist = |c: usize| -> i128 {
            (0..d)
                .map(|i| (p[i] as i128 - means[c * d + i] as i128).pow(2))
                .sum()
        };
        (0..means.len() / d).min_by_key(|&c| (dist(c), c)).unwrap()
    }

    #[test]
    fn both_metrics_assign_by_the_definition_ties_included() {
        let mut r = Xoshiro256PlusPlus::seed_from_u64(5);
        for (dims, k, hi, n) in [
            (3, 100, 1000, 400),
            (2, 7, 3, 33),
            (5, 33, 4, 401),
            (1, 1, 10, 5),
            (4, 129, 50, 16),
            (3, 2, -1000, 17),
        ] {
            let points: Vec<i32> = (0..n * dims)
                .map(|_| r.gen_range(hi.min(0)..hi.max(1)))
                .collect();
            // Means with duplicates, so that ties happen.
            let means: Vec<i32> = (0..k * dims)
                .map(|_| r.gen_range(hi.min(0)..hi.max(1)))
                .collect();
            assert_eq!(
                Metric::for_data(dims, (hi.min(0), hi.max(1))),
                Metric::Narrow
            );
            let mut narrow = Accum::new(k, dims);
            assign(Metric::Narrow, dims, &means, &points[..], &mut narrow);
            let mut wide = Accum::new(k, dims);
            assign(Metric::Wide, dims, &means, &points[..], &mut wide);
            // The same from the points' bytes, as the map tasks read them.
            let bytes: Vec<u8> = points.iter().flat_map(|x| x.to_le_bytes()).collect();
            let mut from_bytes = Accum::new(k, dims);
            assign(Metric::Narrow, dims, &means, &bytes[..], &mut from_bytes);
            assert_eq!(from_bytes.sums, narrow.sums);
            assert_eq!(from_bytes.counts, narrow.counts);
            let mut want = Accum::new(k, dims);
            for p in points.chunks_exact(dims) {
                want.add(nearest(p, &means), p);
            }
            assert_eq!(narrow.counts, want.counts, "dims {dims} k {k}");
            assert_eq!(narrow.sums, want.sums);
            assert_eq!(wide.counts, want.counts);
            assert_eq!(wide.sums, want.sums);
        }
    }

    #[test]
    fn metric_falls_back_to_wide_for_large_ranges() {
        assert_eq!(Metric::for_data(3, (0, 999)), Metric::Narrow);
        assert_eq!(Metric::for_data(3, (-13_000, 13_000)), Metric::Narrow);
        assert_eq!(Metric::for_data(3, (0, 30_000)), Metric::Wide);
        assert_eq!(Metric::for_data(2, (i32::MIN, i32::MAX)), Metric::Wide);
    }

    #[test]
    fn means_are_floors() {
        let s = ClusterSum {
            sums: vec![7, -7, 0],
            count: 2,
        };
        assert_eq!(s.mean(), vec![3, -4, 0]);
    }
}
