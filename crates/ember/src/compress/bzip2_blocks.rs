//! A bzip2 file cut at its blocks, each block decoded apart.
//!
//! A bzip2 stream is a header (`BZh1` to `BZh9`), blocks that each start
//! with the 48-bit magic `0x314159265359` and the block's CRC, and an end
//! (`0x177245385090`, the stream's CRC, zero bits to a byte boundary).
//! Blocks are not byte-aligned and their lengths are written nowhere, so
//! the file is scanned for the two magics at every bit offset, as Hadoop's
//! splittable bzip2 reader does. A block then decodes on its own, as a
//! one-block stream made of a header, its bits, and an end whose stream
//! CRC is the block's (the CRC of a one-block stream).
//!
//! The magic can also occur inside a block's bits, by chance (about once
//! in 2^48 bit offsets). A false block start cuts a block in two: the
//! first half fails to decode, and is decoded again joined to the next
//! piece, which is then skipped ([`Rejoin`]). A false end breaks the
//! file's structure as the scan checks it, and the file is decoded whole,
//! by one decoder.

use std::fs::File;
use std::io::{self, Cursor, Read};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::source::{Rejoin, Shared, Stream};
use super::Compression;

/// A block's magic number.
const BLOCK: u64 = 0x3141_5926_5359;
/// A stream end's magic number.
const END: u64 = 0x1772_4538_5090;
/// Bytes scanned per read.
const SCAN: usize = 4 << 20;

/// What a magic found by the scan starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Block,
    End,
}

/// A magic found in the file, at a bit offset (bit 0 is the first byte's
/// highest bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cut {
    pub(super) bit: u64,
    pub(super) kind: Kind,
}

/// The block starts and stream ends of the bzip2 file `file` (its first
/// `len` bytes), in order; `None` unless they make whole streams, each
/// ending where the next begins and the last at the end of the file.
///
/// # Errors
///
/// A read of the file failing.
pub(super) fn scan(file: &File, len: u64) -> io::Result<Option<Vec<Cut>>> {
    let cuts = find_magics(file, len)?;
    Ok(is_whole(file, len, &cuts)?.then_some(cuts))
}

/// Every bit offset where a block or end magic starts.
fn find_magics(file: &File, len: u64) -> io::Result<Vec<Cut>> {
    // For each byte value, the bit offsets (within the byte before it)
    // at which a magic starting there would have this value as its
    // second byte: the bytes worth a closer look.
    let mut second = [0u8; 256];
    for shift in 0..8 {
        for magic in [BLOCK, END] {
            second[((magic >> (32 + shift)) & 0xff) as usize] |= 1 << shift;
        }
    }
    let mut cuts = Vec::new();
    let mut buf = vec![0; SCAN + 8];
    let mut base = 0;
    while base < len {
        let want = (len - base).min(buf.len() as u64) as usize;
        buf[want..].fill(0);
        file.read_exact_at(&mut buf[..want], base)?;
        let windows = want.min(SCAN);
        for i in 0..windows.saturating_sub(1) {
            let shifts = second[buf[i + 1] as usize];
            if shifts == 0 {
                continue;
            }
            let window = u64::from_be_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
            for shift in (0..8).filter(|s| shifts & (1 << s) != 0) {
                let bits = (window >> (16 - shift)) & 0xffff_ffff_ffff;
                let kind = match bits {
                    BLOCK => Kind::Block,
                    END => Kind::End,
                    _ => continue,
                };
                let bit = (base + i as u64) * 8 + shift;
                cuts.push(Cut { bit, kind });
            }
        }
        base += SCAN as u64;
    }
    Ok(cuts)
}

