//! Map output lines: their keys, their partitions, and their sort.
//!
//! A line is `key<TAB>value`: the key is everything before the first tab,
//! and a line without a tab is all key with an empty value (Hadoop
//! Streaming's defaults). Lines are written on as `key<TAB>value<NEWLINE>`
//! whatever they were, as Hadoop re-joins a key and its value for the
//! reducer: a line without a tab gains one.

use std::io::{self, Write};
use std::ops::Range;

use anyhow::{ensure, Result};

/// The partition of `key` among `partitions`: Hadoop's default
/// `HashPartitioner` on a `Text` key (`(hash & Integer.MAX_VALUE) %
/// partitions`, the hash being `31 * h + b` over the key's signed bytes
/// from 1), so that a key lands in the partition, and so in the output
/// part, that Hadoop Streaming would give it.
pub(super) fn partition(key: &[u8], partitions: u32) -> u32 {
    let hash = key.iter().fold(1i32, |h, &b| {
        h.wrapping_mul(31).wrapping_add(b as i8 as i32)
    });
    (hash & i32::MAX) as u32 % partitions
}

/// The key of a record as written on (`key<TAB>value<NEWLINE>`): up to
/// the first tab.
pub(super) fn key_of(record: &[u8]) -> &[u8] {
    let line = record.strip_suffix(b"\n").unwrap_or(record);
    memchr::memchr(b'\t', line).map_or(line, |i| &line[..i])
}

/// The first 16 bytes of `key` as a big-endian number, zero-padded: keys
/// compare as their prefixes do, or have equal prefixes.
fn prefix(key: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let n = key.len().min(16);
    bytes[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(bytes)
}

/// One line of a buffer of map output, by offsets into the buffer.
#[derive(Debug, Clone, Copy)]
struct Line {
    /// The first 16 bytes of its key, big-endian, zero-padded: most
    /// comparisons end here without reading the buffer.
    prefix: u128,
    /// Its partition.
    part: u32,
    start: u32,
    /// Where its key ends: its first tab, or `end`.
    key_end: u32,
    /// Where it ends, before its newline.
    end: u32,
}

/// Bytes of index each line costs while a buffer is sorted (counted
/// against the sort buffer).
pub(super) const LINE_COST: usize = std::mem::size_of::<Line>();

/// A buffer of map output lines, sorted by partition and then by key
/// bytes; lines with equal keys keep their order (a stable sort, as
/// Hadoop's).
pub(super) struct Sorted<'a> {
    data: &'a [u8],
    lines: Vec<Line>,
}

impl<'a> Sorted<'a> {
    /// Indexes and sorts the lines of `data` (a last line without a
    /// newline counts) for `partitions` partitions.
    pub(super) fn new(data: &'a [u8], partitions: u32) -> Result<Self> {
        ensure!(
            data.len() <= u32::MAX as usize,
            "a buffer of map output over 4 GiB (a line that long?)"
        );
        let mut lines = Vec::with_capacity(data.len() / 16);
        let mut start = 0;
        let ends = memchr::memchr_iter(b'\n', data);
        let last = (data.last().is_some_and(|&b| b != b'\n')).then_some(data.len());
        for end in ends.chain(last) {
            let line = &data[start..end];
            let key_len = memchr::memchr(b'\t', line).unwrap_or(line.len());
            lines.push(Line {
                prefix: prefix(&line[..key_len]),
                part: partition(&line[..key_len], partitions),
                start: start as u32,
                key_end: (start + key_len) as u32,
                end: end as u32,
            });
            start = end + 1;
        }
        let key = |l: &Line| &data[l.start as usize..l.key_end as usize];
        let len = |l: &Line| l.key_end - l.start;
        // Equal prefixes: keys of at most 16 bytes are equal up to the
        // shorter one and zeros after it, so the shorter comes first.
        let rest = |a: &Line, b: &Line| match len(a) <= 16 && len(b) <= 16 {
            true => len(a).cmp(&len(b)),
            false => key(a).cmp(key(b)),
        };
        // Unstable, but ties broken by position: the stable order.
        lines.sort_unstable_by(|a, b| {
            (a.part, a.prefix)
                .cmp(&(b.part, b.prefix))
                .then_with(|| rest(a, b))
                .then(a.start.cmp(&b.start))
        });
        Ok(Sorted { data, lines })
    }

