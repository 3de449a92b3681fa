//! An external sort of fixed-size records by a key of their first bytes
//! (the TeraSort layout, [`RecordShape`]): a path built for records, not
//! for (key, state) pairs.
//!
//! **Runs.** The input (held in memory or mapped) is cut into runs of as
//! many records as a worker's share of the budget holds (their packed
//! keys and their mapped pages); each worker sorts a run's packed keys
//! (key bits, then the record's index, in one `u128`) and, unless every
//! record fits in the budget, writes the run's records in that order to a
//! file of raw records in the run's spill directory, then lets go of the
//! run's mapped pages. Every `SAMPLE`-th packed key of a run is kept: the
//! run's index.
//!
//! **Merge.** The runs' samples give splitters that cut the key space
//! into ranges of about equal size; a binary search of the sampled block
//! a splitter falls in finds where each run's records of each range lie.
//! The workers merge the ranges (a range's records of every run read into
//! one buffer, merged with a loser tree on (key, run)), a few ahead of the
//! one the calling thread writes to the output, in range order.
//! Equal keys keep their input order: runs are consecutive pieces of the
//! input, each in (key, index) order, and the merge breaks ties by run.

use std::borrow::Cow;
use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::guard::GuardedMap;
use crate::input::Input;
use crate::memory::{Budget, Ledger};
use crate::pool::Pool;
use crate::spill::{failed, punch_hole, SpillDir};
use crate::stats::{secs, Stats};

/// The shape of fixed-size records sorted by a key of their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordShape {
    /// Bytes per record.
    pub len: usize,
    /// Bytes of the key at the start of each record: 1 to
    /// [`RecordShape::MAX_KEY`]. Keys compare as unsigned bytes.
    pub key: usize,
}

impl RecordShape {
    /// The longest key: its bits and a record's `u32` index fit one `u128`.
    pub const MAX_KEY: usize = 12;

    /// Checks the shape, and that `bytes` are whole records, few enough
    /// for a `u32` index.
    fn check(&self, bytes: usize) -> Result<usize> {
        if self.key == 0 || self.key > Self::MAX_KEY || self.len < self.key {
            return Err(Error::Config(format!(
                "records of {} bytes with a key of {}: the key must be 1 to {} bytes and fit the record",
                self.len,
                self.key,
                Self::MAX_KEY
            )));
        }
        let n = bytes / self.len;
        if !bytes.is_multiple_of(self.len) || n as u64 > u64::from(u32::MAX) + 1 {
            return Err(Error::InvalidInput(format!(
                "{bytes} bytes are not at most 2^32 whole {}-byte records",
                self.len
            )));
        }
        Ok(n)
    }

    /// The key's bits at the top of a `u128` (the low 32 bits are zero).
    #[inline(always)]
    fn key_bits(&self, rec: &[u8]) -> u128 {
        let mut k = [0u8; 16];
        if rec.len() >= 16 {
            k.copy_from_slice(&rec[..16]);
        } else {
            k[..self.key].copy_from_slice(&rec[..self.key]);
        }
        u128::from_be_bytes(k) & (u128::MAX << (128 - 8 * self.key))
    }
}

/// Bits of the packed key that [`sort_keys`] spreads keys into buckets
/// by.
const DIGIT: u32 = 11;

/// The fewest keys [`sort_keys`] spreads into buckets first.
const RADIX_FROM: usize = 1 << 16;

/// Sorted records between samples of a run's index.
const SAMPLE: usize = 1024;

/// Bytes gathered per write of a run.
const WRITE_BUFFER: usize = 1 << 20;

/// The fewest records of a run, however small the budget.
const MIN_RUN: usize = 4096;

/// The smallest key range merged apart, in bytes.
const MIN_RANGE: u64 = 1 << 20;

/// Records ahead of the one being gathered whose lines are fetched: the
/// gather reads the input at random.
const GATHER_AHEAD: usize = 16;

/// Where a run's records are.
enum Stored {
    /// In memory: the packed keys, the records read from the input.
    Memory(Vec<u128>),
    /// On disk: the records, sorted, in a file of the spill directory,
    /// mapped for the merge.
    File(RunFile),
}

/// A run's file and its map: the merge reads the records in place (no
/// copy into a buffer), and the pages it is done with are punched out of
/// the file, which drops them from the map too. The map is guarded: a
/// page that cannot be read reads as zeros and fails the sort after the
/// merge ([`check_runs`]), not the process with SIGBUS.
struct RunFile {
    path: PathBuf,
    file: File,
    map: GuardedMap,
}

