//! Linear regression: the least-squares line through a file of points
//! (Phoenix's `linear_regression`).
//!
//! **Input**: points stored as pairs of signed bytes `(x, y)`, nothing else
//! (an odd file length is malformed).
//!
//! **Job**: five sums, `SX, SY, SXX, SYY, SXY`, as keys 0..5 with a [`Sum`]
//! combiner. `map` accumulates a whole split locally and emits five pairs
//! per split; the fit (`y = a + b x`, and R²) is computed from the exact
//! integer sums, so it does not depend on the schedule.

use std::io::{self, Write};

use ember::{
    Emit, Error, Input, Job, KeyHint, MapResult, Records, Result, RunOptions, Runtime, Split,
    Stats, Sum,
};
use rand::RngCore;

use crate::blocks;

/// Names of the sums, by key.
pub const SUM_NAMES: [&str; 5] = ["SX", "SY", "SXX", "SYY", "SXY"];

/// The five sums over all points, and the number of points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sums {
    /// Points.
    pub n: u64,
    /// `SX, SY, SXX, SYY, SXY`, in key order.
    pub s: [i64; 5],
}

/// The least-squares line `y = a + b x` and its coefficient of
/// determination.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// Intercept.
    pub a: f64,
    /// Slope.
    pub b: f64,
    /// R²: the share of the variance of y the line explains (1 when y is
    /// constant).
    pub r2: f64,
}

impl Sums {
    /// Adds the point `(x, y)`.
    pub fn add_point(&mut self, x: i64, y: i64) {
        self.n += 1;
        for (s, v) in self.s.iter_mut().zip([x, y, x * x, y * y, x * y]) {
            *s += v;
        }
    }

    /// The fit, or `None` when it is undefined (no points, or every x
    /// equal). Computed from the exact sums in 128-bit integers, then
    /// divided once in `f64` (Phoenix's formulas).
    pub fn fit(&self) -> Option<Fit> {
        let n = i128::from(self.n);
        let [sx, sy, sxx, syy, sxy] = self.s.map(i128::from);
        let dx = n * sxx - sx * sx;
        let dy = n * syy - sy * sy;
        let cxy = n * sxy - sx * sy;
        if n == 0 || dx == 0 {
            return None;
        }
        let b = cxy as f64 / dx as f64;
        let a = (sy as f64 - b * sx as f64) / n as f64;
        let r2 = if dy == 0 {
            1.0
        } else {
            (cxy as f64 / dx as f64) * (cxy as f64 / dy as f64)
        };
        Some(Fit { a, b, r2 })
    }
}

/// The sums of two sets of points are the sums of their union (what
/// [`Sum`] folds).
impl std::ops::AddAssign for Sums {
    fn add_assign(&mut self, other: Sums) {
        self.n += other.n;
        for (s, o) in self.s.iter_mut().zip(other.s) {
            *s += o;
        }
    }
}

/// Fails on a file of `len` bytes, which is not whole points.
pub fn check(len: u64) -> Result<()> {
    if !len.is_multiple_of(2) {
        return Err(Error::InvalidInput(format!(
            "linear regression input is {len} bytes, an odd length: points are pairs of bytes (x, y), so byte {} has no y",
            len - 1
        )));
    }
    Ok(())
}

/// Pairs summed in `i32` lanes before they are added to the `i64` totals:
/// `|x * y| <= 2^14`, so 2^16 pairs stay below 2^30.
const LANE_PAIRS: usize = 1 << 16;

/// The five sums over whole points (a trailing odd byte is ignored).
fn sum_points(data: &[u8]) -> [i64; 5] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { sum_points_avx2(data) };
    }
    sum_points_portable(data)
}

/// [`sum_points_portable`] compiled for AVX2: the same code, which the
/// compiler vectorizes twice as wide as with the baseline SSE2, enough to
/// keep up with memory where SSE2 is not; `ember-bench linear-regression`
/// measures it against a plain memory-read loop.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_points_avx2(data: &[u8]) -> [i64; 5] {
    sum_points_portable(data)
}

#[inline(always)]
fn sum_points_portable(data: &[u8]) -> [i64; 5] {
    let mut total = [0i64; 5];
    for chunk in data.chunks(2 * LANE_PAIRS) {
        let (mut sx, mut sy, mut sxx, mut syy, mut sxy) = (0i32, 0i32, 0i32, 0i32, 0i32);
        for p in chunk.chunks_exact(2) {
            let x = i32::from(p[0] as i8);
            let y = i32::from(p[1] as i8);
            sx += x;
            sy += y;
            sxx += x * x;
            syy += y * y;
            sxy += x * y;
        }
        for (t, s) in total.iter_mut().zip([sx, sy, sxx, syy, sxy]) {
            *t += i64::from(s);
        }
    }
    total
}

/// The linear regression job: its input is the points file.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinearRegression;

impl Job for LinearRegression {
    type Key = u8;
    type Value = i64;
    type Combiner = Sum;
    type Out = i64;

    fn records(&self) -> Records {
        Records::Fixed(2)
    }

    fn keys(&self) -> KeyHint {
        KeyHint::Dense(5)
    }

    fn map<E: Emit<u8, i64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for (key, s) in sum_points(split.data).into_iter().enumerate() {
            emit.emit(key as u8, s);
        }
        Ok(())
    }

    fn reduce(&self, _key: &u8, total: i64) -> i64 {
        total
    }
    /// The five sums fold in any order.
    fn pipelinable(&self) -> bool {
        true
    }
}

