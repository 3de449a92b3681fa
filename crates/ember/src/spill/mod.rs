//! Spilling intermediate data to disk, and reading it back in key order.
//!
//! When a map worker's container passes its share of the run's memory
//! budget (`memory`), the worker takes every entry out of it as a (key,
//! combiner state) pair, sorts each partition's entries by key and writes
//! them to its own spill file as one *run* per partition, then maps on into
//! the emptied container. Reduce task `p` then merges partition `p`'s runs
//! of every worker, and what the containers still hold, in one pass (a
//! p-way merge on the runs' heads, SupMR's merge on disk): equal keys'
//! states are joined with the combiner and each key is reduced once, in key
//! order, so the output is the one an in-memory run gives.
//!
//! A job opts in by returning a [`Codec`] from
//! [`Job::codec`](crate::Job::codec): how its keys and states are written.
//! Keys and states of the types ember ships implement [`Encode`].
//!
//! Files: one per worker that spills, in a fresh directory under the spill
//! directory (by default the system's temporary directory), removed when
//! the run ends, with an error or a panic too. A record is its length (a
//! varint) and the key's and the state's encodings.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};

mod encode;

pub use encode::{decode_len, encode_len, Encode};

/// How a job's keys `K` and combiner states `S` are written to a spill file
/// and read back. Made from the types' [`Encode`] implementations:
///
/// ```
/// use ember::spill::Codec;
/// use ember::Bytes;
///
/// let codec: Codec<Bytes, u64> = Codec::new();
/// # let _ = codec;
/// ```
pub struct Codec<K, S> {
    encode: fn(&K, &S, &mut Vec<u8>),
    decode: fn(&mut &[u8]) -> Option<(K, S)>,
}

impl<K: Encode, S: Encode> Codec<K, S> {
    /// The codec of the types' [`Encode`] implementations.
    pub fn new() -> Self {
        Codec {
            encode: |k, s, out| {
                k.encode(out);
                s.encode(out);
            },
            decode: |input| Some((K::decode(input)?, S::decode(input)?)),
        }
    }
}

impl<K: Encode, S: Encode> Default for Codec<K, S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, S> Clone for Codec<K, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K, S> Copy for Codec<K, S> {}

impl<K, S> std::fmt::Debug for Codec<K, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Codec")
    }
}

/// The spill directories of the runs going on in this process.
static LIVE: Mutex<Live> = Mutex::new(Live {
    dirs: Vec::new(),
    closed: false,
});

/// The spill directories of the runs going on, and whether new ones may be
/// made (not once [`remove_live_dirs`] has run).
struct Live {
    dirs: Vec<PathBuf>,
    closed: bool,
}

fn live() -> std::sync::MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Removes the spill directories of every run going on in this process,
/// for a program about to exit on a signal (a run removes its own when it
/// ends, with an error or a panic too, but an exit ends no run). The runs
/// must not go on afterwards: the process exits. From here on a run that
/// would spill for the first time fails instead of making a directory.
pub fn remove_live_dirs() {
    let mut live = live();
    live.closed = true;
    for dir in live.dirs.drain(..) {
        // A worker may be creating its file in the directory meanwhile
        // (then the directory is not empty when removed): try again.
        for _ in 0..100 {
            match std::fs::remove_dir_all(&dir) {
                Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => continue,
                _ => break,
            }
        }
    }
}

/// A run's spill directory, made when the first worker spills and removed
/// (with its files) when dropped.
#[derive(Debug)]
pub(crate) struct SpillDir {
    parent: PathBuf,
    dir: Mutex<Option<tempfile::TempDir>>,
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        let dir = self.dir.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = dir {
            live().dirs.retain(|d| d != dir.path());
        }
    }
}

impl SpillDir {
    /// A spill directory to be made under `parent`.
    pub(crate) fn under(parent: PathBuf) -> Self {
        SpillDir {
            parent,
            dir: Mutex::new(None),
        }
    }

