//! Compressed inputs: the format a file's first bytes say it is in, and a
//! reader that decodes it.
//!
//! Formats are told by their magic bytes, never by a file's name: a
//! `.gz` that is not gzip is read as it is, and a gzip file named `.log`
//! is decoded. Every format decodes all of its members, frames or streams
//! in turn, as `gzip -d`, `zstd -d`, `bzip2 -d` and `xz -d` do, so the
//! decoded bytes of a concatenation are the concatenation of the decoded
//! bytes.
//!
//! One compressed file may be cut into pieces that decode apart, on
//! several threads at once (see `pieces`): zstd at its frames, bzip2 at
//! its blocks.
//!
//! LZ4 frames are not decoded: `lz4_flex`'s frame decoder ends its output
//! at the end of each frame and takes a frame cut at a block boundary for
//! a whole one, so a truncated file would pass unseen.
//!
//! A decoder's error names the format and the compressed byte reached
//! ("corrupt or truncated gzip data near compressed byte 12345"); the
//! caller adds the file's name. An error of the compressed source itself
//! (a failed read, a file that changed) passes through as it is.

mod bzip2_blocks;
mod pieces;
mod source;
mod zstd_frames;

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};

pub(crate) use pieces::Pieces;

/// A compression format, as told by the first bytes of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    /// Not compressed (or not in a format ember decodes): read as it is.
    None,
    /// gzip (RFC 1952), every member.
    Gzip,
    /// Zstandard, every frame.
    Zstd,
    /// bzip2, every stream.
    Bzip2,
    /// xz, every stream.
    Xz,
}

impl Compression {
    /// The bytes [`detect`](Compression::detect) needs to see to tell
    /// every format (fewer only at the end of a short input).
    pub(crate) const MAGIC_LEN: usize = 6;

    /// The format whose magic bytes `head` (the first bytes of an input)
    /// starts with, or `None`. gzip's magic is taken with its method byte
    /// (8, deflate, the only one defined), so that a binary file has a
    /// 1 in 2^24 chance, not 1 in 2^16, of passing for gzip.
    pub(crate) fn detect(head: &[u8]) -> Compression {
        const MAGIC: [(&[u8], Compression); 3] = [
            (&[0x1f, 0x8b, 0x08], Compression::Gzip),
            (&[0x28, 0xb5, 0x2f, 0xfd], Compression::Zstd),
            (&[0xfd, b'7', b'z', b'X', b'Z', 0x00], Compression::Xz),
        ];
        if let Some(&(_, format)) = MAGIC.iter().find(|(magic, _)| head.starts_with(magic)) {
            return format;
        }
        match head {
            [b'B', b'Z', b'h', b'1'..=b'9', ..] => Compression::Bzip2,
            // A zstd skippable frame (magic 0x184D2A50-5F, little-endian),
            // which `pzstd` writes ahead of each frame to say its size.
            [0x50..=0x5f, 0x2a, 0x4d, 0x18, ..] => Compression::Zstd,
            _ => Compression::None,
        }
    }

    /// The format's name, as errors print it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Compression::None => "uncompressed",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
        }
    }

    /// A reader of `source`'s bytes decoded from this format (`source`
    /// itself for [`Compression::None`]); `at` is the offset in its file
    /// of `source`'s first byte, for errors to name.
    ///
    /// # Errors
    ///
    /// The decoder's own setup failing (zstd's context cannot be made).
    pub(crate) fn decoder(
        self,
        source: impl Read + Send + 'static,
        at: u64,
    ) -> io::Result<Box<dyn Read + Send>> {
        if self == Compression::None {
            return Ok(Box::new(source));
        }
        let counted = Counted {
            inner: BufReader::with_capacity(SOURCE_BUFFER, source),
            consumed: at,
            failed: false,
        };
        let decoder = match self {
            Compression::None => unreachable!("returned above"),
            Compression::Gzip => Decoder::Gzip(flate2::bufread::MultiGzDecoder::new(counted)),
            Compression::Zstd => Decoder::Zstd(zstd::stream::read::Decoder::with_buffer(counted)?),
            Compression::Bzip2 => Decoder::Bzip2(bzip2::bufread::MultiBzDecoder::new(counted)),
            Compression::Xz => Decoder::Xz(liblzma::bufread::XzDecoder::new_multi_decoder(counted)),
        };
        Ok(Box::new(Decoding {
            decoder,
            format: self,
        }))
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes read from a compressed source at a time.
const SOURCE_BUFFER: usize = 128 << 10;

/// A buffered compressed source that counts the bytes its decoder took,
/// and remembers whether the source itself failed.
struct Counted<R> {
    inner: BufReader<R>,
    /// The offset in the file of the next byte handed to the decoder.
    consumed: u64,
    /// Whether a read of the source failed (its error is not the
    /// decoder's).
    failed: bool,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.consumed += n as u64;
                Ok(n)
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }
}

