//! Prediction by sampling, and the container choice (Metis section 3.2).
//!
//! Before the map phase proper, `map` runs on a sample of the splits (about
//! 5% of them, evenly spaced over the whole input so that a skewed head
//! cannot mislead it) into ordinary hash containers. Each worker notes its
//! pairs and distinct keys after every sample split, which gives both the
//! repetition rate (pairs per distinct key) and how fast the distinct count
//! grows with the pairs seen: `d ~ p^beta`, `beta` near 1 for unique keys and
//! near 0 for a small fixed vocabulary. The keys a worker will hold at the end
//! are predicted by extrapolating that curve, not linearly as Metis does
//! (Metis over-predicts skewed inputs, its Figure 16), and with its bend: a
//! skewed input drawn from a finite set of keys saturates, its slope falls
//! as the pairs grow, and the slope at the sample's scale held constant
//! over-predicts the keys (see [`Growth`]).
//!
//! The sample's output is kept when the choice is the hash container (the
//! sample containers become the workers' containers), and redone otherwise,
//! so no pair is lost or counted twice.

use crate::input::SplitRange;

/// Share of the splits sampled.
const SAMPLE_FRACTION: f64 = 0.05;
/// Below this many splits per worker the input is not sampled.
const MIN_SPLITS_PER_WORKER: usize = 4;
/// Pieces of the sample per worker (points in each worker's history).
pub(crate) const PIECES_PER_WORKER: usize = 4;
/// Which splits to sample: about 5% of them (at least one), evenly spaced
/// over the input. Empty when the input is too small for sampling to pay.
/// The runtime maps the sample in pieces, several per worker.
pub(crate) fn sample_splits(splits: &[SplitRange], threads: usize) -> Vec<usize> {
    let n = splits.len();
    if n < threads * MIN_SPLITS_PER_WORKER {
        return Vec::new();
    }
    let m = ((n as f64 * SAMPLE_FRACTION).ceil() as usize).clamp(1, n / 2);
    (0..m).map(|i| i * n / m + n / (2 * m)).collect()
}

/// What one worker saw while sampling: `(pairs, distinct)` after each
/// sample split.
pub(crate) type History = Vec<(u64, u64)>;

/// The sample's verdict.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prediction {
    /// Pairs emitted by the sample.
    pub(crate) pairs: u64,
    /// Pairs per distinct key, per worker on average.
    pub(crate) repeats: f64,
    /// Growth exponent of distinct keys with pairs.
    pub(crate) beta: f64,
    /// Distinct keys each worker is predicted to hold after the map phase.
    pub(crate) keys_per_worker: u64,
    /// Pairs each worker is predicted to emit over the whole input.
    pub(crate) pairs_per_worker: u64,
    /// Distinct keys of the whole input: what one table of every pair
    /// would hold (the partitioned layout's tables together).
    pub(crate) keys_in_all: u64,
}

/// Extrapolates the workers' histories to the whole input, of which the
/// sample was `fraction` (by bytes).
pub(crate) fn predict(histories: &[History], fraction: f64) -> Prediction {
    let last = |h: &History| h.last().copied().unwrap_or((0, 0));
    let pairs: u64 = histories.iter().map(|h| last(h).0).sum();
    let distinct: u64 = histories.iter().map(|h| last(h).1).sum();
    let repeats = if distinct == 0 {
        1.0
    } else {
        pairs as f64 / distinct as f64
    };
    // Each worker's growth curve, weighted by its pairs: the slope at the
    // largest scale seen, and how fast the slope falls (see `Growth`).
    let (mut beta, mut bend, mut weight) = (0.0, 0.0, 0.0);
    for h in histories {
        if let Some(g) = Growth::of(h) {
            let w = last(h).0 as f64;
            beta += g.beta * w;
            bend += g.bend * w;
            weight += w;
        }
    }
    let growth = match weight > 0.0 {
        true => Growth {
            beta: beta / weight,
            bend: bend / weight,
        },
        false => Growth {
            beta: 1.0,
            bend: 0.0,
        },
    };
    let workers = histories.len().max(1) as f64;
    let total_pairs = pairs as f64 / fraction.max(1e-9);
    let final_pairs = total_pairs / workers;
    let now_pairs = (pairs as f64 / workers).max(1.0);
    let now_distinct = distinct as f64 / workers;
    let keys = (now_distinct * growth.factor(final_pairs / now_pairs)).min(final_pairs);
    // One worker's curve read at every pair: the keys all workers hold
    // between them, each once.
    let in_all = (now_distinct * growth.factor(total_pairs / now_pairs)).min(total_pairs);
    Prediction {
        pairs,
        repeats,
        beta: growth.beta,
        keys_per_worker: keys.round() as u64,
        pairs_per_worker: final_pairs.round() as u64,
        keys_in_all: in_all.round() as u64,
    }
}

