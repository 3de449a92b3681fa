//! Cutting the key space of spilled runs into ranges that are merged
//! apart (in parallel), and handed over in range order: the ranges'
//! splitters are the keys of the runs' marks (about one per [`BLOCK`]
//! bytes of records), so that ranges are of about equal bytes, and a
//! range's reader of a run starts at the run's last mark at or below the
//! range's lower bound.

use super::read::{read_buffer, RunReader, PAGE};
use super::{Codec, Source, Spilled, BLOCK};

/// How a merge cut into key ranges spends its memory: half on the
/// readers of the ranges being merged (one per worker), half on the
/// outputs of the ranges merged and not yet handed over (at most
/// `window`: the range handed over and those ahead of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Ranges merged or being merged at once, the one handed over among
    /// them.
    pub(crate) window: usize,
    /// Bytes of records (as written) per range.
    pub(crate) range_bytes: usize,
    /// Output entries a range is expected to hold, at most.
    pub(crate) range_entries: usize,
    /// Each reader's buffer.
    pub(crate) buffer: usize,
}

impl Plan {
    /// The plan for merging every section of `files` on `threads` workers
    /// within `bytes`, an output entry taking `entry` bytes. A range's
    /// output is taken to hold an entry per record (at most: equal keys
    /// are joined) and at least a byte per byte written (what entries
    /// point to on the heap, as a word's postings). Two ranges ahead per
    /// worker, unless ranges would then hold less than a block per
    /// section (every range's reader of a section reads a block at
    /// least): then one more than the workers (one merged ahead of each
    /// worker's, while the calling thread hands one over), and ranges as
    /// small as the budget asks.
    pub(crate) fn new<K>(files: &[Spilled<K>], bytes: usize, threads: usize, entry: usize) -> Plan {
        let threads = threads.max(1);
        let sections: usize = files.iter().map(|f| f.sections.len()).sum();
        let records: u64 = files.iter().map(|f| f.records).sum();
        let written: u64 = files.iter().map(|f| f.bytes).sum::<u64>().max(1);
        let per_byte = (entry as f64 * records as f64 / written as f64).max(1.0);
        let half = bytes / 2;
        let range_bytes = |window: usize| ((half / window) as f64 / per_byte) as usize;
        let window = match range_bytes(2 * threads) < sections * BLOCK {
            true => threads + 1,
            false => 2 * threads,
        };
        let range_bytes = range_bytes(window).max(1);
        let range_entries = (range_bytes as f64 * records as f64 / written as f64) as u64;
        Plan {
            window,
            range_bytes,
            range_entries: range_entries.min(records) as usize,
            buffer: read_buffer(half / threads, sections),
        }
    }
}

/// The key ranges of a merge of every section of some spill files (runs
/// laid out [`ByKey`](super::Layout::ByKey): a section per run): range `r`
/// holds the keys `k` with `splitters[r - 1] < k <= splitters[r]`.
pub(crate) struct Ranges<'f, K> {
    /// Every section, as (file, section index).
    runs: Vec<(&'f Spilled<K>, usize)>,
    splitters: Vec<&'f K>,
}

impl<'f, K: Ord> Ranges<'f, K> {
    /// Ranges of about `bytes` bytes of records each (at least one
    /// [`BLOCK`]) over every run of `files`.
    pub(crate) fn new(files: &'f [Spilled<K>], bytes: usize) -> Self {
        let runs: Vec<(&Spilled<K>, usize)> = files
            .iter()
            .flat_map(|f| (0..f.sections.len()).map(move |r| (f, r)))
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
            None => f.sections[r].start,
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
                let reader: RunReader<'f, K, S> = f.reader(&f.sections[run], at, codec, buffer);
                Source::Disk(reader.within(bounds))
            })
            .collect()
    }

    /// Offsets, by run, from which pages may be released: each run's
    /// first whole page (one it shares with the run before is not its
    /// own), before any range is done.
    pub(crate) fn unreleased(&self) -> Vec<u64> {
        let start = |&(f, r): &(&Spilled<K>, usize)| f.sections[r].start.next_multiple_of(PAGE);
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