/// One sorted run: records `first..first + len` of the input, sorted.
struct Run {
    first: usize,
    len: usize,
    /// Every [`SAMPLE`]-th packed key, from the first.
    samples: Vec<u128>,
    stored: Stored,
}

/// Each run's records in one key range, with the run's number.
type Parts<'r> = Vec<(u128, Cow<'r, [u8]>)>;

/// Where the sorted records go.
pub(crate) enum Out<'o> {
    /// A stream, written in order on the calling thread.
    Stream(&'o mut dyn Write),
    /// A file, written from offset `base` on by the workers (`pwrite`).
    File { file: &'o File, base: u64 },
}

/// A key range's records in order, and the bytes the ledger counts for
/// them until they are written.
struct Merged<'r> {
    bytes: Cow<'r, [u8]>,
    held: u64,
}

/// One external sort: its input, shape, budget and spill directory.
pub(crate) struct Sort<'a, 'i> {
    pub(crate) data: &'a [u8],
    pub(crate) input: &'a Input<'i>,
    pub(crate) shape: RecordShape,
    pub(crate) budget: Budget,
    pub(crate) dir: SpillDir,
    pub(crate) threads: usize,
    pub(crate) pool: &'a Pool,
}

impl Sort<'_, '_> {
    /// Sorts the records and writes them to `out`; returns the run's
    /// stats.
    pub(crate) fn run(&self, out: Out<'_>) -> Result<Stats> {
        let start = Instant::now();
        let n = self.shape.check(self.data.len())?;
        let ledger = Ledger::new(self.threads);
        let runs = self.spill(n, &ledger)?;
        let spilled = start.elapsed();
        let merge = Instant::now();
        self.merge(&runs, &ledger, out)?;
        self.input.check_unchanged()?;
        check_runs(&runs)?;
        let mut stats = Stats {
            threads: self.threads,
            input_bytes: self.data.len() as u64,
            input_parts: 1,
            splits: runs.len(),
            map_secs: secs(spilled),
            pairs_emitted: n as u64,
            output_pairs: n as u64,
            ..Stats::default()
        };
        let m = &mut stats.memory;
        m.limit_bytes = self.budget.bytes;
        m.limit_explicit = self.budget.explicit;
        m.peak_tracked_bytes = ledger.peak();
        let on_disk = runs.iter().filter(|r| matches!(r.stored, Stored::File(..)));
        m.spills = on_disk.clone().count() as u64;
        m.spill_runs = m.spills;
        m.spilled_bytes = on_disk.map(|r| (r.len * self.shape.len) as u64).sum();
        if m.spills > 0 {
            m.spill_secs = stats.map_secs;
            m.merge_secs = secs(merge.elapsed());
        }
        stats.merge_secs = secs(merge.elapsed());
        stats.total_secs = secs(start.elapsed());
        Ok(stats)
    }

    /// Cuts the `n` records into runs and sorts them, on disk unless all of
    /// them fit in the budget.
    fn spill(&self, n: usize, ledger: &Ledger) -> Result<Vec<Run>> {
        let per_record = (self.shape.len + 16) as u64;
        let in_memory = n as u64 * per_record <= self.budget.bytes;
        let share = self.budget.bytes / self.threads as u64;
        let size = match in_memory {
            true => n.div_ceil(self.threads),
            false => ((share / per_record) as usize).max(MIN_RUN),
        }
        .max(1);
        let pieces: Vec<Range<usize>> =
            (0..n).step_by(size).map(|s| s..(s + size).min(n)).collect();
        self.pool.install(|| {
            pieces
                .into_par_iter()
                .enumerate()
                .map(|(i, records)| self.sort_run(i, records, in_memory, ledger))
                .collect()
        })
    }

