//! Where a zstd file's frames start, read from their headers (RFC 8878,
//! section 3.1) with positioned reads, without decoding: a frame's header
//! gives the sizes of its fields, and each block's header the size of
//! the block.
//!
//! A file of several frames (`pzstd`'s, or `.zst` files concatenated)
//! decodes frame by frame apart; a skippable frame decodes to nothing and
//! stays with the frame before it.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// A zstd frame's magic number.
const FRAME: u32 = 0xFD2F_B528;
/// A skippable frame's magic numbers, with the low four bits cleared.
const SKIPPABLE: u32 = 0x184D_2A50;

/// The offsets where `file`'s zstd frames start (the first is 0), or
/// `None` if its first `len` bytes are not whole frames: corrupt, cut
/// short or followed by other bytes (its one decoder then says where).
///
/// # Errors
///
/// A read of the file failing.
pub(super) fn frame_starts(file: &File, len: u64) -> io::Result<Option<Vec<u64>>> {
    let mut starts = vec![0];
    let mut at = 0;
    while at < len {
        let Some((next, skippable)) = frame_end(file, at, len)? else {
            return Ok(None);
        };
        if at > 0 && !skippable {
            starts.push(at);
        }
        at = next;
    }
    Ok((at == len).then_some(starts))
}

/// The offset just past the frame (zstd or skippable) that starts at
/// `at`, and whether it is skippable; `None` if no whole frame starts
/// there.
fn frame_end(file: &File, at: u64, len: u64) -> io::Result<Option<(u64, bool)>> {
    let Some(magic) = read_u32(file, at, len)? else {
        return Ok(None);
    };
    if magic & !0xF == SKIPPABLE {
        let end = read_u32(file, at + 4, len)?.map(|size| at + 8 + u64::from(size));
        return Ok(end.map(|end| (end, true)));
    }
    if magic != FRAME {
        return Ok(None);
    }
    let Some(descriptor) = read_bytes::<1>(file, at + 4, len)? else {
        return Ok(None);
    };
    let Some(header) = header_len(descriptor[0]) else {
        return Ok(None);
    };
    let mut at = at + 4 + header;
    loop {
        let Some(block) = read_bytes::<3>(file, at, len)? else {
            return Ok(None);
        };
        let block = u32::from_le_bytes([block[0], block[1], block[2], 0]);
        let size = u64::from(block >> 3);
        at += 3 + match (block >> 1) & 3 {
            0 | 2 => size, // raw or compressed: `size` bytes follow
            1 => 1,        // RLE: one byte, repeated `size` times
            _ => return Ok(None),
        };
        if block & 1 == 1 {
            break;
        }
    }
    let checksum = descriptor[0] & 0b100 != 0;
    let end = at + if checksum { 4 } else { 0 };
    Ok((end <= len).then_some((end, false)))
}

/// The length of a frame's header after its magic number, from its
/// descriptor byte; `None` if the reserved bit is set.
fn header_len(descriptor: u8) -> Option<u64> {
    if descriptor & 0b1000 != 0 {
        return None;
    }
    let single_segment = descriptor & 0b10_0000 != 0;
    let window = if single_segment { 0 } else { 1 };
    let dictionary = [0, 1, 2, 4][usize::from(descriptor & 0b11)];
    let content_size = match descriptor >> 6 {
        0 => u64::from(single_segment),
        flag => [0, 2, 4, 8][usize::from(flag)],
    };
    Some(1 + window + dictionary + content_size)
}

/// The little-endian `u32` at `at`, if the first `len` bytes hold it.
fn read_u32(file: &File, at: u64, len: u64) -> io::Result<Option<u32>> {
    Ok(read_bytes::<4>(file, at, len)?.map(u32::from_le_bytes))
}

/// The `N` bytes at `at`, if the first `len` bytes hold them.
fn read_bytes<const N: usize>(file: &File, at: u64, len: u64) -> io::Result<Option<[u8; N]>> {
    if at + N as u64 > len {
        return Ok(None);
    }
    let mut bytes = [0; N];
    match file.read_exact_at(&mut bytes, at) {
        Ok(()) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn starts_of(bytes: &[u8]) -> Option<Vec<u64>> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        frame_starts(&file, bytes.len() as u64).unwrap()
    }

    #[test]
    fn frames_are_found_from_their_headers() {
        let text: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let a = zstd::encode_all(&text[..], 3).unwrap();
        let b = zstd::encode_all(&b""[..], 1).unwrap();
        let mut with_checksum = zstd::Encoder::new(Vec::new(), 1).unwrap();
        with_checksum.include_checksum(true).unwrap();
        with_checksum.write_all(&text[..1000]).unwrap();
        let c = with_checksum.finish().unwrap();
        let skippable = [0x5a, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 9, 9];
        let file = [&a[..], &skippable, &b, &c].concat();
        let (b_at, c_at) = (
            a.len() + skippable.len(),
            a.len() + skippable.len() + b.len(),
        );
        assert_eq!(starts_of(&file), Some(vec![0, b_at as u64, c_at as u64]));
        // Cut short, or followed by other bytes: not whole frames.
        assert_eq!(starts_of(&file[..file.len() - 1]), None);
        assert_eq!(starts_of(&[&file[..], b"x"].concat()), None);
        assert_eq!(starts_of(b"plain text"), None);
    }
}
