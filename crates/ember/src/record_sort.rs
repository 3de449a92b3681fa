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

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;

use crate::error::{Error, Result};
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
    /// On disk: the records, sorted, in this file.
    File(PathBuf, File),
}

/// One sorted run: records `first..first + len` of the input, sorted.
struct Run {
    first: usize,
    len: usize,
    /// Every [`SAMPLE`]-th packed key, from the first.
    samples: Vec<u128>,
    stored: Stored,
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
    /// Sorts the records and writes them to `out` on the calling thread;
    /// returns the run's stats.
    pub(crate) fn run(&self, out: &mut dyn Write) -> Result<Stats> {
        let start = Instant::now();
        let n = self.shape.check(self.data.len())?;
        let ledger = Ledger::new(self.threads);
        let runs = self.spill(n, &ledger)?;
        let spilled = start.elapsed();
        let merge = Instant::now();
        self.merge(&runs, &ledger, out)?;
        self.input.check_unchanged()?;
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
        let mut keys: Vec<u128> = bytes
            .chunks_exact(len)
            .enumerate()
            .map(|(j, rec)| self.shape.key_bits(rec) | (records.start + j) as u32 as u128)
            .collect();
        keys.sort_unstable();
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
        Ok(Stored::File(path, file))
    }

    /// Copies the records of the packed keys `keys` into `out`, in order.
    fn gather(&self, keys: &[u128], out: &mut [u8]) {
        let len = self.shape.len;
        let at = |k: u128| k as u32 as usize * len;
        for (j, (dst, &k)) in out.chunks_exact_mut(len).zip(keys).enumerate() {
            if let Some(&ahead) = keys.get(j + GATHER_AHEAD) {
                crate::plumbing::prefetch(self.data[at(ahead)..].as_ptr());
                crate::plumbing::prefetch(self.data[at(ahead) + len - 1..].as_ptr());
            }
            dst.copy_from_slice(&self.data[at(k)..at(k) + len]);
        }
    }

    /// Reads records `from..to` of `run` (in sorted order) into `out`.
    fn read(&self, run: &Run, from: usize, to: usize, out: &mut [u8]) -> Result<()> {
        match &run.stored {
            Stored::Memory(keys) => {
                self.gather(&keys[from..to], out);
                Ok(())
            }
            Stored::File(path, file) => {
                read_at(file, out, (from * self.shape.len) as u64).map_err(|e| failed(path, e))
            }
        }
    }

    /// Where `run`'s records at or above the packed key `s` start.
    fn cut(&self, run: &Run, s: u128) -> Result<usize> {
        let j = run.samples.partition_point(|&x| x < s);
        let (lo, hi) = match j {
            0 => return Ok(0),
            j => ((j - 1) * SAMPLE + 1, (j * SAMPLE).min(run.len)),
        };
        let index = s as u32 as usize;
        if (run.first..run.first + run.len).contains(&index) || lo >= hi {
            // `s` is this run's sample `j` (or past its last record).
            return Ok(hi);
        }
        // Another run's record: a tie on the key orders by run, which any
        // index of this run gives.
        let len = self.shape.len;
        let mut block = vec![0u8; (hi - lo) * len];
        self.read(run, lo, hi, &mut block)?;
        let below = block
            .chunks_exact(len)
            .take_while(|rec| (self.shape.key_bits(rec) | run.first as u32 as u128) < s)
            .count();
        Ok(lo + below)
    }

