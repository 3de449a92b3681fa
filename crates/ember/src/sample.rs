//! The sample (Metis section 3.2): before the map phase proper, `map` runs
//! on about 5% of the splits, evenly spread over the input, in pieces, so
//! that each worker sees how its distinct keys grow with the pairs it maps.
//! `predict` turns those histories into a prediction that sizes the
//! containers and guides the container choice.
//!
//! For a combiner that folds, the sample maps into ordinary hash containers,
//! which the run keeps when it chooses the hash container or pipelines (the
//! sampled splits then count as mapped); for a combiner that keeps values,
//! where a state per key is costly and the hash container rarely wins, it
//! only counts distinct key hashes, and the run maps the sampled splits
//! again. Either way no pair is lost or counted twice. Work that is redone
//! is overhead, so that sample maps only the first [`REDONE_SHARE`] of each
//! chosen split (still spread over the whole input).

use std::time::Instant;

use crate::combine::Combiner;
use crate::container::hash::HashContainer;
use crate::container::{Container, Counting, ForJob, KeyHashes, INITIAL_CAPACITY};
use crate::error::{Phase, Result};
use crate::input::{plan_slice, Input, SplitRange};
use crate::job::{Job, Records};
use crate::predict::{self, History, Prediction};
use crate::schedule::{map_splits, split_in, Batch, Team};
use crate::stats::secs;

/// The share of each chosen split that a sample maps when the run maps the
/// split again (a combiner that keeps values): about 1.5% of the input
/// instead of 5%, so that counting its key hashes costs under 1% of the
/// run, while its pieces still measure how distinct keys grow.
const REDONE_SHARE: f64 = 0.25;

/// A worker's hash container of the job's keys, values and combiner,
/// counting the pairs it receives.
pub(crate) type HashOf<J> =
    Counting<HashContainer<<J as Job>::Key, <J as Job>::Value, <J as Job>::Combiner>>;

/// What sampling found.
pub(crate) struct Sample<J: Job> {
    /// Indices of the sampled splits, ascending.
    pub(crate) splits: Vec<usize>,
    /// The sample's hash containers, one per worker, when the combiner
    /// folds (they may be kept as the workers' containers).
    pub(crate) kept: Option<Vec<HashOf<J>>>,
    /// Sample pieces each worker mapped.
    pub(crate) tasks: Vec<u64>,
    /// The prediction, when anything was sampled.
    pub(crate) prediction: Option<Prediction>,
    /// Seconds spent sampling.
    pub(crate) secs: f64,
}

impl<J: Job> Sample<J> {
    /// No sample.
    pub(crate) fn none() -> Self {
        Sample {
            splits: Vec::new(),
            kept: None,
            tasks: Vec::new(),
            prediction: None,
            secs: 0.0,
        }
    }

    /// The splits not sampled, for a run that keeps the sample's work.
    pub(crate) fn rest(&self, splits: &[SplitRange]) -> Vec<SplitRange> {
        splits
            .iter()
            .enumerate()
            .filter(|(i, _)| self.splits.binary_search(i).is_err())
            .map(|(_, s)| *s)
            .collect()
    }

    /// Bytes of the sampled splits.
    pub(crate) fn bytes(&self, splits: &[SplitRange]) -> usize {
        self.splits
            .iter()
            .map(|&i| splits[i].end - splits[i].start)
            .sum()
    }
}

