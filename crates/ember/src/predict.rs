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
//! (Metis over-predicts skewed inputs, its Figure 16).
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
    // beta as the local slope of log distinct over log pairs, from each
    // worker's middle point to its last, weighted by pairs: the slope at the
    // largest scale seen, which is the better guide to larger ones (distinct
    // keys of skewed inputs grow ever slower).
    let (mut num, mut den) = (0.0, 0.0);
    for h in histories {
        let (Some(&(p0, d0)), Some(&(p1, d1))) = (h.get(h.len().saturating_sub(1) / 2), h.last())
        else {
            continue;
        };
        if p1 > p0 && p0 > 0 && d0 > 0 {
            let b = ((d1 as f64 / d0 as f64).ln() / (p1 as f64 / p0 as f64).ln()).clamp(0.0, 1.0);
            num += b * p1 as f64;
            den += p1 as f64;
        }
    }
    let beta = if den > 0.0 { num / den } else { 1.0 };
    let workers = histories.len().max(1) as f64;
    let total_pairs = pairs as f64 / fraction.max(1e-9);
    let final_pairs = total_pairs / workers;
    let now_pairs = (pairs as f64 / workers).max(1.0);
    let now_distinct = distinct as f64 / workers;
    let keys = (now_distinct * (final_pairs / now_pairs).powf(beta)).min(final_pairs);
    Prediction {
        pairs,
        repeats,
        beta,
        keys_per_worker: keys.round() as u64,
        pairs_per_worker: final_pairs.round() as u64,
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
        // 50 keys seen again and again: beta 0, prediction stays 50.
        let fixed = vec![vec![(1000, 50), (2000, 50)]; 2];
        let p = predict(&fixed, 0.05);
        assert_eq!(p.beta, 0.0);
        assert_eq!(p.keys_per_worker, 50);
        assert!(p.repeats > 20.0);
    }
}
