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
use std::collections::binary_heap::{BinaryHeap, PeekMut};
use std::fs::File;
use std::io::Write;
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
    prefix: Option<fn(&K) -> u64>,
    compression: Compression,
}

/// How a spill file's runs are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// The records as encoded.
    #[default]
    None,
    /// Blocks of records of up to [`BLOCK`] bytes, each compressed with
    /// LZ4 (`lz4_flex`): fewer bytes to write and read back, for some CPU
    /// time on both sides. Pays where the records repeat bytes and the
    /// disk, not the CPU, is the limit.
    Lz4,
}

/// Bytes of records per compressed block of a run ([`Compression::Lz4`]):
/// LZ4's window.
pub const BLOCK: usize = 64 << 10;

/// Bytes of a compressed block's header: its compressed and its
/// uncompressed length, each a little-endian `u32`.
const BLOCK_HEADER: usize = 8;

impl<K: Encode, S: Encode> Codec<K, S> {
    /// The codec of the types' [`Encode`] implementations.
    pub fn new() -> Self {
        Codec {
            encode: |k, s, out| {
                k.encode(out);
                s.encode(out);
            },
            decode: |input| Some((K::decode(input)?, S::decode(input)?)),
            prefix: None,
            compression: Compression::None,
        }
    }
}

impl<K, S> Codec<K, S> {
    /// The codec, sorting a spill by `prefix` of each key first: a word
    /// whose order agrees with the keys' (`a < b` implies `prefix(a) <=
    /// prefix(b)`), such as a key's first eight bytes. A spill is then
    /// sorted as (prefix, index) pairs, keys compared only where prefixes
    /// tie, and its entries are written in that order: entries larger
    /// than a few words are not moved by the sort.
    ///
    /// ```
    /// use ember::spill::Codec;
    ///
    /// let codec: Codec<u128, [u8; 90]> = Codec::new().prefix(|k| (k >> 64) as u64);
    /// # let _ = codec;
    /// ```
    pub fn prefix(self, prefix: fn(&K) -> u64) -> Self {
        Codec {
            prefix: Some(prefix),
            ..self
        }
    }

