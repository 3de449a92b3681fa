//! A compressed file cut into pieces that decode apart, so that several
//! threads decode one file (each piece is a stream of `read_ahead`), and
//! the reader that joins the pieces' bytes back in order.
//!
//! zstd files are cut at frames (`zstd_frames`), grouped into pieces of
//! at least [`MIN_PIECE`] compressed bytes; bzip2 files at blocks
//! (`bzip2_blocks`). Files of other formats, files smaller than
//! [`MIN_PIECE`], and files whose structure the cutting cannot read
//! (corrupt, cut short, other bytes after the end) are one piece, whose
//! decoder then says what is wrong and where.
//!
//! Every piece reads its file as `source` says: with positioned reads, no
//! further than the length the file had when opened, and a file found
//! changed is an error.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::sync::Arc;

use super::bzip2_blocks::{self, BlockPiece, Blocks};
use super::source::{FileRange, Rejoin, Shared, Stream};
use super::{zstd_frames, Compression};

/// The fewest compressed bytes worth a piece of their own.
const MIN_PIECE: u64 = 1 << 20;
/// How many more pieces a piece that fails to decode may be joined with
/// before its error is taken for a real one.
const MAX_JOINED: usize = 2;

/// The decoders of one input's pieces, in order.
pub(crate) struct Pieces {
    streams: Vec<Stream>,
    rejoin: Option<Arc<dyn Rejoin>>,
}

impl Pieces {
    /// One piece, read as it is.
    pub(crate) fn one(stream: Stream) -> Pieces {
        Pieces {
            streams: vec![stream],
            rejoin: None,
        }
    }

    /// The decoders of `file`'s pieces, `file` being in `format` and
    /// `meta` its metadata when opened.
    ///
    /// # Errors
    ///
    /// A read of the file failing, or a decoder's setup.
    pub(crate) fn of_file(format: Compression, file: File, meta: &Metadata) -> io::Result<Pieces> {
        let len = meta.len();
        let file = Arc::new(Shared::new(file, meta));
        if len >= MIN_PIECE {
            match format {
                Compression::Zstd => {
                    if let Some(starts) = zstd_frames::frame_starts(file.file(), len)? {
                        return zstd_pieces(&file, &starts, len);
                    }
                }
                Compression::Bzip2 => {
                    if let Some(cuts) = bzip2_blocks::scan(file.file(), len)? {
                        return Ok(bzip2_pieces(Blocks::new(file, cuts)));
                    }
                }
                _ => {}
            }
        }
        let whole = FileRange::new(file, 0, len);
        Ok(Pieces::one(format.decoder(whole, 0)?))
    }

    /// How many pieces.
    pub(crate) fn len(&self) -> usize {
        self.streams.len()
    }

    /// The pieces' streams, to be read (ahead), and what joins their
    /// readers.
    pub(crate) fn into_streams(self) -> (Vec<Stream>, Joiner) {
        (
            self.streams,
            Joiner {
                rejoin: self.rejoin,
            },
        )
    }
}

/// The decoders of a zstd file's pieces: frames from `starts` grouped
/// into pieces of at least [`MIN_PIECE`] bytes.
fn zstd_pieces(file: &Arc<Shared>, starts: &[u64], len: u64) -> io::Result<Pieces> {
    let mut bounds = vec![0];
    for &start in starts {
        if start - bounds.last().expect("starts with 0") >= MIN_PIECE {
            bounds.push(start);
        }
    }
    if len - bounds.last().expect("starts with 0") < MIN_PIECE && bounds.len() > 1 {
        bounds.pop(); // a short last piece joins the one before
    }
    bounds.push(len);
    let streams = bounds
        .windows(2)
        .map(|r| Compression::Zstd.decoder(FileRange::new(Arc::clone(file), r[0], r[1]), r[0]))
        .collect::<io::Result<Vec<_>>>()?;
    Ok(Pieces {
        streams,
        rejoin: None,
    })
}

/// The decoders of a bzip2 file's pieces, one a block.
fn bzip2_pieces(blocks: Blocks) -> Pieces {
    let blocks = Arc::new(blocks);
    let streams = (0..blocks.pieces())
        .map(|piece| Box::new(BlockPiece::new(Arc::clone(&blocks), piece)) as Stream)
        .collect();
    Pieces {
        streams,
        rejoin: Some(blocks),
    }
}

/// What joins the readers of an input's pieces.
pub(crate) struct Joiner {
    rejoin: Option<Arc<dyn Rejoin>>,
}

impl Joiner {
    /// One reader of the bytes of `readers` (one a piece, in order).
    pub(crate) fn join(self, readers: Vec<Stream>) -> Stream {
        match <[Stream; 1]>::try_from(readers) {
            Ok([one]) => one,
            Err(readers) => Box::new(Joined {
                readers: readers.into_iter(),
                next: 0,
                current: None,
                first: 0,
                span: 0,
                given: 0,
                taken_in: 0,
                rejoin: self.rejoin,
                first_error: None,
            }),
        }
    }
}

/// The bytes of several pieces' readers, in turn; a piece that fails to
/// decode is decoded again here joined with the next (if its pieces may
/// be rejoined), whose readers are then read out and dropped.
struct Joined {
    readers: std::vec::IntoIter<Stream>,
    /// The number of the next reader.
    next: usize,
    /// The reader being read: of `span` pieces from piece `first` on,
    /// which gave `given` bytes so far.
    current: Option<Stream>,
    first: usize,
    span: usize,
    given: u64,
    /// Readers of pieces the current one took in, to read out.
    taken_in: usize,
    rejoin: Option<Arc<dyn Rejoin>>,
    /// The error of the current pieces' first decoding.
    first_error: Option<io::Error>,
}