    /// Sorts run `i` (the input's `records`), and writes it to disk unless
    /// `in_memory`.
    fn sort_run(
        &self,
        i: usize,
        records: Range<usize>,
        in_memory: bool,
        ledger: &Ledger,
    ) -> Result<Run> {
        let len = self.shape.len;
        let bytes = &self.data[records.start * len..records.end * len];
        let worker = rayon::current_thread_index().unwrap_or(0);
        ledger.hold(worker, (records.len() * (16 + len)) as u64);
        #[cfg(target_os = "linux")]
        if !in_memory {
            self.input
                .populate_range(0, records.start * len..records.end * len);
        }
        let mut keys: Vec<u128> = bytes
            .chunks_exact(len)
            .enumerate()
            .map(|(j, rec)| self.shape.key_bits(rec) | (records.start + j) as u32 as u128)
            .collect();
        sort_keys(&mut keys);
        let samples = keys.iter().step_by(SAMPLE).copied().collect();
        let stored = match in_memory {
            true => Stored::Memory(keys),
            false => {
                let stored = self.write_run(i, &keys)?;
                #[cfg(unix)]
                self.input
                    .release_range(0, records.start * len..records.end * len);
                stored
            }
        };
        ledger.hold(worker, 0);
        Ok(Run {
            first: records.start,
            len: records.len(),
            samples,
            stored,
        })
    }