    /// The codec, its runs stored as `compression` says.
    pub fn compression(self, compression: Compression) -> Self {
        Codec {
            compression,
            ..self
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
    file: File,
    at: u64,
    runs: Vec<RunAt>,
    /// Records encoded and not yet written (written past
    /// [`WRITE_BUFFER`] bytes; compressed, a block at a time, past
    /// [`BLOCK`] bytes), and a long record's length.
    buf: Vec<u8>,
    frame: Vec<u8>,
    /// Compressed blocks not yet written.
    blocks: Vec<u8>,
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
            file,
            at: 0,
            runs: Vec::new(),
            buf: Vec::with_capacity(WRITE_BUFFER + (1 << 10)),
            frame: Vec::new(),
            blocks: Vec::new(),
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
            let start = self.at;
            match codec.prefix {
                Some(prefix) => self.push_by_prefix(&entries, prefix, codec)?,
                None => {
                    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                    for (k, s) in &entries {
                        self.push(k, s, codec)?;
                    }
                }
            }
            // A run ends with a block of its own.
            self.seal(codec.compression)?;
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

    /// Appends `entries` in key order: (prefix, index) pairs sorted, keys
    /// compared where prefixes tie, then each entry encoded from where it
    /// lies (fetched a few entries ahead, as the order reads them at
    /// random).
    fn push_by_prefix<K: Ord, S>(
        &mut self,
        entries: &[(K, S)],
        prefix: fn(&K) -> u64,
        codec: Codec<K, S>,
    ) -> Result<()> {
        let mut order: Vec<(u64, usize)> = entries
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (prefix(k), i))
            .collect();
        order.sort_unstable_by(|a, b| {
            (a.0.cmp(&b.0)).then_with(|| entries[a.1].0.cmp(&entries[b.1].0))
        });
        for (j, &(_, i)) in order.iter().enumerate() {
            if let Some(&(_, ahead)) = order.get(j + PREFETCH_AHEAD) {
                let at: *const (K, S) = &entries[ahead];
                crate::plumbing::prefetch(at);
                let last = at
                    .cast::<u8>()
                    .wrapping_add(std::mem::size_of::<(K, S)>().saturating_sub(1));
                crate::plumbing::prefetch(last);
            }
            let (k, s) = &entries[i];
            self.push(k, s, codec)?;
        }
        Ok(())
    }

    /// Appends one record: its length, then the key's and the state's
    /// encodings, encoded in place behind a one-byte length that a long
    /// record widens.
    fn push<K, S>(&mut self, k: &K, s: &S, codec: Codec<K, S>) -> Result<()> {
        let start = self.buf.len();
        self.buf.push(0);
        (codec.encode)(k, s, &mut self.buf);
        let len = self.buf.len() - start - 1;
        if len < 0x80 {
            self.buf[start] = len as u8;
        } else {
            self.frame.clear();
            encode_len(len, &mut self.frame);
            self.buf
                .splice(start..start + 1, self.frame.iter().copied());
        }
        match codec.compression {
            Compression::None => {
                self.at += (self.buf.len() - start) as u64;
                if self.buf.len() >= WRITE_BUFFER {
                    self.write()?;
                }
            }
            Compression::Lz4 if self.buf.len() >= BLOCK => self.seal(codec.compression)?,
            Compression::Lz4 => {}
        }
        Ok(())
    }

    /// Compresses the records encoded so far into a block
    /// ([`Compression::Lz4`]; uncompressed records are written as they
    /// are).
    fn seal(&mut self, compression: Compression) -> Result<()> {
        if compression == Compression::None || self.buf.is_empty() {
            return Ok(());
        }
        let raw = self.buf.len();
        let at = self.blocks.len();
        let most = lz4_flex::block::get_maximum_output_size(raw);
        self.blocks.resize(at + BLOCK_HEADER + most, 0);
        let len = lz4_flex::block::compress_into(&self.buf, &mut self.blocks[at + BLOCK_HEADER..])
            .expect("room for the largest output");
        self.blocks[at..at + 4].copy_from_slice(&(len as u32).to_le_bytes());
        self.blocks[at + 4..at + BLOCK_HEADER].copy_from_slice(&(raw as u32).to_le_bytes());
        self.blocks.truncate(at + BLOCK_HEADER + len);
        self.at += (BLOCK_HEADER + len) as u64;
        self.buf.clear();
        if self.blocks.len() >= WRITE_BUFFER {
            self.write()?;
        }
        Ok(())
    }

    /// Writes the records encoded so far, and the blocks compressed.
    fn write(&mut self) -> Result<()> {
        let path = &self.path;
        for bytes in [&mut self.blocks, &mut self.buf] {
            self.file.write_all(bytes).map_err(|e| failed(path, e))?;
            bytes.clear();
        }
        Ok(())
    }

    /// Writes what is left: the file's runs can be read.
    pub(crate) fn finish(mut self) -> Result<Spilled> {
        self.write()?;
        let Writer {
            path, file, runs, ..
        } = self;
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
            released: r.start.next_multiple_of(PAGE),
            buf: Vec::new(),
            pos: 0,
            filled: 0,
            buffer,
            block: Vec::new(),
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
    /// File offset below which the run's whole pages have been released.
    released: u64,
    /// `buf[pos..filled]`: bytes read and not yet consumed.
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    buffer: usize,
    /// A compressed block as read.
    block: Vec<u8>,
}

impl<K, S> RunReader<'_, K, S> {
    /// The next entry, or `None` at the end of the run.
    fn next(&mut self) -> Result<Option<(K, S)>> {
        if self.pos == self.filled && self.at == self.end {
            return Ok(None);
        }
        let len = self.record_len()?;
        if !self.fill(len)? {
            return Err(self.damaged());
        }
        let mut record = &self.buf[self.pos..self.pos + len];
        let entry = (self.codec.decode)(&mut record)
            .filter(|_| record.is_empty())
            .ok_or_else(|| self.damaged())?;
        self.pos += len;
        Ok(Some(entry))
    }

    /// Reads a record's length.
    fn record_len(&mut self) -> Result<usize> {
        // A varint is at most 10 bytes; the run may hold fewer.
        self.fill(10)?;
        let mut rest = &self.buf[self.pos..self.filled];
        let before = rest.len();
        let len = decode_len(&mut rest).ok_or_else(|| self.damaged())?;
        self.pos += before - rest.len();
        Ok(len)
    }

    /// Makes sure `n` bytes are buffered from `pos` on, or as many as the
    /// run has left; true if `n` are.
    fn fill(&mut self, n: usize) -> Result<bool> {
        while self.filled - self.pos < n {
            if self.at == self.end {
                return Ok(false);
            }
            self.more()?;
        }
        Ok(true)
    }

    /// Moves what is left to the front of the buffer and reads more of the
    /// run behind it: up to `buffer` bytes, or one block of a compressed
    /// run.
    fn more(&mut self) -> Result<()> {
        self.buf.copy_within(self.pos..self.filled, 0);
        self.filled -= self.pos;
        self.pos = 0;
        let left = (self.end - self.at) as usize;
        match self.codec.compression {
            Compression::None => {
                let want = self.buffer.min(left);
                self.room(want);
                let at = self.at;
                self.read_at(at, ReadInto::Buf(want))?;
                self.at += want as u64;
                self.filled += want;
            }
            Compression::Lz4 => {
                let mut header = [0u8; BLOCK_HEADER];
                if left < BLOCK_HEADER {
                    return Err(self.damaged());
                }
                self.spilled
                    .file
                    .read_exact_at(&mut header, self.at)
                    .map_err(|e| Error::io(&self.spilled.path, e))?;
                let word =
                    |i: usize| u32::from_le_bytes(header[i..i + 4].try_into().expect("4")) as usize;
                let (len, raw) = (word(0), word(4));
                // An LZ4 byte expands to at most 255: a damaged header does
                // not make this allocate past that.
                if len > left - BLOCK_HEADER || raw > len.saturating_mul(255) + 64 {
                    return Err(self.damaged());
                }
                self.block.resize(len, 0);
                let at = self.at + BLOCK_HEADER as u64;
                self.read_at(at, ReadInto::Block)?;
                self.room(raw);
                let into = &mut self.buf[self.filled..self.filled + raw];
                match lz4_flex::block::decompress_into(&self.block, into) {
                    Ok(n) if n == raw => {}
                    _ => return Err(self.damaged()),
                }
                self.at += (BLOCK_HEADER + len) as u64;
                self.filled += raw;
            }
        }
        self.release();
        Ok(())
    }

    /// Grows the buffer to take `n` more bytes after `filled`.
    fn room(&mut self, n: usize) {
        if self.buf.len() < self.filled + n {
            self.buf.resize(self.filled + n, 0);
        }
    }

    /// Reads from file offset `at` into the buffer (after `filled`) or
    /// into the block.
    fn read_at(&mut self, at: u64, into: ReadInto) -> Result<()> {
        let dst = match into {
            ReadInto::Buf(n) => &mut self.buf[self.filled..self.filled + n],
            ReadInto::Block => &mut self.block[..],
        };
        self.spilled
            .file
            .read_exact_at(dst, at)
            .map_err(|e| Error::io(&self.spilled.path, e))
    }

    /// Releases the run's whole pages that have been read (their bytes are
    /// in the buffer now): a hole is punched in the file, so that the page
    /// cache drops them unwritten and the disk space is freed while the
    /// merge goes on, rather than when the file is removed at the end.
    /// Pages a neighbouring run shares are kept. A file system that cannot
    /// punch holes keeps them all: nothing else depends on it.
    fn release(&mut self) {
        let upto = self.at / PAGE * PAGE;
        if upto <= self.released {
            return;
        }
        punch_hole(&self.spilled.file, self.released, upto - self.released);
        self.released = upto;
    }

    fn damaged(&self) -> Error {
        Error::io(
            &self.spilled.path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, "damaged spill run"),
        )
    }
}

