//! Writing a worker's spill file: one run per spill, its entries sorted
//! by partition then key (a section per partition) or by key alone
//! ([`Layout`]), encoded (and compressed) through one buffer.

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use super::codec::BLOCK_HEADER;
use super::{
    encode_len, failed, Codec, Compression, Layout, Mark, RunAt, SpillDir, Spilled, BLOCK,
};
use crate::error::Result;

/// One worker's spill file of keys `K`, written run by run.
pub(crate) struct Writer<K> {
    path: PathBuf,
    file: File,
    layout: Layout,
    at: u64,
    /// Every run's sections, run by run (by partition within a run).
    sections: Vec<RunAt>,
    /// The index in `sections` of each run's first section.
    runs: Vec<usize>,
    /// Each section's marks, in section order; the section being written
    /// last.
    marks: Vec<Vec<Mark<K>>>,
    /// Records encoded and not yet written (written past
    /// [`WRITE_BUFFER`] bytes; compressed, a block at a time, past
    /// [`BLOCK`] bytes), and a long record's length.
    buf: Vec<u8>,
    frame: Vec<u8>,
    /// Compressed blocks not yet written.
    blocks: Vec<u8>,
    /// Records written.
    records: u64,
    /// Spills written, each one run (a spill of nothing writes none).
    pub(crate) spills: u64,
}

