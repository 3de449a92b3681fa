//! The sorted map output on disk, and its merge into each reducer.
//!
//! Every buffer of map (or combiner) output is sorted by partition and key
//! ([`Sorted`]) and each partition's lines are appended to one unnamed
//! temporary file as a *run*: a byte range that mappers reserve with an
//! atomic add and write with positioned writes, so they never wait on each
//! other. The file has no name from the start (the system removes it when
//! ember exits, however it exits). A reducer's input is the merge of its
//! partition's runs, taken in split order: lines with equal keys reach it
//! in the order the mappers wrote them, split after split, as a stable
//! sort of all the map output would give.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::{Context, Result};

use super::records::{key_of, Sorted};

/// Memory for the read buffers of one partition's merge, shared by its
/// runs (each gets at least 4 KiB, at most 1 MiB).
const MERGE_BUFFERS: usize = 16 << 20;

/// A partition's run: where it lies in the file, and its place in the
/// merge order (split index, then buffer number within the split).
#[derive(Debug, Clone, Copy)]
struct Run {
    order: (usize, usize),
    offset: u64,
    len: u64,
}

/// The map output of a job, by partition.
pub(super) struct Shuffle {
    file: File,
    /// The end of the file's reserved bytes: the next run's offset.
    /// Relaxed: a run's bytes are read only after the map phase has ended
    /// (the threads that wrote them were joined).
    end: AtomicU64,
    /// Each partition's runs.
    runs: Mutex<Vec<Vec<Run>>>,
}

impl Shuffle {
    /// An empty shuffle of `partitions` partitions, in an unnamed
    /// temporary file in `dir`.
    pub(super) fn new(dir: &Path, partitions: u32) -> Result<Self> {
        let file = tempfile::tempfile_in(dir)
            .with_context(|| format!("cannot create a temporary file in '{}'", dir.display()))?;
        Ok(Shuffle {
            file,
            end: AtomicU64::new(0),
            runs: Mutex::new(vec![Vec::new(); partitions as usize]),
        })
    }

    /// Appends each partition's lines of `sorted` as a run with merge
    /// order `order`.
    pub(super) fn add(&self, order: (usize, usize), sorted: &Sorted<'_>) -> io::Result<()> {
        let partitions = self.runs.lock().unwrap_or_else(|p| p.into_inner()).len();
        for p in 0..partitions as u32 {
            let len = sorted.len(p);
            if len == 0 {
                continue;
            }
            let offset = self.end.fetch_add(len, Ordering::Relaxed);
            let mut w = BufWriter::with_capacity(1 << 16, At::new(&self.file, offset, len));
            sorted.write(Some(p), &mut w)?;
            w.flush()?;
            let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
            runs[p as usize].push(Run { order, offset, len });
        }
        Ok(())
    }

    /// Writes the lines of partition `p` to `w` in key order (lines with
    /// equal keys in split order): a merge of its runs.
    pub(super) fn merge(&self, p: usize, w: &mut dyn Write) -> io::Result<()> {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner())[p].clone();
        runs.sort_by_key(|r| r.order);
        let cap = (MERGE_BUFFERS / runs.len().max(1)).clamp(4 << 10, 1 << 20);
        let mut readers: Vec<_> = runs
            .iter()
            .map(|r| BufReader::with_capacity(cap, At::new(&self.file, r.offset, r.len)))
            .collect();
        let mut heap = BinaryHeap::with_capacity(readers.len());
        for (run, r) in readers.iter_mut().enumerate() {
            heap.extend(Head::read(r, run, Vec::new())?);
        }
        while let Some(mut top) = heap.peek_mut() {
            w.write_all(&top.line)?;
            let line = std::mem::take(&mut top.line);
            match Head::read(&mut readers[top.run], top.run, line)? {
                Some(next) => *top = next,
                None => drop(std::collections::binary_heap::PeekMut::pop(top)),
            }
        }
        Ok(())
    }
}

/// A run's next line in the merge: the heap's top is the least key, ties
/// going to the earlier run.
struct Head {
    line: Vec<u8>,
    /// The length of the line's key.
    key_len: usize,
    run: usize,
}

impl Head {
    /// Reads run `run`'s next line from `r` into `line` (reused).
    fn read(r: &mut impl BufRead, run: usize, mut line: Vec<u8>) -> io::Result<Option<Head>> {
        line.clear();
        Ok(match r.read_until(b'\n', &mut line)? {
            0 => None,
            _ => Some(Head {
                key_len: key_of(&line).len(),
                line,
                run,
            }),
        })
    }
}

impl Head {
    fn key(&self) -> &[u8] {
        &self.line[..self.key_len]
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        // Reversed: `BinaryHeap` is a max-heap.
        other.key().cmp(self.key()).then(other.run.cmp(&self.run))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Head {}

/// A byte range of the file, read or written with positioned calls.
struct At<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
}

impl<'a> At<'a> {
    fn new(file: &'a File, offset: u64, len: u64) -> Self {
        At {
            file,
            pos: offset,
            end: offset + len,
        }
    }
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min((self.end - self.pos) as usize);
        let n = self.file.read_at(&mut buf[..n], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Write for At<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min((self.end - self.pos) as usize);
        if n == 0 && !buf.is_empty() {
            return Err(io::Error::other("a run longer than its reserved bytes"));
        }
        let n = self.file.write_at(&buf[..n], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_merge_is_a_stable_sort_of_the_runs_in_split_order() {
        let dir = tempfile::tempdir().unwrap();
        let shuffle = Shuffle::new(dir.path(), 1).unwrap();
        // Added out of order, as mappers finish.
        let bufs: [(usize, &[u8]); 3] =
            [(2, b"b\tz\na\tz\n"), (0, b"b\tx\nc\tx\n"), (1, b"b\ty\n")];
        for (split, data) in bufs {
            shuffle
                .add((split, 0), &Sorted::new(data, 1).unwrap())
                .unwrap();
        }
        let mut out = Vec::new();
        shuffle.merge(0, &mut out).unwrap();
        assert_eq!(out, b"a\tz\nb\tx\nb\ty\nb\tz\nc\tx\n");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }
}