/// Where a read of a run goes.
enum ReadInto {
    /// `n` bytes into the buffer, after what it holds.
    Buf(usize),
    /// The whole block buffer.
    Block,
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

/// A source's current key, ordered by key, then by source (so that a
/// merge is deterministic). Its state waits in the merge's slot for the
/// source: the heap moves keys only.
struct Head<K> {
    key: K,
    source: usize,
}

impl<K: Ord> Ord for Head<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: `BinaryHeap` pops the largest.
        (&other.key, other.source).cmp(&(&self.key, self.source))
    }
}

impl<K: Ord> PartialOrd for Head<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord> PartialEq for Head<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K: Ord> Eq for Head<K> {}

/// The sources of a merge and their current entries: the keys in a heap,
/// each state in its source's slot.
struct Heads<'f, K, S> {
    sources: Vec<Source<'f, K, S>>,
    heap: BinaryHeap<Head<K>>,
    states: Vec<Option<S>>,
}

impl<'f, K: Ord, S> Heads<'f, K, S> {
    /// Every source's first entry.
    fn new(mut sources: Vec<Source<'f, K, S>>) -> Result<Self> {
        let mut heap = BinaryHeap::with_capacity(sources.len());
        let mut states = Vec::with_capacity(sources.len());
        for (source, s) in sources.iter_mut().enumerate() {
            states.push(s.next()?.map(|(key, state)| {
                heap.push(Head { key, source });
                state
            }));
        }
        Ok(Heads {
            sources,
            heap,
            states,
        })
    }