/// Whether `cuts` make whole streams: each stream's header is followed
/// by its first cut, an end is followed (after its CRC and padding) by
/// the next stream's header or the end of the file, and the last cut is
/// an end.
fn is_whole(file: &File, len: u64, cuts: &[Cut]) -> io::Result<bool> {
    let mut stream = 0; // where the next stream's header starts
    let mut expect_header = true;
    for cut in cuts {
        if expect_header {
            if !is_header(file, stream, len)? || cut.bit != stream * 8 + 32 {
                return Ok(false);
            }
            expect_header = false;
        }
        if cut.kind == Kind::End {
            stream = (cut.bit + 48 + 32).div_ceil(8);
            expect_header = true;
        }
    }
    Ok(expect_header && stream == len && !cuts.is_empty())
}

/// Whether a stream header (`BZh1` to `BZh9`) starts at `at`.
fn is_header(file: &File, at: u64, len: u64) -> io::Result<bool> {
    let mut head = [0; 4];
    if at + 4 > len {
        return Ok(false);
    }
    file.read_exact_at(&mut head, at)?;
    Ok(matches!(head, [b'B', b'Z', b'h', b'1'..=b'9']))
}

/// A one-block bzip2 stream of the bits `bytes` holds from bit `skip`
/// for `bits` bits: a block whose CRC is its bits 48 to 80.
fn one_block_stream(bytes: &[u8], skip: u32, bits: u64) -> Vec<u8> {
    let mut out = Bits::new(b"BZh9", bytes.len() + 16);
    let whole = (bits / 8) as usize;
    let byte_at = |j: usize| {
        let next = bytes.get(j + 1).copied().unwrap_or(0);
        ((u16::from(bytes[j]) << 8 | u16::from(next)) >> (8 - skip)) as u8
    };
    out.bytes.extend((0..whole).map(byte_at));
    let rest = (bits % 8) as u32;
    if rest > 0 {
        out.push(u64::from(byte_at(whole) >> (8 - rest)), rest);
    }
    let crc = (0..4).fold(0u64, |crc, j| crc << 8 | u64::from(byte_at(6 + j)));
    out.push(END, 48);
    out.push(crc, 32);
    out.finish()
}

/// A bit writer, highest bit first.
struct Bits {
    bytes: Vec<u8>,
    acc: u64,
    held: u32,
}

impl Bits {
    fn new(head: &[u8], capacity: usize) -> Bits {
        let mut bytes = Vec::with_capacity(capacity);
        bytes.extend_from_slice(head);
        Bits {
            bytes,
            acc: 0,
            held: 0,
        }
    }

    /// Appends the low `n` bits of `value` (`n` at most 48).
    fn push(&mut self, value: u64, n: u32) {
        self.acc = self.acc << n | value & ((1 << n) - 1);
        self.held += n;
        while self.held >= 8 {
            self.held -= 8;
            self.bytes.push((self.acc >> self.held) as u8);
        }
    }

    /// The bytes, the last padded with zero bits.
    fn finish(mut self) -> Vec<u8> {
        if self.held > 0 {
            self.bytes.push((self.acc << (8 - self.held)) as u8);
        }
        self.bytes
    }
}

/// A bzip2 file's blocks, each decoded apart, and decoded again joined
/// with the next ones when a block start proves false (see
/// [`Rejoin`]).
pub(super) struct Blocks {
    file: Arc<Shared>,
    cuts: Vec<Cut>,
    /// The cut each piece (each block) starts at.
    starts: Vec<usize>,
}

impl Blocks {
    /// The blocks of `file`, whose magics are `cuts` (from [`scan`]).
    pub(super) fn new(file: Arc<Shared>, cuts: Vec<Cut>) -> Blocks {
        let starts = (0..cuts.len())
            .filter(|&c| cuts[c].kind == Kind::Block)
            .collect();
        Blocks { file, cuts, starts }
    }

    /// How many pieces (blocks).
    pub(super) fn pieces(&self) -> usize {
        self.starts.len()
    }

