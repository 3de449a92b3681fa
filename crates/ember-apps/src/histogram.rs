//! Histogram: how many pixels of a 24-bit BMP image have each value in each
//! colour channel (Phoenix's `histogram`).
//!
//! **Keys**: 768 of them, `channel * 256 + value`, with channel 0 red, 1
//! green, 2 blue (BMP stores a pixel as blue, green, red). Row padding is
//! not counted.
//!
//! **Job**: splits are whole rows (`Records::Fixed(row stride)` over the
//! pixel array). `map` counts a whole split into local tables (a local
//! combiner: no per-pixel emit) and emits the non-zero counts, at most 768
//! pairs per split, summed by [`Sum`].

use std::io::{self, Write};

use ember::{
    Emit, Error, Input, Job, KeyHint, MapResult, Records, Result, RunOptions, Runtime, Split,
    Stats, Sum,
};
use rand::RngCore;

use crate::blocks;

/// Number of keys: 256 values in each of 3 channels.
pub const KEYS: usize = 768;

/// Channel names, by channel index (the key's high part).
pub const CHANNELS: [&str; 3] = ["red", "green", "blue"];

/// Size of the headers [`write_bmp`] writes: BITMAPFILEHEADER (14 bytes)
/// and BITMAPINFOHEADER (40 bytes).
pub const HEADER_BYTES: usize = 54;

/// One count per key (`channel * 256 + value`).
pub type Counts = [u64; KEYS];

/// The layout of a 24-bit BMP's pixel array, from its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bmp {
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// True when rows are stored top row first (negative height in the
    /// header); the counts do not depend on it.
    pub top_down: bool,
    /// Byte offset of the pixel array in the file.
    pub offset: usize,
    /// Bytes per stored row: `3 * width` rounded up to a multiple of 4.
    pub stride: usize,
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn invalid(msg: String) -> Error {
    Error::InvalidInput(msg)
}

impl Bmp {
    /// Reads the headers of a BMP file: it must be an uncompressed 24-bit
    /// image with a BITMAPINFOHEADER (or a later, larger info header) and
    /// hold every row of its pixel array (the last row's padding may be
    /// missing).
    pub fn parse(file: &[u8]) -> Result<Bmp> {
        if file.len() < 2 || &file[..2] != b"BM" {
            return Err(invalid(
                "not a BMP file: it does not start with \"BM\"".into(),
            ));
        }
        if file.len() < HEADER_BYTES {
            return Err(invalid(format!(
                "truncated BMP: {} bytes, its headers alone need {HEADER_BYTES}",
                file.len()
            )));
        }
        let offset = u32_at(file, 10) as usize;
        let info = u32_at(file, 14);
        if info < 40 {
            return Err(invalid(format!(
                "unsupported BMP info header of {info} bytes (need a BITMAPINFOHEADER, 40 bytes or more)"
            )));
        }
        let width = u32_at(file, 18) as i32;
        let height = u32_at(file, 22) as i32;
        let bits = u16_at(file, 28);
        let compression = u32_at(file, 30);
        if bits != 24 {
            return Err(invalid(format!(
                "unsupported BMP bit depth {bits} (only 24-bit images are supported)"
            )));
        }
        if compression != 0 {
            return Err(invalid(format!(
                "unsupported BMP compression {compression} (only uncompressed BI_RGB, 0, is supported)"
            )));
        }
        if width <= 0 || height == 0 {
            return Err(invalid(format!(
                "invalid BMP size {width} x {height} pixels"
            )));
        }
        let header_end = 14 + info as usize;
        if offset < header_end {
            return Err(invalid(format!(
                "invalid BMP: pixel data offset {offset} is inside the {header_end} bytes of headers"
            )));
        }
        // The claimed size, in checked u64 arithmetic (the header's fields
        // are untrusted), is held against the file's real length before
        // anything is sized by it.
        let (w, h) = (u64::from(width as u32), u64::from(height.unsigned_abs()));
        let stride = (w * 3).div_ceil(4) * 4;
        let need = (h - 1)
            .checked_mul(stride)
            .and_then(|n| n.checked_add(w * 3))
            .and_then(|n| n.checked_add(offset as u64));
        if need.is_none_or(|need| need > file.len() as u64) {
            let need = need.map_or_else(|| "more than 2^64".into(), |n| n.to_string());
            return Err(invalid(format!(
                "truncated BMP: {w} x {h} pixels at offset {offset} need {need} bytes, the file has {}",
                file.len()
            )));
        }
        let bmp = Bmp {
            width: w as u32,
            height: h as u32,
            top_down: height < 0,
            offset,
            stride: stride as usize,
        };
        Ok(bmp)
    }