    /// The lines of partition `p`, as a range of `self.lines`.
    fn range(&self, p: u32) -> Range<usize> {
        let lo = self.lines.partition_point(|l| l.part < p);
        let hi = self.lines.partition_point(|l| l.part <= p);
        lo..hi
    }

    /// The bytes [`write`](Self::write) writes for partition `p`.
    pub(super) fn len(&self, p: u32) -> u64 {
        let lines = &self.lines[self.range(p)];
        let tab = |l: &Line| u64::from(l.key_end == l.end);
        lines
            .iter()
            .map(|l| u64::from(l.end - l.start) + 1 + tab(l))
            .sum()
    }

    /// Writes the records of partition `p` (every partition, in order,
    /// for `None`) in their sorted order.
    pub(super) fn write(&self, p: Option<u32>, w: &mut dyn Write) -> io::Result<()> {
        let range = p.map_or(0..self.lines.len(), |p| self.range(p));
        for l in &self.lines[range] {
            w.write_all(&self.data[l.start as usize..l.end as usize])?;
            if l.key_end == l.end {
                w.write_all(b"\t")?;
            }
            w.write_all(b"\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_go_where_hadoops_hash_partitioner_sends_them() {
        // Text("hello").hashCode() = 31^5 + String "hello".hashCode().
        assert_eq!(partition(b"hello", i32::MAX as u32), 127_791_473);
        // Bytes >= 0x80 are signed: C3 A9 gives 31 * (31 - 61) - 87.
        assert_eq!(
            partition("é".as_bytes(), 1000),
            (2_147_483_648u32 - 1017) % 1000
        );
        assert_eq!(partition(b"", 7), 1);
    }

    #[test]
    fn lines_sort_by_partition_then_key_bytes_stably() {
        let data = b"b\t1\na\t2\nb\t0\n\xff\t3\nc\na\t1\nb";
        let sorted = Sorted::new(data, 1).unwrap();
        let mut out = Vec::new();
        sorted.write(None, &mut out).unwrap();
        assert_eq!(out, b"a\t2\na\t1\nb\t1\nb\t0\nb\t\nc\t\n\xff\t3\n");
        assert_eq!(sorted.len(0), out.len() as u64);
        let sorted = Sorted::new(data, 3).unwrap();
        let mut all = Vec::new();
        for p in 0..3 {
            let mut part = Vec::new();
            sorted.write(Some(p), &mut part).unwrap();
            assert_eq!(sorted.len(p), part.len() as u64);
            for rec in part.split_inclusive(|&b| b == b'\n') {
                assert_eq!(partition(key_of(rec), 3), p);
            }
            all.extend(part);
        }
        assert_eq!(all.len(), out.len());
    }

    #[test]
    fn keys_sharing_their_first_16_bytes_sort_by_the_rest() {
        let data = b"abcdefghijklmnopZ\t1\nabcdefghijklmnopA\t2\na\0\t3\na\t4\n\
            abcdefghijklmnopA\t5\nabcdefghijklmnop\t6\nabcdefghijklmnop\0\t7\n";
        let mut out = Vec::new();
        Sorted::new(data, 1).unwrap().write(None, &mut out).unwrap();
        let want: &[u8] = b"a\t4\na\0\t3\nabcdefghijklmnop\t6\nabcdefghijklmnop\0\t7\n\
            abcdefghijklmnopA\t2\nabcdefghijklmnopA\t5\nabcdefghijklmnopZ\t1\n";
        assert_eq!(out, want);
    }

    #[test]
    fn the_sort_is_a_stable_sort_by_key_bytes() {
        // Keys of 0 to 20 bytes from a small alphabet with 0x00 and 0xff,
        // so that prefixes, padding and long tails tie often.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut data = Vec::new();
        for i in 0..5000 {
            for _ in 0..next(21) {
                data.push([0u8, b'a', b'b', 0xff][next(4) as usize]);
            }
            data.extend_from_slice(format!("\t{i}\n").as_bytes());
        }
        let mut want: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
        want.sort_by_key(|rec| key_of(rec));
        let mut out = Vec::new();
        Sorted::new(&data, 1)
            .unwrap()
            .write(None, &mut out)
            .unwrap();
        assert_eq!(out, want.concat());
    }

    #[test]
    fn a_key_is_what_comes_before_the_first_tab() {
        assert_eq!(key_of(b"k\tv\tw\n"), b"k");
        assert_eq!(key_of(b"kv\n"), b"kv");
        assert_eq!(key_of(b"\t\n"), b"");
    }
}