impl Joined {
    /// Makes the current reader one of the current pieces and the next
    /// joined, past the bytes they gave, after their decoding failed with
    /// `e`; else the error to report.
    fn join_next(&mut self, e: io::Error) -> io::Result<()> {
        let retry = e.kind() == io::ErrorKind::InvalidData && self.span <= MAX_JOINED;
        let first_error = self.first_error.take().unwrap_or(e);
        let joined = match &self.rejoin {
            Some(rejoin) if retry => rejoin.rejoin(self.first, self.span + 1),
            _ => None,
        };
        let Some(Ok(mut joined)) = joined else {
            return Err(first_error);
        };
        let given = io::copy(&mut (&mut joined).take(self.given), &mut io::sink());
        if given.ok() != Some(self.given) {
            return Err(first_error);
        }
        self.first_error = Some(first_error);
        self.current = Some(joined);
        self.span += 1;
        self.taken_in += 1;
        Ok(())
    }

    /// The next piece's reader, after reading out the ones taken in.
    fn next_reader(&mut self) -> Option<Stream> {
        for _ in 0..std::mem::take(&mut self.taken_in) {
            // A decoding error is expected. Dropping a reader unread would
            // tell its reading thread the run was over.
            if let Some(mut taken) = self.readers.next() {
                let _ = io::copy(&mut taken, &mut io::sink());
            }
            self.next += 1;
        }
        let reader = self.readers.next()?;
        (self.first, self.span, self.given) = (self.next, 1, 0);
        self.first_error = None;
        self.next += 1;
        Some(reader)
    }
}

impl Read for Joined {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let reader = match &mut self.current {
                Some(reader) => reader,
                None => match self.next_reader() {
                    Some(reader) => self.current.insert(reader),
                    None => return Ok(0),
                },
            };
            match reader.read(buf) {
                Ok(0) if !buf.is_empty() => self.current = None,
                Ok(n) => {
                    self.given += n as u64;
                    return Ok(n);
                }
                Err(e) => self.join_next(e)?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// About 6 MiB of words that compress about threefold.
    fn text() -> Vec<u8> {
        (0..800_000u64)
            .flat_map(|i| format!("{} ", i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 44).into_bytes())
            .collect()
    }

    fn file_of(bytes: &[u8]) -> (File, Metadata) {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        let meta = file.metadata().unwrap();
        (file, meta)
    }

    /// The pieces' bytes joined, read in order on this thread.
    fn decoded(pieces: Pieces) -> Vec<u8> {
        let (streams, joiner) = pieces.into_streams();
        let mut out = Vec::new();
        joiner.join(streams).read_to_end(&mut out).unwrap();
        out
    }

    fn zstd_frames(text: &[u8], frame: usize) -> Vec<u8> {
        text.chunks(frame)
            .flat_map(|c| zstd::encode_all(c, 1).unwrap())
            .collect()
    }

    fn bzip2(text: &[u8]) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        e.write_all(text).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn zstd_files_are_cut_at_frames() {
        let text = text();
        let zst = zstd_frames(&text, 300_000);
        assert!(zst.len() as u64 > 2 * MIN_PIECE, "{} bytes", zst.len());
        let (file, meta) = file_of(&zst);
        let pieces = Pieces::of_file(Compression::Zstd, file, &meta).unwrap();
        assert!(pieces.len() >= 2, "{} pieces", pieces.len());
        assert_eq!(decoded(pieces), text);
        // One frame: one piece.
        let (file, meta) = file_of(&zstd_frames(&text, usize::MAX));
        let pieces = Pieces::of_file(Compression::Zstd, file, &meta).unwrap();
        assert_eq!(pieces.len(), 1);
        assert_eq!(decoded(pieces), text);
    }

    #[test]
    fn bzip2_files_are_cut_at_blocks() {
        let text = text();
        let bz2 = bzip2(&text);
        let (file, meta) = file_of(&bz2);
        let pieces = Pieces::of_file(Compression::Bzip2, file, &meta).unwrap();
        assert!(pieces.len() >= 10, "{} pieces", pieces.len());
        assert_eq!(decoded(pieces), text);
    }

    /// A block start found inside a block's bits (by chance, in a real
    /// file; put there here) costs a second decoding, not the output.
    #[test]
    fn a_false_block_start_is_joined_back() {
        let text = text();
        let bz2 = bzip2(&text);
        let (file, meta) = file_of(&bz2);
        let mut cuts = bzip2_blocks::scan(&file, meta.len()).unwrap().unwrap();
        for at in [5, 2] {
            let bit = (cuts[at].bit + cuts[at + 1].bit) / 2;
            cuts.insert(
                at + 1,
                bzip2_blocks::Cut {
                    bit,
                    kind: bzip2_blocks::Kind::Block,
                },
            );
        }
        let file = Arc::new(Shared::new(file, &meta));
        let got = decoded(bzip2_pieces(Blocks::new(file, cuts)));
        let first = got.iter().zip(&text).position(|(a, b)| a != b);
        assert!(
            got == text,
            "{} vs {} bytes, first difference at {first:?}",
            got.len(),
            text.len()
        );
    }
}