/// How a worker's distinct keys grow with its pairs, on log-log axes: the
/// slope at the last point seen (`beta`: 1 for unique keys, 0 for a fixed
/// vocabulary, between for text) and how fast that slope falls per unit of
/// log pairs (`bend`, never positive). A power law (Heaps' law) has no
/// bend and is extrapolated as such; a vocabulary that saturates (a skewed
/// input drawn from a finite set of keys) bends down, and extrapolating its
/// last slope alone over-predicts the keys held several times over.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Growth {
    beta: f64,
    bend: f64,
}

impl Growth {
    /// The growth of one history, from its first, middle and last points:
    /// the slopes of the early and late halves, and the change between them.
    /// None when the history has too few points to show a slope.
    fn of(h: &History) -> Option<Growth> {
        let at = |i: usize| {
            h.get(i)
                .filter(|&&(p, d)| p > 0 && d > 0)
                .map(|&(p, d)| ((p as f64).ln(), (d as f64).ln()))
        };
        let end = h.len().checked_sub(1)?;
        let (first, mid, last) = (at(0)?, at(end / 2)?, at(end)?);
        let slope = |(x0, y0): (f64, f64), (x1, y1): (f64, f64)| {
            (x1 > x0).then(|| ((y1 - y0) / (x1 - x0)).clamp(0.0, 1.0))
        };
        let late = slope(mid, last)?;
        // The slopes hold at their halves' midpoints, (last - first) / 2
        // apart on the log axis.
        let bend = match slope(first, mid) {
            Some(early) => ((late - early) / ((last.0 - first.0) / 2.0)).min(0.0),
            None => 0.0,
        };
        let beta = (late + bend * (last.0 - mid.0) / 2.0).clamp(0.0, 1.0);
        Some(Growth { beta, bend })
    }