    /// The path of a new file for worker `w` (the directory is made on the
    /// first call).
    fn file(&self, w: usize) -> Result<PathBuf> {
        let mut dir = self.dir.lock().unwrap_or_else(|p| p.into_inner());
        if dir.is_none() {
            // Made and registered under the lock, so that a signal's
            // `remove_live_dirs` sees every directory that exists.
            let mut live = live();
            if live.closed {
                let exiting = std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the process is exiting on a signal",
                );
                return Err(failed(&self.parent, exiting));
            }
            let made = tempfile::Builder::new()
                .prefix("ember-spill-")
                .tempdir_in(&self.parent)
                .map_err(|e| failed(&self.parent, e))?;
            live.dirs.push(made.path().to_path_buf());
            *dir = Some(made);
        }
        let dir = dir.as_ref().expect("made above");
        Ok(dir.path().join(format!("worker-{w}.runs")))
    }

    /// The directory, if a worker has spilled.
    #[cfg(test)]
    pub(crate) fn path(&self) -> Option<PathBuf> {
        let dir = self.dir.lock().unwrap_or_else(|p| p.into_inner());
        dir.as_ref().map(|d| d.path().to_path_buf())
    }
}

/// Where one run of one partition lies in a worker's spill file.
#[derive(Debug, Clone, Copy)]
struct RunAt {
    partition: usize,
    start: u64,
    len: u64,
}

/// One worker's spill file, written run by run.
pub(crate) struct Writer {
    path: PathBuf,
    file: BufWriter<File>,
    at: u64,
    runs: Vec<RunAt>,
    /// One record's encoding, and the same with its length before it.
    record: Vec<u8>,
    frame: Vec<u8>,
    /// Spills written (each a run per non-empty partition).
    pub(crate) spills: u64,
}

impl Writer {
    /// A new spill file for worker `w` in `dir`.
    pub(crate) fn create(dir: &SpillDir, w: usize) -> Result<Writer> {
        let path = dir.file(w)?;
        // Read back through the same descriptor after the last write.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| failed(&path, e))?;
        Ok(Writer {
            path,
            file: BufWriter::with_capacity(1 << 20, file),
            at: 0,
            runs: Vec::new(),
            record: Vec::new(),
            frame: Vec::new(),
            spills: 0,
        })
    }

    /// Writes one spill: each partition's entries, sorted by key, as a run.
    pub(crate) fn spill<K: Ord, S>(
        &mut self,
        parts: Vec<Vec<(K, S)>>,
        codec: Codec<K, S>,
    ) -> Result<()> {
        for (partition, mut entries) in parts.into_iter().enumerate() {
            if entries.is_empty() {
                continue;
            }
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let start = self.at;
            for (k, s) in &entries {
                self.record.clear();
                (codec.encode)(k, s, &mut self.record);
                self.frame.clear();
                encode_len(self.record.len(), &mut self.frame);
                self.frame.extend_from_slice(&self.record);
                self.file
                    .write_all(&self.frame)
                    .map_err(|e| failed(&self.path, e))?;
                self.at += self.frame.len() as u64;
            }
            let len = self.at - start;
            self.runs.push(RunAt {
                partition,
                start,
                len,
            });
        }
        self.spills += 1;
        Ok(())
    }

    /// Flushes the file: its runs can be read.
    pub(crate) fn finish(self) -> Result<Spilled> {
        let Writer {
            path, file, runs, ..
        } = self;
        let file = file
            .into_inner()
            .map_err(|e| failed(&path, e.into_error()))?;
        Ok(Spilled { path, file, runs })
    }

    /// Bytes written.
    pub(crate) fn bytes(&self) -> u64 {
        self.at
    }

    /// Runs written.
    pub(crate) fn runs(&self) -> usize {
        self.runs.len()
    }
}

/// One worker's finished spill file and its runs.
#[derive(Debug)]
pub(crate) struct Spilled {
    path: PathBuf,
    file: File,
    runs: Vec<RunAt>,
}

impl Spilled {
    /// Readers of partition `p`'s runs, each with a buffer of `buffer`
    /// bytes.
    pub(crate) fn runs_of<K, S>(
        &self,
        p: usize,
        codec: Codec<K, S>,
        buffer: usize,
    ) -> impl Iterator<Item = RunReader<'_, K, S>> {
        self.runs
            .iter()
            .filter(move |r| r.partition == p)
            .map(move |r| self.reader(r, codec, buffer))
    }

    /// Readers of every run, of every partition, each with a buffer of
    /// `buffer` bytes.
    pub(crate) fn all_runs<K, S>(
        &self,
        codec: Codec<K, S>,
        buffer: usize,
    ) -> impl Iterator<Item = RunReader<'_, K, S>> {
        self.runs.iter().map(move |r| self.reader(r, codec, buffer))
    }

    /// A reader of run `r`.
    fn reader<K, S>(&self, r: &RunAt, codec: Codec<K, S>, buffer: usize) -> RunReader<'_, K, S> {
        RunReader {
            spilled: self,
            codec,
            at: r.start,
            end: r.start + r.len,
            buf: Vec::with_capacity(buffer),
            pos: 0,
            buffer,
        }
    }

    /// Runs of partition `p`.
    pub(crate) fn count(&self, p: usize) -> usize {
        self.runs.iter().filter(|r| r.partition == p).count()
    }

    /// Runs of every partition.
    pub(crate) fn total(&self) -> usize {
        self.runs.len()
    }
}