    /// Bytes of pixels in a row (without padding).
    pub fn row_bytes(&self) -> usize {
        self.width as usize * 3
    }

    /// Bytes of the pixel array: every row padded but the last.
    pub fn pixels_len(&self) -> usize {
        (self.height as usize - 1) * self.stride + self.row_bytes()
    }

    /// The pixel array of `file` (whose headers this is).
    pub fn pixels<'a>(&self, file: &'a [u8]) -> &'a [u8] {
        &file[self.offset..self.offset + self.pixels_len()]
    }

    /// Counts the pixels of `rows`: whole rows of this image, the last one
    /// possibly without its padding. A last row cut short (a truncated
    /// stream: [`run_pixels`] reports it) is not counted.
    fn count_rows(&self, rows: &[u8], tally: &mut Tally) {
        for row in rows.chunks(self.stride) {
            if let Some(pixels) = row.get(..self.row_bytes()) {
                tally.add(pixels);
            }
        }
    }
}

/// A split's counts: two sets of three 256-entry `u32` tables (blue, green,
/// red, as stored), even pixels in one set and odd pixels in the other, so
/// that equal neighbouring values do not wait on each other's increment.
/// Flushed into `u64` totals before a table could overflow.
struct Tally {
    tables: [[u32; 256]; 6],
    pending: usize,
    totals: Counts,
}

/// Pixel bytes counted into the `u32` tables between flushes: a multiple
/// of 6 (two pixels), so pieces keep the even/odd alternation, and small
/// enough that no table entry can pass `u32::MAX`.
const FLUSH_BYTES: usize = 6 << 27;

impl Tally {
    fn new() -> Self {
        Tally {
            tables: [[0; 256]; 6],
            pending: 0,
            totals: [0; KEYS],
        }
    }

    /// Counts pixels (`pixels.len()` is a multiple of 3).
    fn add(&mut self, pixels: &[u8]) {
        for piece in pixels.chunks(FLUSH_BYTES) {
            if self.pending + piece.len() > FLUSH_BYTES {
                self.flush();
            }
            self.pending += piece.len();
            let [b0, g0, r0, b1, g1, r1] = &mut self.tables;
            let mut pairs = piece.chunks_exact(6);
            for p in &mut pairs {
                b0[p[0] as usize] += 1;
                g0[p[1] as usize] += 1;
                r0[p[2] as usize] += 1;
                b1[p[3] as usize] += 1;
                g1[p[4] as usize] += 1;
                r1[p[5] as usize] += 1;
            }
            if let [b, g, r] = *pairs.remainder() {
                b0[b as usize] += 1;
                g0[g as usize] += 1;
                r0[r as usize] += 1;
            }
        }
    }

    fn flush(&mut self) {
        // Stored order blue, green, red; key channels red 0, green 1, blue 2.
        for (stored, table) in self.tables.iter_mut().enumerate() {
            let channel = 2 - stored % 3;
            for (v, n) in table.iter_mut().enumerate() {
                self.totals[channel * 256 + v] += u64::from(*n);
                *n = 0;
            }
        }
        self.pending = 0;
    }

    fn finish(mut self) -> Counts {
        self.flush();
        self.totals
    }
}

/// The histogram job over the pixel array of one image.
#[derive(Debug, Clone, Copy)]
pub struct Histogram {
    bmp: Bmp,
}

impl Histogram {
    /// The job for an image with these headers; its input is
    /// [`Bmp::pixels`].
    pub fn new(bmp: Bmp) -> Self {
        Histogram { bmp }
    }
}