/// Samples `splits` of `input` on every worker of `team`, into containers
/// of `partitions` partitions. No sample when the input is too small.
pub(crate) fn run<J: Job>(
    team: Team<'_>,
    job: &J,
    input: &Input<'_>,
    splits: &[SplitRange],
    partitions: usize,
) -> Result<Sample<J>> {
    let start = Instant::now();
    let threads = team.pool.threads();
    let chosen = predict::sample_splits(splits, threads);
    if chosen.is_empty() {
        return Ok(Sample::none());
    }
    let share = if J::Combiner::FOLDS {
        1.0
    } else {
        REDONE_SHARE
    };
    let pieces = pieces(job.records(), input, splits, &chosen, share, threads)?;
    let bytes: usize = pieces.iter().map(|s| s.end - s.start).sum();
    let fraction = bytes as f64 / input.len().max(1) as f64;
    let batch = Batch {
        input,
        first: 0,
        n: pieces.len(),
        at: |i: usize| split_in(input, &pieces[i]),
    };
    let (kept, tasks, histories) = if J::Combiner::FOLDS {
        let combiner = job.combiner();
        let workers = map_splits(
            team,
            batch,
            Phase::Sample,
            |_| {
                let c = HashContainer::new(partitions, INITIAL_CAPACITY, combiner.clone());
                (Counting::new(c), History::new())
            },
            |(c, history): &mut (HashOf<J>, History), _, split| {
                let before = c.pairs;
                job.map(split, ForJob::<J, _>::of(c))?;
                history.push((c.pairs, c.distinct() as u64));
                Ok(c.pairs - before)
            },
        )?
        .0;
        let tasks = workers.iter().map(|w| w.1).collect();
        let (kept, histories): (Vec<_>, Vec<History>) = workers.into_iter().map(|w| w.0).unzip();
        (Some(kept), tasks, histories)
    } else {
        let workers = map_splits(
            team,
            batch,
            Phase::Sample,
            |_| (Counting::new(KeyHashes::new()), History::new()),
            |(c, history), _, split| {
                let before = c.pairs;
                job.map(split, ForJob::<J, _>::of(c))?;
                history.push((c.pairs, c.inner.len() as u64));
                Ok(c.pairs - before)
            },
        )?
        .0;
        let histories: Vec<History> = workers.into_iter().map(|w| w.0 .1).collect();
        (None, Vec::new(), histories)
    };
    Ok(Sample {
        splits: chosen,
        kept,
        tasks,
        prediction: Some(predict::predict(&histories, fraction)),
        secs: secs(start.elapsed()),
    })
}

/// The chosen splits cut into pieces, several per worker, so that every
/// worker's history has points to measure how distinct keys grow: the
/// pieces of each chosen split from its start, `share` of it (1.0: whole).
fn pieces(
    records: Records,
    input: &Input<'_>,
    splits: &[SplitRange],
    chosen: &[usize],
    share: f64,
    threads: usize,
) -> Result<Vec<SplitRange>> {
    let len = |i: usize| splits[i].end - splits[i].start;
    let total = chosen.iter().map(|&i| len(i)).sum::<usize>() as f64 * share;
    let piece = (total as usize).div_ceil(predict::PIECES_PER_WORKER * threads);
    let mut pieces = Vec::new();
    for &i in chosen {
        let s = splits[i];
        let bytes = &input.part_bytes(s.part)[s.start..s.end];
        let want = (len(i) as f64 * share).ceil() as usize;
        let mut taken = 0;
        plan_slice(bytes, records, piece, |a, b| {
            if taken < want {
                taken += b - a;
                pieces.push(SplitRange {
                    part: s.part,
                    start: s.start + a,
                    end: s.start + b,
                })
            }
        })?;
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of 10 bytes.
    fn text(lines: usize) -> Vec<u8> {
        (0..lines)
            .flat_map(|i| format!("{i:09}\n").into_bytes())
            .collect()
    }

    #[test]
    fn a_share_of_each_split_is_its_first_whole_records() {
        let data = text(10_000);
        let input = Input::bytes(&data);
        let splits: Vec<SplitRange> = (0..10)
            .map(|i| SplitRange {
                part: 0,
                start: i * 10_000,
                end: (i + 1) * 10_000,
            })
            .collect();
        for (share, threads) in [(1.0, 2), (REDONE_SHARE, 2), (REDONE_SHARE, 3), (0.1, 1)] {
            let got = pieces(Records::Lines, &input, &splits, &[1, 6], share, threads).unwrap();
            assert!(
                got.len() >= predict::PIECES_PER_WORKER * threads * 9 / 10,
                "{share}"
            );
            for &i in &[1, 6] {
                let s = splits[i];
                let mine: Vec<_> = got
                    .iter()
                    .filter(|p| p.start >= s.start && p.end <= s.end)
                    .collect();
                // Contiguous from the split's start, ending after a line.
                assert_eq!(mine[0].start, s.start);
                assert!(mine.windows(2).all(|w| w[0].end == w[1].start));
                let end = mine.last().unwrap().end;
                assert_eq!(data[end - 1], b'\n');
                let taken = (end - s.start) as f64 / 10_000.0;
                assert!(taken >= share && taken < share + 0.5, "{share}: {taken}");
            }
        }
    }
}