/// Reads one run back, record by record, through a buffer of its own
/// (positioned reads on the worker's file: no file handle per run).
pub(crate) struct RunReader<'f, K, S> {
    spilled: &'f Spilled,
    codec: Codec<K, S>,
    /// File offset of the byte after `buf`.
    at: u64,
    end: u64,
    buf: Vec<u8>,
    pos: usize,
    buffer: usize,
}

impl<K, S> RunReader<'_, K, S> {
    /// The next entry, or `None` at the end of the run.
    fn next(&mut self) -> Result<Option<(K, S)>> {
        if self.pos == self.buf.len() && self.at == self.end {
            return Ok(None);
        }
        let len = self.record_len()?;
        self.fill(len)?;
        let mut record = &self.buf[self.pos..self.pos + len];
        let entry = (self.codec.decode)(&mut record)
            .filter(|_| record.is_empty())
            .ok_or_else(|| self.damaged())?;
        self.pos += len;
        Ok(Some(entry))
    }

    /// Reads a record's length.
    fn record_len(&mut self) -> Result<usize> {
        self.fill(10.min(self.left()))?;
        let mut rest = &self.buf[self.pos..];
        let before = rest.len();
        let len = decode_len(&mut rest).ok_or_else(|| self.damaged())?;
        self.pos += before - rest.len();
        Ok(len)
    }

    /// Bytes of the run not yet consumed.
    fn left(&self) -> usize {
        (self.buf.len() - self.pos) + (self.end - self.at) as usize
    }

    /// Makes sure `n` bytes are buffered from `pos` on.
    fn fill(&mut self, n: usize) -> Result<()> {
        if self.buf.len() - self.pos >= n {
            return Ok(());
        }
        if n > self.left() {
            return Err(self.damaged());
        }
        self.buf.drain(..self.pos);
        self.pos = 0;
        let want = (n.max(self.buffer) - self.buf.len()).min((self.end - self.at) as usize);
        let have = self.buf.len();
        self.buf.resize(have + want, 0);
        let path = &self.spilled.path;
        self.spilled
            .file
            .read_exact_at(&mut self.buf[have..], self.at)
            .map_err(|e| Error::io(path, e))?;
        self.at += want as u64;
        Ok(())
    }

    fn damaged(&self) -> Error {
        Error::io(
            &self.spilled.path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, "damaged spill run"),
        )
    }
}

/// Where a merge reads from: a sorted run in memory, or one on disk.
pub(crate) enum Source<'f, K, S> {
    /// Entries sorted by key.
    Memory(std::vec::IntoIter<(K, S)>),
    /// A spilled run.
    Disk(RunReader<'f, K, S>),
}

impl<K, S> Source<'_, K, S> {
    fn next(&mut self) -> Result<Option<(K, S)>> {
        match self {
            Source::Memory(it) => Ok(it.next()),
            Source::Disk(r) => r.next(),
        }
    }
}

/// A source's current entry, ordered by key, then by source (so that a
/// merge is deterministic).
struct Head<K, S> {
    key: K,
    state: S,
    source: usize,
}

impl<K: Ord, S> Ord for Head<K, S> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: `BinaryHeap` pops the largest.
        (&other.key, other.source).cmp(&(&self.key, self.source))
    }
}

impl<K: Ord, S> PartialOrd for Head<K, S> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord, S> PartialEq for Head<K, S> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K: Ord, S> Eq for Head<K, S> {}