impl Job for Histogram {
    type Key = u16;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Fixed(self.bmp.stride)
    }

    fn keys(&self) -> KeyHint {
        KeyHint::Dense(KEYS)
    }

    fn map<E: Emit<u16, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let mut tally = Tally::new();
        self.bmp.count_rows(split.data, &mut tally);
        for (key, &n) in tally.finish().iter().enumerate() {
            if n > 0 {
                emit.emit(key as u16, n);
            }
        }
        Ok(())
    }

    fn reduce(&self, _key: &u16, total: u64) -> u64 {
        total
    }
    /// Counts are sums: partial counts fold in any order.
    fn pipelinable(&self) -> bool {
        true
    }
}

/// Runs the histogram job on a whole BMP file's bytes: every key's count
/// and the run's stats.
pub fn run(rt: &Runtime, file: &[u8], opts: &RunOptions) -> Result<(Counts, Stats)> {
    let bmp = Bmp::parse(file)?;
    run_pixels(rt, bmp, &Input::bytes(bmp.pixels(file)), opts)
}

/// Runs the histogram job on the pixel array of an image with headers
/// `bmp` (parsed beforehand), given as any [`Input`]: for example the
/// array streamed in chunks from a reader placed at [`Bmp::offset`]. A
/// pixel array shorter than the headers say is an error, also when the
/// shortfall shows only once a stream is read.
pub fn run_pixels(
    rt: &Runtime,
    bmp: Bmp,
    pixels: &Input<'_>,
    opts: &RunOptions,
) -> Result<(Counts, Stats)> {
    let out = rt.run_with(&Histogram::new(bmp), pixels, opts)?;
    let need = bmp.pixels_len() as u64;
    if out.stats.input_bytes != need {
        return Err(invalid(format!(
            "the pixel array of a {} x {} BMP is {need} bytes, the input has {}",
            bmp.width, bmp.height, out.stats.input_bytes
        )));
    }
    let mut counts = [0; KEYS];
    for (key, n) in out.pairs {
        counts[key as usize] = n;
    }
    Ok((counts, out.stats))
}

/// The plain sequential histogram of a BMP file, the correctness oracle and
/// benchmark baseline.
pub fn sequential(file: &[u8]) -> Result<Counts> {
    let bmp = Bmp::parse(file)?;
    let mut tally = Tally::new();
    bmp.count_rows(bmp.pixels(file), &mut tally);
    Ok(tally.finish())
}

/// What image to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BmpSpec {
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Random seed: the same spec gives the same bytes.
    pub seed: u64,
}

impl Default for BmpSpec {
    /// The WORKLOADS.md shape: 10240 x 13654 pixels (about 400 MiB).
    fn default() -> Self {
        BmpSpec {
            width: 10240,
            height: 13654,
            seed: 7,
        }
    }
}

impl BmpSpec {
    /// Bytes per stored row.
    fn stride(&self) -> u64 {
        (u64::from(self.width) * 3).div_ceil(4) * 4
    }

    /// Size of the file.
    pub fn file_len(&self) -> u64 {
        HEADER_BYTES as u64 + self.stride() * u64::from(self.height)
    }

    /// The 54 bytes of headers of a bottom-up 24-bit BMP of this size.
    fn header(&self) -> io::Result<Vec<u8>> {
        let bad = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
        if self.width == 0 || self.height == 0 {
            return Err(bad("image width and height must be at least 1".into()));
        }
        if self.width > i32::MAX as u32 || self.height > i32::MAX as u32 {
            return Err(bad("image width and height must be below 2^31".into()));
        }
        let len = u32::try_from(self.file_len()).map_err(|_| {
            bad(format!(
                "a {} x {} BMP would be {} bytes, over the format's 4 GiB limit",
                self.width,
                self.height,
                self.file_len()
            ))
        })?;
        let mut h = Vec::with_capacity(HEADER_BYTES);
        h.extend_from_slice(b"BM");
        h.extend_from_slice(&len.to_le_bytes());
        h.extend_from_slice(&[0; 4]); // reserved
        h.extend_from_slice(&(HEADER_BYTES as u32).to_le_bytes());
        h.extend_from_slice(&40u32.to_le_bytes());
        h.extend_from_slice(&self.width.to_le_bytes());
        h.extend_from_slice(&self.height.to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes()); // planes
        h.extend_from_slice(&24u16.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes()); // BI_RGB
        h.extend_from_slice(&((len - HEADER_BYTES as u32).to_le_bytes()));
        h.extend_from_slice(&2835u32.to_le_bytes()); // 72 dpi
        h.extend_from_slice(&2835u32.to_le_bytes());
        h.extend_from_slice(&[0; 8]); // palette sizes
        Ok(h)
    }
}