    /// Splitters cutting the runs' records into ranges of about
    /// `budget / (4 x threads)` bytes (at least two per thread), and for
    /// each run where each range starts (and where the last ends).
    fn ranges(&self, runs: &[Run]) -> Result<Vec<Vec<usize>>> {
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
                for &s in &splitters {
                    cuts.push(self.cut(run, s)?);
                }
                cuts.push(run.len);
                Ok(cuts)
            })
            .collect()
    }

    /// Merges the runs in key ranges on the workers, at most two ranges
    /// per worker ahead of the one being written, and writes each range to
    /// `out` on the calling thread, in order.
    fn merge(&self, runs: &[Run], ledger: &Ledger, out: &mut dyn Write) -> Result<()> {
        let cuts = self.pool.install(|| self.ranges(runs))?;
        let ranges = cuts.first().map_or(0, |c| c.len() - 1);
        let mut released = vec![0u64; runs.len()];
        self.pool.ordered(
            (ranges, 2 * self.threads),
            |r| self.merge_range(runs, &cuts, r, ledger),
            |r, merged| {
                let merged = merged?;
                out.write_all(&merged).map_err(Error::Output)?;
                ledger.hand_over(merged.len() as u64);
                self.punch(runs, &cuts, r, &mut released);
                Ok(())
            },
        )?;
        out.flush().map_err(Error::Output)
    }

    /// Frees the disk space of every run file's whole pages below range
    /// `r + 1` (ranges are written in order, and every read of a later
    /// range starts at or after it), from `released[m]` on for run `m`, so
    /// that the runs shrink as the merge goes (see `spill::punch_hole`).
    fn punch(&self, runs: &[Run], cuts: &[Vec<usize>], r: usize, released: &mut [u64]) {
        const PAGE: u64 = 4 << 10;
        for (m, run) in runs.iter().enumerate() {
            if let Stored::File(_, file) = &run.stored {
                let upto = (cuts[m][r + 1] * self.shape.len) as u64 / PAGE * PAGE;
                if upto > released[m] {
                    punch_hole(file, released[m], upto - released[m]);
                    released[m] = upto;
                }
            }
        }
    }

    /// Merges range `r` of every run into one buffer, counted in the
    /// ledger until written.
    fn merge_range(
        &self,
        runs: &[Run],
        cuts: &[Vec<usize>],
        r: usize,
        ledger: &Ledger,
    ) -> Result<Vec<u8>> {
        let len = self.shape.len;
        let parts: Vec<(usize, Range<usize>)> = (0..runs.len())
            .map(|m| (m, cuts[m][r]..cuts[m][r + 1]))
            .filter(|(_, p)| p.start < p.end)
            .collect();
        let total: usize = parts.iter().map(|(_, p)| p.len()).sum();
        let mut read = vec![0u8; total * len];
        ledger.merged(2 * read.len() as u64);
        let mut at = 0;
        let mut heads = Vec::with_capacity(parts.len());
        for (m, p) in &parts {
            let bytes = p.len() * len;
            self.read(&runs[*m], p.start, p.end, &mut read[at..at + bytes])?;
            heads.push((*m as u128, at..at + bytes));
            at += bytes;
        }
        if parts.len() <= 1 {
            ledger.hand_over(read.len() as u64);
            return Ok(read);
        }
        let mut merged = Vec::with_capacity(read.len());
        self.merge_parts(&read, heads, &mut merged);
        ledger.hand_over(read.len() as u64);
        Ok(merged)
    }

    /// Appends the records of the sorted parts of `read` (each with its
    /// run's number) to `out` in (key, run) order: a loser tree.
    fn merge_parts(&self, read: &[u8], parts: Vec<(u128, Range<usize>)>, out: &mut Vec<u8>) {
        let len = self.shape.len;
        let head = |(run, p): &(u128, Range<usize>)| match p.start < p.end {
            true => self.shape.key_bits(&read[p.start..p.end]) | run,
            false => u128::MAX,
        };
        let mut parts = parts;
        let keys: Vec<u128> = parts.iter().map(head).collect();
        let mut tree = LoserTree::new(keys);
        loop {
            let w = tree.winner();
            let p = &mut parts[w].1;
            if p.start == p.end {
                break;
            }
            out.extend_from_slice(&read[p.start..p.start + len]);
            p.start += len;
            tree.replace(head(&parts[w]));
        }
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

/// Reads `out.len()` bytes of `file` at `offset`.
fn read_at(file: &File, out: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(out, offset)
}