impl<K> Writer<K> {
    /// A new spill file for worker `w` in `dir`, its runs laid out as
    /// `layout` says.
    pub(crate) fn create(dir: &SpillDir, w: usize, layout: Layout) -> Result<Writer<K>> {
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
            layout,
            at: 0,
            sections: Vec::new(),
            runs: Vec::new(),
            marks: Vec::new(),
            buf: Vec::with_capacity(WRITE_BUFFER + (1 << 10)),
            frame: Vec::new(),
            blocks: Vec::new(),
            records: 0,
            spills: 0,
        })
    }

    /// Writes one spill as one run: each partition's entries sorted by
    /// key, a section each ([`Layout::ByPartition`]), or every partition's
    /// merged in key order into one section ([`Layout::ByKey`]). Returns
    /// the partitions emptied, their memory kept for reuse.
    pub(crate) fn spill<S>(
        &mut self,
        mut parts: Vec<Vec<(K, S)>>,
        codec: Codec<K, S>,
    ) -> Result<Vec<Vec<(K, S)>>>
    where
        K: Ord,
    {
        let full: Vec<usize> = (0..parts.len()).filter(|&p| !parts[p].is_empty()).collect();
        if full.is_empty() {
            // Nothing to write: no run, and no spill.
            return Ok(parts);
        }
        let first = self.sections.len();
        match (self.layout, full.len()) {
            (Layout::ByKey, 2..) => {
                let body = |w: &mut Self| w.push_merged(&mut parts, codec);
                self.section(0, codec.compression, body)?;
            }
            (layout, _) => {
                for &p in &full {
                    let section = if layout == Layout::ByKey { 0 } else { p };
                    let body = |w: &mut Self| w.push_sorted(&mut parts[p], codec);
                    self.section(section, codec.compression, body)?;
                }
            }
        }
        self.runs.push(first);
        for entries in &mut parts {
            self.records += entries.len() as u64;
            entries.clear();
        }
        self.spills += 1;
        Ok(parts)
    }

    /// Writes one section, of partition `partition`: what `body` pushes,
    /// ended by a block of its own (so that a reader of the section reads
    /// no other's records).
    fn section(
        &mut self,
        partition: usize,
        compression: Compression,
        body: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let start = self.at;
        self.marks.push(Vec::new());
        body(self)?;
        self.seal(compression)?;
        self.sections.push(RunAt {
            partition,
            start,
            len: self.at - start,
        });
        Ok(())
    }

    /// Appends `entries` sorted by key.
    fn push_sorted<S>(&mut self, entries: &mut [(K, S)], codec: Codec<K, S>) -> Result<()>
    where
        K: Ord,
    {
        match codec.prefix {
            Some(prefix) => self.push_by_prefix(entries, prefix, codec),
            None => {
                entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                entries.iter().try_for_each(|(k, s)| self.push(k, s, codec))
            }
        }
    }

    /// Appends the entries of every part in key order: each part sorted by
    /// key, then merged on a heap of the parts' heads (a key is in one
    /// part only).
    fn push_merged<S>(&mut self, parts: &mut [Vec<(K, S)>], codec: Codec<K, S>) -> Result<()>
    where
        K: Ord,
    {
        for entries in parts.iter_mut() {
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        }
        let mut next = vec![0usize; parts.len()];
        let mut heads: BinaryHeap<Reverse<(&K, usize)>> = parts
            .iter()
            .enumerate()
            .filter_map(|(p, entries)| entries.first().map(|(k, _)| Reverse((k, p))))
            .collect();
        while let Some(mut top) = heads.peek_mut() {
            let p = top.0 .1;
            let (k, s) = &parts[p][next[p]];
            self.push(k, s, codec)?;
            next[p] += 1;
            match parts[p].get(next[p]) {
                Some((k, _)) => top.0 .0 = k,
                None => drop(PeekMut::pop(top)),
            }
        }
        Ok(())
    }

    /// Appends `entries` in key order: (prefix, index) pairs sorted, keys
    /// compared where prefixes tie, then each entry encoded from where it
    /// lies (fetched a few entries ahead, as the order reads them at
    /// random).
    fn push_by_prefix<S>(
        &mut self,
        entries: &[(K, S)],
        prefix: fn(&K) -> u64,
        codec: Codec<K, S>,
    ) -> Result<()>
    where
        K: Ord,
    {
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
                crate::hint::prefetch(at);
                let last = at
                    .cast::<u8>()
                    .wrapping_add(std::mem::size_of::<(K, S)>().saturating_sub(1));
                crate::hint::prefetch(last);
            }
            let (k, s) = &entries[i];
            self.push(k, s, codec)?;
        }
        Ok(())
    }

    /// Appends one record: its length, then the key's and the state's
    /// encodings, encoded in place behind a one-byte length that a long
    /// record widens. A record that starts a block (compressed), or that
    /// starts [`BLOCK`] bytes or more after the run's last mark, is marked.
    fn push<S>(&mut self, k: &K, s: &S, codec: Codec<K, S>) -> Result<()> {
        let start = self.buf.len();
        let marks = self.marks.last_mut().expect("a section being written");
        let mark = match codec.compression {
            Compression::Lz4 => start == 0,
            Compression::None => marks.last().is_none_or(|m| self.at - m.at >= BLOCK as u64),
        };
        self.buf.push(0);
        (codec.encode)(k, s, &mut self.buf);
        let len = self.buf.len() - start - 1;
        if mark {
            // The key as a reader will decode it (keys need not be Clone).
            if let Some((key, _)) = (codec.decode)(&mut &self.buf[start + 1..]) {
                marks.push(Mark { at: self.at, key });
            }
        }
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
    pub(crate) fn finish(mut self) -> Result<Spilled<K>> {
        self.write()?;
        let Writer {
            path,
            file,
            layout,
            sections,
            runs,
            marks,
            records,
            at,
            ..
        } = self;
        Ok(Spilled {
            path,
            file,
            layout,
            sections,
            runs,
            marks,
            records,
            bytes: at,
        })
    }

    /// Bytes written.
    pub(crate) fn bytes(&self) -> u64 {
        self.at
    }

    /// Runs written: one per spill.
    pub(crate) fn runs(&self) -> usize {
        self.runs.len()
    }
}

/// Entries ahead of the one being written whose memory a spill sorted by
/// prefix asks for: its order reads them at random.
const PREFETCH_AHEAD: usize = 8;

/// Bytes a spill file's writer encodes before it writes them.
const WRITE_BUFFER: usize = 1 << 20;
