//! Sort in the streaming contract: 100-byte records (the gensort layout of
//! [`crate::sort`]) as `hexkey<TAB>hexrest` lines, sorted by the engine's
//! shuffle, written back as records by reduce.
//!
//! - **Map** reads a block of whole records from standard input
//!   ([`MapInput::Whole`]: [`crate::sort::sort_order`] samples and sorts
//!   it on all threads; an isolated run cuts a file into blocks at
//!   multiples of the record, [`Records::Fixed`]) and writes one line per
//!   record, in key order: the
//!   10-byte key as 20 lower-case hex digits, a tab, the other 90 bytes as
//!   180 hex digits.
//! - **Reduce** reads the lines sorted by key and writes each record's 100
//!   bytes, in the order read: binary output, not lines.
//!
//! Hex keeps the bytes' order under a text sort: every key is 20 digits,
//! and the digits `0-9a-f` sort as the values they stand for, so `LC_ALL=C
//! sort` and Hadoop's byte-order shuffle order the lines as the records'
//! keys (the escaping of the other jobs would not: an escaped byte is four
//! characters starting with a backslash, a plain byte one).

use std::io::{BufRead, Write};

use ember::stream::{read_lines, KeyOrder, MapInput, StreamJob, Text};
use ember::{Error, Input, Records, Result, RunOptions, Runtime, Stats};

use super::whole;
use crate::sort::{sort_order, KEY_LEN, RECORD_LEN};

/// Bytes of a record after its key.
const REST_LEN: usize = RECORD_LEN - KEY_LEN;

/// `N` bytes written as `2 N` lower-case hex digits (and read only so).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Hex<const N: usize>(pub [u8; N]);

const DIGITS: &[u8; 16] = b"0123456789abcdef";

impl<const N: usize> Text for Hex<N> {
    fn write_text(&self, out: &mut Vec<u8>) {
        for b in self.0 {
            out.push(DIGITS[usize::from(b >> 4)]);
            out.push(DIGITS[usize::from(b & 15)]);
        }
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        if text.len() != 2 * N {
            return None;
        }
        let digit = |d: u8| DIGITS.iter().position(|&x| x == d).map(|v| v as u8);
        let mut bytes = [0; N];
        for (b, pair) in bytes.iter_mut().zip(text.chunks_exact(2)) {
            *b = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        Some(Hex(bytes))
    }
}

/// A record's line: its key and the rest, in hex.
type Line = (Hex<KEY_LEN>, Hex<REST_LEN>);

fn split_record(record: &[u8]) -> Line {
    let (key, rest) = record.split_at(KEY_LEN);
    (
        Hex(key.try_into().expect("a record has a key")),
        Hex(rest.try_into().expect("a record has its rest")),
    )
}

/// Appends a record's line to `text`.
fn push_line((key, rest): &Line, text: &mut Vec<u8>) {
    key.write_text(text);
    text.push(b'\t');
    rest.write_text(text);
    text.push(b'\n');
}

/// Lines written per write call by map and combine.
const LINES_PER_WRITE: usize = 4096;

/// Writes the lines of `records` through one reused buffer.
fn write_lines(records: impl Iterator<Item = Line>, out: &mut dyn Write) -> Result<()> {
    let mut text = Vec::new();
    let mut records = records.peekable();
    while records.peek().is_some() {
        text.clear();
        for line in records.by_ref().take(LINES_PER_WRITE) {
            push_line(&line, &mut text);
        }
        out.write_all(&text).map_err(|e| Error::io("<output>", e))?;
    }
    Ok(())
}

/// Records sorted by key through an engine's shuffle.
#[derive(Debug, Clone, Copy, Default)]
pub struct SortRecords;

impl StreamJob for SortRecords {
    fn map_input(&self) -> MapInput {
        MapInput::Whole
    }

    /// Any block of whole records sorts: an isolated run maps a file in
    /// several.
    fn records(&self) -> Records {
        Records::Fixed(RECORD_LEN)
    }

    fn map(
        &self,
        runtime: &Runtime,
        input: &Input<'_>,
        opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats> {
        let data = whole(input, "100-byte records")?;
        let order = sort_order(runtime, data, opts)?;
        write_lines(order.records(data).map(split_record), out)?;
        Ok(order.stats)
    }

    /// The lines in key order (equal keys in the order read): a combiner
    /// changes nothing but the order, which the shuffle sorts anyway.
    fn combine(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        let mut lines: Vec<Line> = Vec::new();
        read_lines(name, input, KeyOrder::Any, |key, rest, _| {
            lines.push((key, rest));
            Ok(())
        })?;
        lines.sort_by_key(|(key, _)| *key);
        write_lines(lines.into_iter(), out)
    }

    fn reduce(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        read_lines(
            name,
            input,
            KeyOrder::Sorted,
            |key: Hex<KEY_LEN>, rest: Hex<REST_LEN>, _| {
                out.write_all(&key.0)
                    .and_then(|()| out.write_all(&rest.0))
                    .map_err(|e| Error::io("<output>", e))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_reads_back_and_keeps_the_bytes_order() {
        let keys = [
            [0u8, 0],
            [0, 1],
            [0, 0xff],
            [0x0a, 0],
            [0x10, 0],
            [0xff, 0xff],
        ];
        let texts: Vec<Vec<u8>> = keys
            .iter()
            .map(|k| {
                let mut t = Vec::new();
                Hex(*k).write_text(&mut t);
                t
            })
            .collect();
        assert_eq!(texts[2], b"00ff");
        assert!(texts.is_sorted());
        for (k, t) in keys.iter().zip(&texts) {
            assert_eq!(Hex::read_text(t), Some(Hex(*k)));
        }
        for bad in [&b"00F"[..], b"00FF", b"0g00", b"00ff00"] {
            assert_eq!(Hex::<2>::read_text(bad), None, "{bad:?}");
        }
    }
}