/// Writes a BMP of pseudo-random pixels (zero row padding) to `out`,
/// calling `progress(bytes_written)` as it goes. Reproducible from the seed.
pub fn write_bmp(
    spec: &BmpSpec,
    out: &mut impl Write,
    mut progress: impl FnMut(u64),
) -> io::Result<()> {
    out.write_all(&spec.header()?)?;
    let stride = spec.stride();
    let row_bytes = spec.width as usize * 3;
    let rows_per_block = (1 << 20) / stride + 1;
    blocks::write_blocks(
        stride * u64::from(spec.height),
        rows_per_block * stride,
        out,
        |n| progress(n + HEADER_BYTES as u64),
        |index, len| {
            let mut rng = blocks::rng(spec.seed, index);
            let mut data = vec![0; len];
            for row in data.chunks_mut(stride as usize) {
                rng.fill_bytes(&mut row[..row_bytes]);
            }
            data
        },
    )
}

/// A generated BMP in memory (tests and small inputs).
pub fn bmp(spec: &BmpSpec) -> io::Result<Vec<u8>> {
    let mut v = Vec::with_capacity(spec.file_len() as usize);
    write_bmp(spec, &mut v, |_| {})?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The obvious per-byte count, to check the tally's table juggling.
    fn naive(pixels: &[u8], width: usize, stride: usize) -> Counts {
        let mut c = [0; KEYS];
        for row in pixels.chunks(stride) {
            for p in row[..width * 3].chunks_exact(3) {
                c[512 + p[0] as usize] += 1;
                c[256 + p[1] as usize] += 1;
                c[p[2] as usize] += 1;
            }
        }
        c
    }

    #[test]
    fn hand_made_image_counts_exactly_and_skips_padding() {
        // 2 x 2 pixels: 6 bytes a row, padded to 8 with 0xEE bytes.
        let spec = BmpSpec {
            width: 2,
            height: 2,
            seed: 0,
        };
        let mut file = spec.header().unwrap();
        file.extend_from_slice(&[1, 2, 3, 1, 5, 6, 0xEE, 0xEE]);
        file.extend_from_slice(&[9, 2, 3, 1, 2, 3, 0xEE, 0xEE]);
        let c = sequential(&file).unwrap();
        let mut want = [0; KEYS];
        for (k, n) in [
            (512 + 1, 3),
            (512 + 9, 1),
            (256 + 2, 3),
            (256 + 5, 1),
            (3, 3),
            (6, 1),
        ] {
            want[k] = n;
        }
        assert_eq!(c, want);
    }

    #[test]
    fn tally_matches_the_obvious_count() {
        for (width, height) in [(1, 1), (3, 5), (7, 3), (64, 9), (5, 1)] {
            let spec = BmpSpec {
                width,
                height,
                seed: u64::from(width),
            };
            let file = bmp(&spec).unwrap();
            let b = Bmp::parse(&file).unwrap();
            assert_eq!(
                sequential(&file).unwrap(),
                naive(b.pixels(&file), width as usize, b.stride),
                "{width} x {height}"
            );
        }
    }

    #[test]
    fn generator_is_reproducible_and_sized() {
        let spec = BmpSpec {
            width: 333,
            height: 4000,
            seed: 3,
        };
        let a = bmp(&spec).unwrap();
        assert_eq!(a.len() as u64, spec.file_len());
        assert_eq!(a, bmp(&spec).unwrap());
        assert_ne!(a, bmp(&BmpSpec { seed: 4, ..spec }).unwrap());
        let b = Bmp::parse(&a).unwrap();
        assert_eq!((b.width, b.height, b.top_down), (333, 4000, false));
        assert_eq!((b.offset, b.stride), (54, 1000));
        // Padding is zero.
        assert!(a[54..].chunks(1000).all(|row| row[999] == 0));
    }

    #[test]
    fn checksum_is_pinned() {
        let spec = BmpSpec {
            width: 101,
            height: 37,
            seed: 7,
        };
        assert_eq!(
            blocks::checksum(&bmp(&spec).unwrap()),
            776_400_157_022_209_987
        );
    }
}