    /// How many times the keys grow while the pairs grow `ratio` times:
    /// the slope falls by `bend` per unit of log pairs until it is flat.
    fn factor(&self, ratio: f64) -> f64 {
        let mut x = ratio.max(1.0).ln();
        if self.bend < 0.0 {
            x = x.min(self.beta / -self.bend);
        }
        (self.beta * x + self.bend * x * x / 2.0).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(i: usize) -> SplitRange {
        SplitRange {
            part: 0,
            start: i,
            end: i + 1,
        }
    }

    #[test]
    fn samples_are_spread_and_bounded() {
        let splits: Vec<_> = (0..100).map(split).collect();
        let s = sample_splits(&splits, 2);
        assert_eq!(s.len(), 5);
        assert!(s[0] < 20 && *s.last().unwrap() > 80, "{s:?}");
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(sample_splits(&splits[..7], 2).is_empty());
        let few: Vec<_> = (0..8).map(split).collect();
        assert_eq!(sample_splits(&few, 2).len(), 1);
    }

    #[test]
    fn unique_keys_extrapolate_linearly_and_a_fixed_vocabulary_flat() {
        // Every pair a new key: beta 1, keys per worker = pairs per worker.
        let unique = vec![vec![(100, 100), (200, 200)]; 2];
        let p = predict(&unique, 0.1);
        assert!((p.beta - 1.0).abs() < 1e-9);
        assert_eq!(p.keys_per_worker, 2000);
        assert_eq!(p.keys_in_all, 4000);
        // 50 keys seen again and again: beta 0, prediction stays 50.
        let fixed = vec![vec![(1000, 50), (2000, 50)]; 2];
        let p = predict(&fixed, 0.05);
        assert_eq!(p.beta, 0.0);
        assert_eq!((p.keys_per_worker, p.keys_in_all), (50, 50));
        assert!(p.repeats > 20.0);
    }

    /// `(pairs, distinct)` after each of `points` equal pieces of `pairs`
    /// pairs, for the expected distinct keys of `d(pairs)`.
    fn history(pairs: f64, points: usize, d: impl Fn(f64) -> f64) -> History {
        (1..=points)
            .map(|i| {
                let n = pairs * i as f64 / points as f64;
                (n.round() as u64, d(n).round() as u64)
            })
            .collect()
    }

    /// Expected distinct keys among `n` draws from a Zipf law of exponent
    /// 1 over `vocabulary` keys.
    fn zipf(vocabulary: usize, n: f64) -> f64 {
        let h: f64 = (1..=vocabulary).map(|i| 1.0 / i as f64).sum();
        (1..=vocabulary)
            .map(|i| 1.0 - (-n / (i as f64 * h)).exp())
            .sum()
    }

    #[test]
    fn a_power_law_extrapolates_exactly() {
        for points in [3, 4, 5] {
            let heaps = vec![history(80_000.0, points, |n| 30.0 * n.powf(0.6)); 2];
            let p = predict(&heaps, 0.05);
            let want = 30.0 * 1_600_000f64.powf(0.6);
            let err = p.keys_per_worker as f64 / want - 1.0;
            assert!(err.abs() < 0.01, "{points} points: {p:?} against {want}");
            // Both workers' pairs in one table.
            let all = 30.0 * 3_200_000f64.powf(0.6);
            let err = p.keys_in_all as f64 / all - 1.0;
            assert!(err.abs() < 0.01, "{points} points: {p:?} against {all}");
            assert!((p.beta - 0.6).abs() < 1e-3);
        }
    }

    #[test]
    fn a_saturating_vocabulary_bends_the_extrapolation_down() {
        // The shape of the 256 MiB Zipf corpus at 1/100 the scale: the
        // sample sees 0.8 pairs per vocabulary key, the run 20 times more.
        let v = 10_000;
        let hist = vec![history(8_000.0, 4, |n| zipf(v, n)); 2];
        let p = predict(&hist, 0.05);
        let held = zipf(v, 160_000.0);
        let straight = {
            let g = Growth::of(&hist[0]).unwrap();
            let (p0, d0) = hist[0][1];
            let (p1, d1) = hist[0][3];
            let b = (d1 as f64 / d0 as f64).ln() / (p1 as f64 / p0 as f64).ln();
            assert!(g.bend < 0.0 && g.beta < b, "{g:?}");
            d1 as f64 * 20f64.powf(b)
        };
        let ratio = p.keys_per_worker as f64 / held;
        assert!((1.0..1.5).contains(&ratio), "{p:?} against {held}");
        assert!(straight / held > 1.7, "{straight} against {held}");
    }

    #[test]
    fn the_bend_never_predicts_fewer_keys_than_seen() {
        // A slope that falls fast flattens out instead of turning down.
        let g = Growth {
            beta: 0.5,
            bend: -1.0,
        };
        let f = g.factor(1e6);
        assert!((f - 0.125f64.exp()).abs() < 1e-12, "{f}");
        assert_eq!(g.factor(0.5), 1.0);
    }
}
