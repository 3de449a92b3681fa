//! Cutting the key space of spilled runs into ranges that are merged
//! apart (in parallel), and handed over in range order: the ranges'
//! splitters are the keys of the runs' marks (about one per [`BLOCK`]
//! bytes of records), so that ranges are of about equal bytes, and a
//! range's reader of a run starts at the run's last mark at or below the
//! range's lower bound.

use super::read::RunReader;
use super::read::PAGE;
use super::{Codec, Source, Spilled, BLOCK};

/// The key ranges of a merge of every run of some spill files: range `r`
/// holds the keys `k` with `splitters[r - 1] < k <= splitters[r]`.
pub(crate) struct Ranges<'f, K> {
    /// Every run, as (file, run index).
    runs: Vec<(&'f Spilled<K>, usize)>,
    splitters: Vec<&'f K>,
}

impl<'f, K: Ord> Ranges<'f, K> {
    /// Ranges of about `bytes` bytes of records each (at least one
    /// [`BLOCK`]) over every run of `files`.
    pub(crate) fn new(files: &'f [Spilled<K>], bytes: usize) -> Self {
        let runs: Vec<(&Spilled<K>, usize)> = files
            .iter()
            .flat_map(|f| (0..f.runs.len()).map(move |r| (f, r)))
            .collect();
        let mut keys: Vec<&K> = runs
            .iter()
            .flat_map(|&(f, r)| f.marks[r].iter().map(|m| &m.key))
            .collect();
        keys.sort_unstable();
        let per = (bytes / BLOCK).max(1);
        let ranges = keys.len().div_ceil(per).max(1);
        let splitters = (1..ranges).map(|i| keys[i * keys.len() / ranges]).collect();
        Ranges { runs, splitters }
    }

    /// Number of ranges (at least one).
    pub(crate) fn len(&self) -> usize {
        self.splitters.len() + 1
    }

    /// Number of runs.
    pub(crate) fn runs(&self) -> usize {
        self.runs.len()
    }

    /// The bounds of range `r`: (exclusive lower, inclusive upper).
    fn bounds(&self, r: usize) -> (Option<&'f K>, Option<&'f K>) {
        let after = r.checked_sub(1).map(|i| self.splitters[i]);
        (after, self.splitters.get(r).copied())
    }

    /// Where run `i`'s reader of the keys past `after` starts: its last
    /// mark at or below `after` (records past `after` are not before it,
    /// as the run is sorted), else the run's start.
    fn start(&self, i: usize, after: Option<&K>) -> u64 {
        let (f, r) = self.runs[i];
        let marks = &f.marks[r];
        let below = after.map_or(0, |a| marks.partition_point(|m| m.key <= *a));
        match below.checked_sub(1) {
            Some(m) => marks[m].at,
            None => f.runs[r].start,
        }
    }

    /// Merge sources of range `r`: a reader of every run, each with a
    /// buffer of `buffer` bytes. The readers release no pages
    /// ([`Ranges::release`] does).
    pub(crate) fn sources<S>(
        &self,
        r: usize,
        codec: Codec<K, S>,
        buffer: usize,
    ) -> Vec<Source<'f, K, S>> {
        let bounds = self.bounds(r);
        (0..self.runs.len())
            .map(|i| {
                let (f, run) = self.runs[i];
                let at = self.start(i, bounds.0);
                let reader: RunReader<'f, K, S> = f.reader(&f.runs[run], at, codec, buffer);
                Source::Disk(reader.within(bounds))
            })
            .collect()
    }

    /// Offsets, by run, from which pages may be released: each run's
    /// first whole page (one it shares with the run before is not its
    /// own), before any range is done.
    pub(crate) fn unreleased(&self) -> Vec<u64> {
        let start = |&(f, r): &(&Spilled<K>, usize)| f.runs[r].start.next_multiple_of(PAGE);
        self.runs.iter().map(start).collect()
    }

    /// Releases every run's pages before range `r`'s readers' starts, once
    /// the ranges before `r` are merged (no reader of a later range reads
    /// before its own start); `released` is [`Ranges::unreleased`], kept
    /// from call to call.
    pub(crate) fn release(&self, r: usize, released: &mut [u64]) {
        let after = self.bounds(r).0;
        for (i, done) in released.iter_mut().enumerate() {
            let to = self.start(i, after) / PAGE * PAGE;
            if to > *done {
                self.runs[i].0.release(*done, to);
                *done = to;
            }
        }
    }
}