    /// The smallest entry, replaced by its source's next one: one sift
    /// down the heap, rather than a pop and a push.
    fn pop(&mut self) -> Result<Option<(K, S)>> {
        let Some(mut top) = self.heap.peek_mut() else {
            return Ok(None);
        };
        let source = top.source;
        let key = match self.sources[source].next()? {
            Some((key, state)) => {
                let state = self.states[source].replace(state);
                let key = std::mem::replace(&mut top.key, key);
                return Ok(Some((key, state.expect("a head's state"))));
            }
            None => PeekMut::pop(top).key,
        };
        let state = self.states[source].take().expect("a head's state");
        Ok(Some((key, state)))
    }

    /// Whether the smallest entry's key is `key`.
    fn next_is(&self, key: &K) -> bool {
        self.heap.peek().is_some_and(|h| h.key == *key)
    }
}

/// Merges sorted sources in one pass: calls `out` once per key, in key
/// order, with the states of every source for that key joined by `join`;
/// stops at the first error `out` returns.
pub(crate) fn merge<K: Ord, S>(
    sources: Vec<Source<'_, K, S>>,
    join: impl Fn(&mut S, S),
    mut out: impl FnMut(K, S) -> Result<()>,
) -> Result<()> {
    let mut heads = Heads::new(sources)?;
    while let Some((key, mut state)) = heads.pop()? {
        while heads.next_is(&key) {
            let (_, other) = heads.pop()?.expect("a next entry");
            join(&mut state, other);
        }
        out(key, state)?;
    }
    Ok(())
}

/// Entries ahead of the one being written whose memory a spill sorted by
/// prefix asks for: its order reads them at random.
const PREFETCH_AHEAD: usize = 8;

/// The page size that a released range of a spill file is aligned to (a
/// multiple of the kernel's page on the machines ember runs on).
const PAGE: u64 = 64 << 10;

/// Deallocates `len` bytes of `file` from `offset` on (they read as zeros
/// afterwards); does nothing where the system cannot.
fn punch_hole(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return;
        };
        // SAFETY: `fallocate` on a descriptor the `File` owns and keeps
        // open for the call; it reads and writes no memory of ours. A
        // failure (a file system without holes) leaves the file as it was.
        unsafe {
            libc::fallocate(
                file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset,
                len,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

/// Bytes a spill file's writer encodes before it writes them.
const WRITE_BUFFER: usize = 1 << 20;

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
            lz4 in any::<bool>(),
            prefix in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let spill_dir = SpillDir::under(dir.path().to_path_buf());
            let mut codec = Codec::<u32, u64>::new();
            if lz4 {
                codec = codec.compression(Compression::Lz4);
            }
            if prefix {
                // Ties on purpose: keys differing in the low bits only.
                codec = codec.prefix(|k| u64::from(k / 8));
            }
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
        for compression in [Compression::None, Compression::Lz4] {
            let dir = tempfile::tempdir().unwrap();
            let spill_dir = SpillDir::under(dir.path().to_path_buf());
            let codec = Codec::<Vec<u8>, u64>::new().compression(compression);
            let mut w = Writer::create(&spill_dir, 3).unwrap();
            let words = (0..50u64)
                .map(|i| (format!("word{i}").into_bytes(), i))
                .collect();
            w.spill(vec![words], codec).unwrap();
            let spilled = w.finish().unwrap();
            let path = spill_dir.path().unwrap().join("worker-3.runs");
            let mut bytes = std::fs::read(&path).unwrap();
            // A length past the run (or a block's header claiming more
            // than the run holds).
            bytes[..2].copy_from_slice(&[200u8, 1]);
            std::fs::write(&path, &bytes).unwrap();
            let sources = spilled.runs_of(0, codec, 16).map(Source::Disk).collect();
            let err = merge(sources, |a, b| *a += b, |_, _| Ok(())).unwrap_err();
            assert!(
                err.to_string().contains("worker-3.runs"),
                "{compression:?}: {err}"
            );
        }
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