/// Runs the job over a points file's bytes: the sums and the run's stats.
pub fn run(rt: &Runtime, data: &[u8], opts: &RunOptions) -> Result<(Sums, Stats)> {
    run_input(rt, &Input::bytes(data), opts)
}

/// [`run`] over any [`Input`]: in memory, memory-mapped, or streamed in
/// chunks; the points of several files are summed together. Each file in
/// memory must be whole points; a streamed input's length is known only
/// once it is read, so an odd total length is an error after the run
/// (never a result).
pub fn run_input(rt: &Runtime, input: &Input<'_>, opts: &RunOptions) -> Result<(Sums, Stats)> {
    // A streamed part has no bytes here: it is checked below.
    for part in 0..input.parts() {
        check(input.part_bytes(part).len() as u64)?;
    }
    let out = rt.run_with(&LinearRegression, input, opts)?;
    // Every byte of a streamed input is counted in the stats as it is read.
    let len = out.stats.input_bytes;
    check(len)?;
    let mut sums = Sums {
        n: len / 2,
        s: [0; 5],
    };
    for (key, s) in out.pairs {
        sums.s[key as usize] = s;
    }
    Ok((sums, out.stats))
}

/// The plain sequential sums, the correctness oracle and benchmark baseline.
pub fn sequential(data: &[u8]) -> Result<Sums> {
    check(data.len() as u64)?;
    Ok(Sums {
        n: data.len() as u64 / 2,
        s: sum_points(data),
    })
}

/// What points to generate: `x` uniform in `0..100`, `y = x / 2 + 20 + e`
/// with `e` uniform in `-10..=10` (WORKLOADS.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointsSpec {
    /// File size in bytes (even: two bytes per point).
    pub size: u64,
    /// Random seed: the same spec gives the same bytes.
    pub seed: u64,
}

impl Default for PointsSpec {
    /// The WORKLOADS.md shape: 500 MiB of points.
    fn default() -> Self {
        PointsSpec {
            size: 500 << 20,
            seed: 7,
        }
    }
}

/// Writes the points to `out`, calling `progress(bytes_written)` as it goes.
pub fn write_points(
    spec: &PointsSpec,
    out: &mut impl Write,
    progress: impl FnMut(u64),
) -> io::Result<()> {
    if !spec.size.is_multiple_of(2) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} bytes is an odd size: points are 2 bytes each",
                spec.size
            ),
        ));
    }
    blocks::write_blocks(spec.size, 1 << 20, out, progress, |index, len| {
        let mut rng = blocks::rng(spec.seed, index);
        let mut data = vec![0; len];
        for p in data.chunks_exact_mut(2) {
            let r = rng.next_u64();
            let x = (r % 100) as i8;
            let e = ((r >> 32) % 21) as i8 - 10;
            p[0] = x as u8;
            p[1] = (x / 2 + 20 + e) as u8;
        }
        data
    })
}

/// Generated points in memory (tests and small inputs).
pub fn points(spec: &PointsSpec) -> io::Result<Vec<u8>> {
    let mut v = Vec::with_capacity(spec.size as usize);
    write_points(spec, &mut v, |_| {})?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_match_the_obvious_loop_on_extreme_values() {
        // Bytes of every value, including -128 and 127, over several lane
        // chunks.
        let data: Vec<u8> = (0..5 * LANE_PAIRS as u64 + 3)
            .flat_map(|i| [(i * 7) as u8, (i * 13 + 5) as u8])
            .collect();
        let mut want = [0i64; 5];
        for p in data.chunks_exact(2) {
            let (x, y) = (i64::from(p[0] as i8), i64::from(p[1] as i8));
            for (w, v) in want.iter_mut().zip([x, y, x * x, y * y, x * y]) {
                *w += v;
            }
        }
        assert_eq!(sequential(&data).unwrap().s, want);
        assert_eq!(sum_points_portable(&data), want);
    }

    #[test]
    fn fit_of_an_exact_line_and_degenerate_inputs() {
        // y = 3 + 2x at x = 0..10.
        let data: Vec<u8> = (0..10i8)
            .flat_map(|x| [x as u8, (3 + 2 * x) as u8])
            .collect();
        let fit = sequential(&data).unwrap().fit().unwrap();
        assert_eq!((fit.a, fit.b, fit.r2), (3.0, 2.0, 1.0));
        assert_eq!(sequential(&[]).unwrap().fit(), None);
        assert_eq!(sequential(&[5, 1, 5, 9]).unwrap().fit(), None);
    }

    #[test]
    fn generator_follows_the_spec() {
        let spec = PointsSpec {
            size: 3 << 20,
            seed: 1,
        };
        let data = points(&spec).unwrap();
        assert_eq!(data.len() as u64, spec.size);
        assert_eq!(data, points(&spec).unwrap());
        for p in data.chunks_exact(2) {
            let (x, y) = (p[0] as i8, p[1] as i8);
            assert!((0..100).contains(&x));
            assert!((x / 2 + 10..=x / 2 + 30).contains(&y));
        }
        let fit = sequential(&data).unwrap().fit().unwrap();
        // y = floor(x / 2) + 20 + e: slope 1/2, intercept 19.75.
        assert!((fit.b - 0.5).abs() < 0.01, "{fit:?}");
        assert!((fit.a - 19.75).abs() < 0.1, "{fit:?}");
        assert!(points(&PointsSpec { size: 3, seed: 1 }).is_err());
    }

    #[test]
    fn checksum_is_pinned() {
        let spec = PointsSpec {
            size: 100_000,
            seed: 7,
        };
        assert_eq!(
            blocks::checksum(&points(&spec).unwrap()),
            8_563_443_075_896_287_629
        );
    }
}