impl<R: Read> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        // Disjoint fields: the buffer borrows `inner`, the flag is apart.
        match self.inner.fill_buf() {
            Ok(buf) => Ok(buf),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
        self.consumed += n as u64;
    }
}

/// The decoders, each over a counted source.
enum Decoder<R: Read> {
    Gzip(flate2::bufread::MultiGzDecoder<Counted<R>>),
    Zstd(zstd::stream::read::Decoder<'static, Counted<R>>),
    Bzip2(bzip2::bufread::MultiBzDecoder<Counted<R>>),
    Xz(liblzma::bufread::XzDecoder<Counted<R>>),
}

impl<R: Read> Decoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoder::Gzip(d) => d.read(buf),
            Decoder::Zstd(d) => d.read(buf),
            Decoder::Bzip2(d) => d.read(buf),
            Decoder::Xz(d) => d.read(buf),
        }
    }

    fn source(&self) -> &Counted<R> {
        match self {
            Decoder::Gzip(d) => d.get_ref(),
            Decoder::Zstd(d) => d.get_ref(),
            Decoder::Bzip2(d) => d.get_ref(),
            Decoder::Xz(d) => d.get_ref(),
        }
    }
}

/// A decoder whose errors say the format and the compressed byte reached.
struct Decoding<R: Read> {
    decoder: Decoder<R>,
    format: Compression,
}

impl<R: Read> Read for Decoding<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.decoder.read(buf).map_err(|e| {
            let source = self.decoder.source();
            if source.failed {
                return e;
            }
            let why = format!(
                "corrupt or truncated {} data near compressed byte {}: {e}",
                self.format, source.consumed
            );
            io::Error::new(io::ErrorKind::InvalidData, why)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_their_magic_bytes() {
        let cases: [(&[u8], Compression); 14] = [
            (b"\x1f\x8b\x08\x00\x00\x00", Compression::Gzip),
            (b"\x28\xb5\x2f\xfd\x04\x00", Compression::Zstd),
            // Skippable frames first, as `pzstd` writes them.
            (b"\x50\x2a\x4d\x18\x04\x00", Compression::Zstd),
            (b"\x5f\x2a\x4d\x18", Compression::Zstd),
            (b"BZh91AY", Compression::Bzip2),
            (b"BZh1", Compression::Bzip2),
            (b"\xfd7zXZ\x00\x00", Compression::Xz),
            // LZ4 frames are not decoded (see the module doc).
            (b"\x04\x22\x4d\x18\x64", Compression::None),
            // Near misses: another gzip method, a bzip2 block size of 0,
            // an xz magic cut short, text.
            (b"\x1f\x8b\x07\x00", Compression::None),
            (b"BZh0", Compression::None),
            (b"\xfd7zXZ", Compression::None),
            (b"\x1f", Compression::None),
            (b"", Compression::None),
            (b"GET / HTTP/1.1", Compression::None),
        ];
        for (head, want) in cases {
            assert_eq!(Compression::detect(head), want, "{head:?}");
        }
    }

    /// A skippable frame ahead of the data (as `pzstd` writes) is told
    /// as zstd and skipped.
    #[test]
    fn a_zstd_file_may_start_with_a_skippable_frame() {
        let mut file = vec![0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3];
        file.extend(zstd::encode_all(&b"after the skippable frame"[..], 1).unwrap());
        assert_eq!(Compression::detect(&file), Compression::Zstd);
        let mut out = Vec::new();
        let mut d = Compression::Zstd
            .decoder(std::io::Cursor::new(file), 0)
            .unwrap();
        d.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"after the skippable frame");
    }

    #[test]
    fn plain_bytes_pass_through() {
        let mut out = Vec::new();
        let mut d = Compression::None.decoder(&b"abc"[..], 0).unwrap();
        d.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"abc");
    }

    /// Every member of a gzip file, and the offset of a corruption.
    #[test]
    fn gzip_members_decode_in_turn_and_corruption_names_its_offset() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let member = |text: &[u8]| {
            let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(text).unwrap();
            e.finish().unwrap()
        };
        let file = [member(b"one tw"), member(b""), member(b"o three\n")].concat();
        let mut out = Vec::new();
        let mut d = Compression::Gzip
            .decoder(std::io::Cursor::new(file.clone()), 0)
            .unwrap();
        d.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"one two three\n");
        // Garbage after the last member.
        let bad = [file, b"\x1f\x8b\x08garbage".to_vec()].concat();
        let mut d = Compression::Gzip
            .decoder(std::io::Cursor::new(bad), 0)
            .unwrap();
        let e = d.read_to_end(&mut Vec::new()).unwrap_err().to_string();
        assert!(
            e.contains("corrupt or truncated gzip data near compressed byte"),
            "{e}"
        );
    }
}