/// Merges sorted sources in one pass: calls `out` once per key, in key
/// order, with the states of every source for that key joined by `join`;
/// stops at the first error `out` returns.
pub(crate) fn merge<K: Ord, S>(
    mut sources: Vec<Source<'_, K, S>>,
    join: impl Fn(&mut S, S),
    mut out: impl FnMut(K, S) -> Result<()>,
) -> Result<()> {
    let n = sources.len();
    let mut heads = BinaryHeap::with_capacity(n);
    let mut refill = |heads: &mut BinaryHeap<Head<K, S>>, source: usize| -> Result<()> {
        if let Some((key, state)) = sources[source].next()? {
            heads.push(Head { key, state, source });
        }
        Ok(())
    };
    for i in 0..n {
        refill(&mut heads, i)?;
    }
    while let Some(Head {
        key,
        mut state,
        source,
    }) = heads.pop()
    {
        refill(&mut heads, source)?;
        while heads.peek().is_some_and(|h| h.key == key) {
            let h = heads.pop().expect("peeked");
            refill(&mut heads, h.source)?;
            join(&mut state, h.state);
        }
        out(key, state)?;
    }
    Ok(())
}

/// The buffer each run reader gets when `runs` runs are read at once within
/// `bytes`: at least 4 KiB, at most 256 KiB.
pub(crate) fn read_buffer(bytes: usize, runs: usize) -> usize {
    (bytes / runs.max(1)).clamp(4 << 10, 256 << 10)
}

/// The error for a spill file or directory that could not be written.
fn failed(path: &Path, source: std::io::Error) -> Error {
    Error::Spill {
        path: path.to_path_buf(),
        source,
    }
}

/// The spill directory a run uses when none is given.
pub(crate) fn default_dir() -> PathBuf {
    std::env::temp_dir()
}

/// Whether `path` is an existing directory (for a clear error up front).
pub(crate) fn check_dir(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::Config(format!(
            "spill directory '{}' is not a directory",
            path.display()
        ))),
        Err(e) => Err(failed(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn spilled_runs_merge_to_the_sums(
            spills in proptest::collection::vec(
                proptest::collection::vec((0u32..50, 1u64..5), 0..40), 1..6),
            memory in proptest::collection::vec((0u32..50, 1u64..5), 0..40),
            buffer in 1usize..64,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let spill_dir = SpillDir::under(dir.path().to_path_buf());
            let codec = Codec::<u32, u64>::new();
            let mut w = Writer::create(&spill_dir, 0).unwrap();
            let mut want = std::collections::BTreeMap::new();
            for pairs in spills.iter().chain([&memory]) {
                for &(k, v) in pairs {
                    *want.entry(k).or_insert(0) += v;
                }
            }
            for pairs in &spills {
                // Two partitions: even and odd keys, each summed per key.
                let mut parts = vec![Vec::new(), Vec::new()];
                let mut sums = std::collections::BTreeMap::new();
                for &(k, v) in pairs {
                    *sums.entry(k).or_insert(0) += v;
                }
                for (k, v) in sums {
                    parts[(k % 2) as usize].push((k, v));
                }
                w.spill(parts, codec).unwrap();
            }
            let spilled = w.finish().unwrap();
            let mut got = std::collections::BTreeMap::new();
            for p in 0..2 {
                let mut mem: Vec<(u32, u64)> = memory.iter().copied().filter(|(k, _)| k % 2 == p as u32).collect();
                mem.sort();
                let mut sources: Vec<Source<'_, u32, u64>> =
                    spilled.runs_of(p, codec, buffer).map(Source::Disk).collect();
                sources.push(Source::Memory(mem.into_iter()));
                let mut last = None;
                merge(sources, |a, b| *a += b, |k, v| {
                    assert!(last < Some(k), "keys in order, once each");
                    last = Some(k);
                    got.insert(k, v);
                    Ok(())
                }).unwrap();
            }
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn a_damaged_run_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let spill_dir = SpillDir::under(dir.path().to_path_buf());
        let codec = Codec::<Vec<u8>, u64>::new();
        let mut w = Writer::create(&spill_dir, 3).unwrap();
        w.spill(vec![vec![(b"word".to_vec(), 7)]], codec).unwrap();
        let spilled = w.finish().unwrap();
        let path = spill_dir.path().unwrap().join("worker-3.runs");
        std::fs::write(&path, [200u8, 1]).unwrap();
        let sources = spilled.runs_of(0, codec, 16).map(Source::Disk).collect();
        let err = merge(sources, |a, b| *a += b, |_, _| Ok(())).unwrap_err();
        assert!(err.to_string().contains("worker-3.runs"), "{err}");
    }

    #[test]
    fn the_directory_is_made_on_first_use_and_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::under(parent.path().to_path_buf());
        assert_eq!(dir.path(), None);
        Writer::create(&dir, 0).unwrap();
        let made = dir.path().unwrap();
        assert!(made.is_dir());
        drop(dir);
        assert!(!made.exists());
    }
}