    /// Writes the records whose packed keys are `keys` (sorted), in that
    /// order, to run `i`'s file.
    fn write_run(&self, i: usize, keys: &[u128]) -> Result<Stored> {
        let path = self.dir.file(i)?;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| failed(&path, e))?;
        let per_write = (WRITE_BUFFER / self.shape.len).max(1);
        let mut buf = vec![0u8; per_write * self.shape.len];
        for piece in keys.chunks(per_write) {
            let buf = &mut buf[..piece.len() * self.shape.len];
            self.gather(piece, buf);
            file.write_all(buf).map_err(|e| failed(&path, e))?;
        }
        let map = file
            .metadata()
            .and_then(|meta| GuardedMap::new(&file, &meta))
            .map_err(|e| failed(&path, e))?;
        Ok(Stored::File(RunFile { path, file, map }))
    }

    /// Copies the records of the packed keys `keys` into `out`, in order.
    fn gather(&self, keys: &[u128], out: &mut [u8]) {
        let len = self.shape.len;
        let at = |k: u128| k as u32 as usize * len;
        for (j, (dst, &k)) in out.chunks_exact_mut(len).zip(keys).enumerate() {
            if let Some(&ahead) = keys.get(j + GATHER_AHEAD) {
                crate::hint::prefetch(self.data[at(ahead)..].as_ptr());
                crate::hint::prefetch(self.data[at(ahead) + len - 1..].as_ptr());
            }
            dst.copy_from_slice(&self.data[at(k)..at(k) + len]);
        }
    }

    /// Records `from..to` of `run`, in sorted order: gathered from the
    /// input for a run in memory, in place in the map of a run's file.
    fn records<'r>(&'r self, run: &'r Run, from: usize, to: usize) -> Cow<'r, [u8]> {
        let len = self.shape.len;
        match &run.stored {
            Stored::Memory(keys) => {
                let mut out = vec![0u8; (to - from) * len];
                self.gather(&keys[from..to], &mut out);
                Cow::Owned(out)
            }
            Stored::File(f) => Cow::Borrowed(&f.map.bytes()[from * len..to * len]),
        }
    }

    /// Where `run`'s records at or above the packed key `s` start.
    fn cut(&self, run: &Run, s: u128) -> usize {
        let j = run.samples.partition_point(|&x| x < s);
        let (lo, hi) = match j {
            0 => return 0,
            j => ((j - 1) * SAMPLE + 1, (j * SAMPLE).min(run.len)),
        };
        let index = s as u32 as usize;
        if (run.first..run.first + run.len).contains(&index) || lo >= hi {
            // `s` is this run's sample `j` (or past its last record).
            return hi;
        }
        // Another run's record: a tie on the key orders by run, which any
        // index of this run gives.
        let below = self
            .records(run, lo, hi)
            .chunks_exact(self.shape.len)
            .take_while(|rec| (self.shape.key_bits(rec) | run.first as u32 as u128) < s)
            .count();
        lo + below
    }

    /// Splitters cutting the runs' records into ranges of about
    /// `budget / (4 x threads)` bytes (at least two per thread), and for
    /// each run where each range starts (and where the last ends).
    fn ranges(&self, runs: &[Run]) -> Vec<Vec<usize>> {
        let mut all: Vec<u128> = runs
            .iter()
            .flat_map(|r| r.samples.iter().copied())
            .collect();
        all.sort_unstable();
        let range_bytes = (self.budget.bytes / (4 * self.threads as u64)).max(MIN_RANGE);
        let wanted = (self.data.len() as u64).div_ceil(range_bytes) as usize;
        let ranges = wanted.max(2 * self.threads).min(all.len()).max(1);
        let mut splitters: Vec<u128> = (1..ranges).map(|r| all[r * all.len() / ranges]).collect();
        splitters.dedup();
        runs.par_iter()
            .map(|run| {
                let mut cuts = vec![0];
                cuts.extend(splitters.iter().map(|&s| self.cut(run, s)));
                cuts.push(run.len);
                // The cuts' reads mapped pages all over the run's file (a
                // large page-cache folio at a time): let go of them before
                // the next run's, so the RSS never holds every run's.
                #[cfg(unix)]
                if let Stored::File(f) = &run.stored {
                    f.map.release_range(0..f.map.bytes().len());
                }
                cuts
            })
            .collect()
    }

    /// Merges the runs in key ranges on the workers and writes them to
    /// `out`: to a stream on the calling thread, in order, at most two
    /// ranges per worker ahead of the one being written; to a file by the
    /// worker that merges each range, at the range's offset.
    fn merge(&self, runs: &[Run], ledger: &Ledger, out: Out<'_>) -> Result<()> {
        let cuts = self.pool.install(|| self.ranges(runs));
        let ranges = cuts.first().map_or(0, |c| c.len() - 1);
        match out {
            Out::Stream(out) => {
                self.pool.ordered(
                    ranges,
                    2 * self.threads,
                    |r| self.merge_range(runs, &cuts, r, ledger),
                    |r, merged: Merged<'_>| {
                        out.write_all(&merged.bytes).map_err(Error::Output)?;
                        ledger.hand_over(merged.held);
                        self.punch(runs, &cuts, r);
                        Ok::<(), Error>(())
                    },
                )?;
                out.flush().map_err(Error::Output)
            }
            Out::File { file, base } => self.pool.install(|| {
                (0..ranges).into_par_iter().try_for_each(|r| {
                    let before: usize = cuts.iter().map(|c| c[r]).sum();
                    let at = base + (before * self.shape.len) as u64;
                    self.write_range(runs, &cuts, r, ledger, file, at)
                })
            }),
        }
    }

    /// Once range `r` is written: frees the disk space of every run file's
    /// whole pages inside it (no other range reads them; the pages a range
    /// shares with the next stay until the files are removed; see
    /// `spill::punch_hole`), and lets go of the map's pages the range
    /// touched, the shared ones too (a neighbour still reading one maps it
    /// again from the page cache): a punched page may stay in the page
    /// cache, and mapped, while part of it is still in the file.
    fn punch(&self, runs: &[Run], cuts: &[Vec<usize>], r: usize) {
        const PAGE: usize = 4 << 10;
        for (m, run) in runs.iter().enumerate() {
            if let Stored::File(RunFile { file, map, .. }) = &run.stored {
                let (start, end) = (cuts[m][r] * self.shape.len, cuts[m][r + 1] * self.shape.len);
                let (from, to) = (start.next_multiple_of(PAGE), end / PAGE * PAGE);
                if from < to {
                    punch_hole(file, from as u64, (to - from) as u64);
                }
                #[cfg(unix)]
                map.release_range(start / PAGE * PAGE..end.next_multiple_of(PAGE));
            }
        }
    }

    /// Range `r` of every run that has records in it, with the run's
    /// number: a file's records mapped in, an in-memory run's gathered.
    fn parts<'r>(&'r self, runs: &'r [Run], cuts: &[Vec<usize>], r: usize) -> Parts<'r> {
        runs.iter()
            .enumerate()
            .filter(|(m, _)| cuts[*m][r] < cuts[*m][r + 1])
            .map(|(m, run)| {
                let part = self.records(run, cuts[m][r], cuts[m][r + 1]);
                populate(run, &part);
                (m as u128, part)
            })
            .collect()
    }

    /// Merges range `r` of every run into one buffer (a range of one run
    /// is that run's records as they are), counted in the ledger until
    /// written with the mapped pages it was merged from.
    fn merge_range<'r>(
        &'r self,
        runs: &'r [Run],
        cuts: &[Vec<usize>],
        r: usize,
        ledger: &Ledger,
    ) -> Merged<'r> {
        let parts = self.parts(runs, cuts, r);
        let total: usize = parts.iter().map(|(_, p)| p.len()).sum();
        let gathered: usize = parts
            .iter()
            .filter(|(_, p)| matches!(p, Cow::Owned(_)))
            .map(|(_, p)| p.len())
            .sum();
        ledger.merged(2 * total as u64);
        let bytes = match parts.len() {
            0 => Cow::Borrowed(&[][..]),
            1 => parts.into_iter().next().expect("one part").1,
            _ => {
                let mut merged = Vec::with_capacity(total);
                let whole = self.merge_parts(&parts, &mut merged, usize::MAX, |_| Ok(()));
                whole.expect("a merge that never flushes cannot fail");
                Cow::Owned(merged)
            }
        };
        // The records gathered from the input are dropped once merged; a
        // file's mapped pages stay until punched after the write.
        let freed = match bytes {
            Cow::Owned(_) => gathered,
            Cow::Borrowed(_) => total,
        };
        ledger.hand_over(freed as u64);
        Merged {
            bytes,
            held: (2 * total - freed) as u64,
        }
    }

    /// Merges range `r` of every run and writes it to `file` from offset
    /// `at` on, a piece of [`WRITE_BUFFER`] bytes at a time (written while
    /// it is still in the cache); the range's mapped pages are punched out
    /// of the runs' files once written. The ledger counts the range's
    /// records and the piece meanwhile.
    fn write_range(
        &self,
        runs: &[Run],
        cuts: &[Vec<usize>],
        r: usize,
        ledger: &Ledger,
        file: &File,
        mut at: u64,
    ) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let parts = self.parts(runs, cuts, r);
        let total: usize = parts.iter().map(|(_, p)| p.len()).sum();
        let held = (total + WRITE_BUFFER) as u64;
        ledger.merged(held);
        let mut write = |bytes: &[u8]| {
            file.write_all_at(bytes, at).map_err(Error::Output)?;
            at += bytes.len() as u64;
            Ok(())
        };
        let written = match parts.len() {
            0 => Ok(()),
            1 => write(&parts[0].1),
            _ => {
                let mut piece = Vec::with_capacity(WRITE_BUFFER + self.shape.len);
                self.merge_parts(&parts, &mut piece, WRITE_BUFFER, &mut write)
                    .and_then(|()| write(&piece))
            }
        };
        drop(parts);
        self.punch(runs, cuts, r);
        ledger.hand_over(held);
        written
    }

    /// Appends the records of the sorted `parts` (each with its run's
    /// number) to `out` in (key, run) order, a loser tree; each time `out`
    /// holds `flush_at` bytes or more, hands them to `flush` and empties
    /// it (what is left at the end stays in `out`).
    fn merge_parts(
        &self,
        parts: &[(u128, Cow<'_, [u8]>)],
        out: &mut Vec<u8>,
        flush_at: usize,
        mut flush: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let len = self.shape.len;
        let mut rest: Vec<&[u8]> = parts.iter().map(|(_, p)| &p[..]).collect();
        let head = |m: usize, rest: &[u8]| match rest.is_empty() {
            true => u128::MAX,
            false => self.shape.key_bits(rest) | parts[m].0,
        };
        let keys: Vec<u128> = rest.iter().enumerate().map(|(m, p)| head(m, p)).collect();
        let mut tree = LoserTree::new(keys);
        loop {
            let w = tree.winner();
            let Some((rec, after)) = rest[w].split_at_checked(len) else {
                return Ok(());
            };
            out.extend_from_slice(rec);
            rest[w] = after;
            tree.replace(head(w, after));
            if out.len() >= flush_at {
                flush(&out[..])?;
                out.clear();
            }
        }
    }
}

/// Fails if a page of a run's file could not be read during the merge
/// (it read as zeros).
fn check_runs(runs: &[Run]) -> Result<()> {
    for run in runs {
        if let Stored::File(f) = &run.stored {
            if f.map.faulted() {
                let lost = std::io::Error::other("a page of the run could not be read back");
                return Err(failed(&f.path, lost));
            }
        }
    }
    Ok(())
}

/// Maps the pages of `part` (records of `run`'s file) in one call, read
/// ahead from the disk if they are not cached, rather than one fault at a
/// time as the merge reaches them.
fn populate(run: &Run, part: &[u8]) {
    #[cfg(target_os = "linux")]
    if let Stored::File(f) = &run.stored {
        let offset = part.as_ptr() as usize - f.map.bytes().as_ptr() as usize;
        f.map.populate(offset..offset + part.len());
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (run, part);
}

/// Sorts packed keys: a counting pass spreads them by the [`DIGIT`] bits
/// below the key bits they all share into buckets in place (American flag
/// sort), and each bucket, small enough to stay in the cache, is then
/// sorted apart. Fewer keys than [`RADIX_FROM`] are sorted as they are.
fn sort_keys(keys: &mut [u128]) {
    let Some(&first) = keys.first().filter(|_| keys.len() >= RADIX_FROM) else {
        keys.sort_unstable();
        return;
    };
    // The key bits that differ between some keys (not the index's).
    let differ = keys.iter().fold(0, |d, &k| d | (k ^ first)) & !u128::from(u32::MAX);
    if differ == 0 {
        keys.sort_unstable();
        return;
    }
    let shift = 128 - differ.leading_zeros() - DIGIT;
    let digit = |k: u128| (k >> shift) as usize & ((1 << DIGIT) - 1);
    let mut ends = vec![0usize; 1 << DIGIT];
    for &k in keys.iter() {
        ends[digit(k)] += 1;
    }
    let mut sum = 0;
    for e in &mut ends {
        sum += *e;
        *e = sum;
    }
    let starts: Vec<usize> = std::iter::once(0).chain(ends.iter().copied()).collect();
    // `next[b]`: bucket `b`'s first slot not yet holding one of its keys.
    let mut next = starts.clone();
    for b in 0..ends.len() {
        while next[b] < ends[b] {
            let mut k = keys[next[b]];
            let mut d = digit(k);
            while d != b {
                std::mem::swap(&mut k, &mut keys[next[d]]);
                next[d] += 1;
                d = digit(k);
            }
            keys[next[b]] = k;
            next[b] += 1;
        }
    }
    for b in 0..ends.len() {
        keys[starts[b]..ends[b]].sort_unstable();
    }
}

/// A loser tree over `k` keys: the smallest key's slot in O(1), and a new
/// key for that slot in `log2 k` comparisons.
struct LoserTree {
    /// Leaves' keys, padded to a power of two with `u128::MAX`.
    keys: Vec<u128>,
    /// `losers[i]` for internal node `i` (1-based); `losers[0]` the winner.
    losers: Vec<usize>,
}

impl LoserTree {
    fn new(mut keys: Vec<u128>) -> LoserTree {
        let k = keys.len().next_power_of_two();
        keys.resize(k, u128::MAX);
        let mut tree = LoserTree {
            keys,
            losers: vec![0; k],
        };
        tree.losers[0] = tree.build(1);
        tree
    }

    /// Plays the matches below `node`; returns its winner.
    fn build(&mut self, node: usize) -> usize {
        let k = self.keys.len();
        if node >= k {
            return node - k;
        }
        let (a, b) = (self.build(2 * node), self.build(2 * node + 1));
        let (win, lose) = if self.keys[a] <= self.keys[b] {
            (a, b)
        } else {
            (b, a)
        };
        self.losers[node] = lose;
        win
    }

    fn winner(&self) -> usize {
        self.losers[0]
    }

    /// The winner's slot now holds `key`: replays its matches.
    #[inline(always)]
    fn replace(&mut self, key: u128) {
        let k = self.keys.len();
        let mut w = self.losers[0];
        self.keys[w] = key;
        let mut node = (w + k) / 2;
        while node >= 1 {
            let l = self.losers[node];
            if self.keys[l] < self.keys[w] {
                self.losers[node] = w;
                w = l;
            }
            node /= 2;
        }
        self.losers[0] = w;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `n` packed keys of `key` bytes drawn from `values` distinct values
    /// shifted up by `skew` bits (keys sharing their first bits), each
    /// with its index.
    fn packed(n: usize, key: u32, values: u64, skew: u32, seed: u64) -> Vec<u128> {
        let mut x = seed | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = u128::from(x % values) << skew;
                let bits = (v << (128 - 8 * key)) & (u128::MAX << (128 - 8 * key));
                bits | i as u128
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        /// Spread into buckets or not, all keys equal, few distinct or
        /// sharing their first bits: the order of a plain sort.
        #[test]
        fn sort_keys_sorts_as_a_plain_sort(
            n in prop_oneof![0usize..100, RADIX_FROM - 1..RADIX_FROM + 1, 100_000usize..300_000],
            key in 1u32..=12,
            values in prop_oneof![Just(1u64), 2u64..300, Just(u64::MAX)],
            skew in 0u32..40,
            seed in any::<u64>(),
        ) {
            let mut keys = packed(n, key, values, skew, seed);
            let mut want = keys.clone();
            want.sort_unstable();
            sort_keys(&mut keys);
            prop_assert!(keys == want);
        }
    }
}
