//! Reading a worker's spill file back: one reader per section of a run
//! (or per key range of a section), each through a buffer of its own, releasing the
//! file's pages as it goes.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::codec::BLOCK_HEADER;
use super::{decode_len, Codec, Compression, Layout, Mark, RunAt};
use crate::error::{Error, Result};

/// One worker's finished spill file of keys `K`: its runs, their
/// sections and the sections' marks.
#[derive(Debug)]
pub(crate) struct Spilled<K> {
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) layout: Layout,
    /// Every run's sections, run by run (by partition within a run).
    pub(super) sections: Vec<RunAt>,
    /// The index in `sections` of each run's first section.
    pub(super) runs: Vec<usize>,
    /// Each section's marks, by section.
    pub(super) marks: Vec<Vec<Mark<K>>>,
    /// Records written, and bytes (as written: compressed, if so).
    pub(super) records: u64,
    pub(super) bytes: u64,
}

impl<K> Spilled<K> {
    /// Partition `p`'s sections, one per run at most: each run's found by
    /// a binary search of its own sections.
    fn sections_of(&self, p: usize) -> impl Iterator<Item = &RunAt> {
        debug_assert!(self.layout == Layout::ByPartition, "sections by key");
        let ends = self
            .runs
            .iter()
            .skip(1)
            .copied()
            .chain([self.sections.len()]);
        self.runs.iter().zip(ends).filter_map(move |(&from, to)| {
            let run = &self.sections[from..to];
            let i = run.binary_search_by_key(&p, |s| s.partition).ok()?;
            Some(&run[i])
        })
    }

    /// Readers of partition `p`'s sections, each with a buffer of `buffer`
    /// bytes.
    pub(crate) fn runs_of<S>(
        &self,
        p: usize,
        codec: Codec<K, S>,
        buffer: usize,
    ) -> impl Iterator<Item = RunReader<'_, K, S>> {
        self.sections_of(p).map(move |r| {
            let mut reader = self.reader(r, r.start, codec, buffer);
            reader.released = Some(r.start.next_multiple_of(PAGE));
            reader
        })
    }

    /// Sections of partition `p` (runs that hold any of it).
    pub(crate) fn count(&self, p: usize) -> usize {
        self.sections_of(p).count()
    }

    /// A reader of section `r` from file offset `at` on (a mark's, or the
    /// section's start), which releases no pages.
    pub(super) fn reader<S>(
        &self,
        r: &RunAt,
        at: u64,
        codec: Codec<K, S>,
        buffer: usize,
    ) -> RunReader<'_, K, S> {
        RunReader {
            spilled: self,
            codec,
            at,
            end: r.start + r.len,
            released: None,
            buf: Vec::new(),
            pos: 0,
            filled: 0,
            buffer,
            block: Vec::new(),
            after: None,
            upto: None,
        }
    }

    /// Releases the file's bytes from offset `from` up to `to` (whole
    /// pages), which no reader reads again.
    pub(super) fn release(&self, from: u64, to: u64) {
        punch_hole(&self.file, from, to - from);
    }
}

/// Reads one section of a run back, record by record, through a buffer of
/// its own (positioned reads on the worker's file: no file handle per
/// run).
pub(crate) struct RunReader<'f, K, S> {
    spilled: &'f Spilled<K>,
    codec: Codec<K, S>,
    /// File offset of the byte after `buf`.
    at: u64,
    end: u64,
    /// File offset below which the run's whole pages have been released;
    /// `None`: the reader releases none (the reader of a key range, whose
    /// neighbours may read the same pages: the merge releases them).
    released: Option<u64>,
    /// `buf[pos..filled]`: bytes read and not yet consumed.
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    buffer: usize,
    /// A compressed block as read.
    block: Vec<u8>,
    /// Keys up to this one are skipped: they are the range's before.
    after: Option<&'f K>,
    /// The run ends, for this reader, before the first key past this one.
    upto: Option<&'f K>,
}

impl<'f, K, S> RunReader<'f, K, S> {
    /// The reader, reading the keys in `(after, upto]` only (`None`: no
    /// bound on that side).
    pub(super) fn within(mut self, (after, upto): (Option<&'f K>, Option<&'f K>)) -> Self {
        self.after = after;
        self.upto = upto;
        self
    }

    /// The next entry, or `None` at the end of the run (or of its range).
    pub(super) fn next(&mut self) -> Result<Option<(K, S)>>
    where
        K: Ord,
    {
        while let Some((key, state)) = self.record()? {
            if self.after.is_some_and(|a| key <= *a) {
                continue;
            }
            self.after = None;
            if self.upto.is_some_and(|u| key > *u) {
                // The next range's first key: this reader's run ends.
                self.end = self.at;
                self.pos = self.filled;
                return Ok(None);
            }
            return Ok(Some((key, state)));
        }
        Ok(None)
    }

    /// The next record, or `None` at the end of the run.
    fn record(&mut self) -> Result<Option<(K, S)>> {
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
        let Some(released) = self.released else {
            return;
        };
        let upto = self.at / PAGE * PAGE;
        if upto <= released {
            return;
        }
        punch_hole(&self.spilled.file, released, upto - released);
        self.released = Some(upto);
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

/// The page size that a released range of a spill file is aligned to (a
/// multiple of the kernel's page on the machines ember runs on).
pub(super) const PAGE: u64 = 64 << 10;

/// Deallocates `len` bytes of `file` from `offset` on (they read as zeros
/// afterwards); does nothing where the system cannot.
pub(crate) fn punch_hole(file: &File, offset: u64, len: u64) {
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

/// The buffer each run reader gets when `runs` runs are read at once within
/// `bytes`: at least 4 KiB, at most 256 KiB.
pub(crate) fn read_buffer(bytes: usize, runs: usize) -> usize {
    (bytes / runs.max(1)).clamp(4 << 10, 256 << 10)
}