    /// A decoder of the bits from cut `from` to cut `to`, as a one-block
    /// stream.
    fn decoder(&self, from: usize, to: usize) -> io::Result<Stream> {
        let (first, last) = (self.cuts[from].bit, self.cuts[to].bit);
        let (start, end) = (first / 8, last.div_ceil(8));
        let mut bytes = vec![0; (end - start) as usize];
        self.file.read_exact_at(&mut bytes, start)?;
        if to + 1 == self.cuts.len() {
            self.file.check()?;
        }
        let stream = one_block_stream(&bytes, (first % 8) as u32, last - first);
        Compression::Bzip2.decoder(Cursor::new(stream), start.saturating_sub(4))
    }
}

impl Rejoin for Blocks {
    fn rejoin(&self, first: usize, pieces: usize) -> Option<io::Result<Stream>> {
        let from = self.starts[first];
        let to = from + pieces;
        let within = to < self.cuts.len()
            && self.cuts[from + 1..to]
                .iter()
                .all(|c| c.kind == Kind::Block);
        within.then(|| self.decoder(from, to))
    }
}

/// The decoder of one block, made when first read (on the thread that
/// reads it).
pub(super) struct BlockPiece {
    blocks: Arc<Blocks>,
    piece: usize,
    decoder: Option<Stream>,
}

impl BlockPiece {
    /// Piece number `piece` of `blocks`.
    pub(super) fn new(blocks: Arc<Blocks>, piece: usize) -> BlockPiece {
        BlockPiece {
            blocks,
            piece,
            decoder: None,
        }
    }
}

impl Read for BlockPiece {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let decoder = match &mut self.decoder {
            Some(decoder) => decoder,
            None => {
                let from = self.blocks.starts[self.piece];
                self.decoder.insert(self.blocks.decoder(from, from + 1)?)
            }
        };
        decoder.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn bzip2(text: &[u8], level: u32) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
        e.write_all(text).unwrap();
        e.finish().unwrap()
    }

    fn file_of(bytes: &[u8]) -> File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    /// Text that takes several 100 kB blocks at level 1.
    fn text() -> Vec<u8> {
        (0..60_000u32)
            .flat_map(|i| format!("{} ", i.wrapping_mul(2_654_435_761) % 99_991).into_bytes())
            .collect()
    }

    #[test]
    fn blocks_and_ends_are_found_at_any_bit() {
        let (a, b) = (bzip2(&text(), 1), bzip2(b"", 9));
        let file = [&a[..], &b, &a].concat();
        let cuts = scan(&file_of(&file), file.len() as u64).unwrap().unwrap();
        let blocks = cuts.iter().filter(|c| c.kind == Kind::Block).count();
        let ends = cuts.iter().filter(|c| c.kind == Kind::End).count();
        assert_eq!(ends, 3);
        assert!(blocks >= 6 && blocks % 2 == 0, "{cuts:?}");
        assert!(cuts.iter().any(|c| c.bit % 8 != 0), "not all byte-aligned");
        // Cut short, or followed by other bytes: not whole streams.
        let short = &file[..file.len() - 1];
        assert_eq!(scan(&file_of(short), short.len() as u64).unwrap(), None);
        let more = [&file[..], b"x"].concat();
        assert_eq!(scan(&file_of(&more), more.len() as u64).unwrap(), None);
    }

    #[test]
    fn each_block_decodes_alone() {
        let text = text();
        let file = bzip2(&text, 1);
        let cuts = scan(&file_of(&file), file.len() as u64).unwrap().unwrap();
        let mut out = Vec::new();
        for pair in cuts.windows(2).filter(|p| p[0].kind == Kind::Block) {
            let (from, to) = (pair[0].bit, pair[1].bit);
            let bytes = &file[(from / 8) as usize..to.div_ceil(8) as usize];
            let stream = one_block_stream(bytes, (from % 8) as u32, to - from);
            bzip2::read::BzDecoder::new(&stream[..])
                .read_to_end(&mut out)
                .unwrap();
        }
        assert_eq!(out, text);
    }
}
