//! Pairs in binary form: what an isolated run's channels carry for a job
//! that can write them ([`StreamJob::binary`](super::StreamJob::binary)),
//! in place of `key<TAB>value` lines, so that no value is formatted as
//! text and parsed again.
//!
//! A record is the key's [`Text`] (escaped as in a line, so records sort
//! as the lines would) and the value's [`Encode`] bytes, each after its
//! length as a LEB128 varint:
//!
//! ```text
//! len(key) key len(value) value
//! ```

use std::ops::Range;

use super::text::Text;
use crate::error::{Error, Result};
use crate::spill::{decode_len, encode_len, Encode};

/// The form of the pairs an isolated run's channels and output carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Form {
    /// `key<TAB>value` lines: the streaming contract's, what Hadoop reads.
    #[default]
    Text,
    /// [`Record`]s: the key's text and the value's [`Encode`] bytes.
    Binary,
}

/// One pair in binary form: the key's text and the value's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The key's text ([`Text::write_text`]).
    pub key: &'a [u8],
    /// The value's bytes ([`Encode::encode`]).
    pub value: &'a [u8],
}

impl<'a> Record<'a> {
    /// The record at the front of `bytes`, and the bytes after it; `None`
    /// if it is cut short.
    pub fn split_first(bytes: &'a [u8]) -> Option<(Record<'a>, &'a [u8])> {
        let mut rest = bytes;
        let mut take = || {
            let len = decode_len(&mut rest)?;
            let (taken, after) = rest.split_at_checked(len)?;
            rest = after;
            Some(taken)
        };
        let (key, value) = (take()?, take()?);
        Some((Record { key, value }, rest))
    }

    /// The key and value the record holds, or `None` if they do not read.
    pub fn decode<K: Text, V: Encode>(&self) -> Option<(K, V)> {
        let mut value = self.value;
        let pair = (K::read_text(self.key)?, V::decode(&mut value)?);
        value.is_empty().then_some(pair)
    }
}

/// Appends the record of `key` and `value` to `out`; returns where the
/// key's text lies in `out`.
pub fn push_record<K: Text, V: Encode>(out: &mut Vec<u8>, key: &K, value: &V) -> Range<usize> {
    let start = out.len();
    out.push(0);
    key.write_text(out);
    let key = start + set_len(out, start)..out.len();
    let start = out.len();
    out.push(0);
    value.encode(out);
    set_len(out, start);
    key
}

/// Writes the length of what follows the one byte at `at` into it, as a
/// varint (moving what follows if it takes more than a byte); returns
/// the varint's bytes.
fn set_len(out: &mut Vec<u8>, at: usize) -> usize {
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
        return 1;
    }
    let mut varint = Vec::with_capacity(10);
    encode_len(len, &mut varint);
    let bytes = varint.len();
    out.splice(at..at + 1, varint);
    bytes
}

/// The records of `bytes`, in order; a record cut short is an error
/// naming `name` and its offset.
pub fn records<'a>(name: &'a str, bytes: &'a [u8]) -> Records<'a> {
    Records {
        name,
        rest: bytes,
        offset: 0,
    }
}

/// An iterator over the records of a byte string ([`records`]).
#[derive(Debug)]
pub struct Records<'a> {
    name: &'a str,
    rest: &'a [u8],
    offset: u64,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let Some((record, rest)) = Record::split_first(self.rest) else {
            self.rest = &[];
            return Some(Err(Error::Malformed {
                path: self.name.into(),
                offset: self.offset,
                message: "a record cut short".into(),
            }));
        };
        self.offset += (self.rest.len() - rest.len()) as u64;
        self.rest = rest;
        Some(Ok(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Bytes;

    #[test]
    fn records_read_back_what_was_pushed() {
        let long = vec![7u64; 40]; // a value of 321 bytes: a two-byte length
        let mut out = Vec::new();
        push_record(&mut out, &Bytes::from(&b"a\tb"[..]), &3u64);
        push_record(&mut out, &Bytes::from(&b"long"[..]), &long);
        // A key of 200 bytes: its length takes two bytes too.
        let long_key = Bytes::from(&[b'k'; 200][..]);
        let start = out.len();
        let key = push_record(&mut out, &long_key, &1u8);
        assert_eq!(key.start, start + 2);
        assert_eq!(&out[key], &[b'k'; 200][..]);
        let read: Vec<Record> = records("x", &out).collect::<Result<_>>().unwrap();
        assert_eq!(read.len(), 3);
        assert_eq!(read[2].decode::<Bytes, u8>(), Some((long_key, 1)));
        assert_eq!(read[0].key, b"a\\tb");
        assert_eq!(
            read[0].decode::<Bytes, u64>(),
            Some((b"a\tb"[..].into(), 3))
        );
        assert_eq!(read[1].decode::<Bytes, Vec<u64>>().unwrap().1, long);
        assert_eq!(
            read[1].decode::<Bytes, u64>(),
            None,
            "a value with bytes left"
        );
    }

    #[test]
    fn a_record_cut_short_is_an_error_at_its_offset() {
        let mut out = Vec::new();
        push_record(&mut out, &1u32, &2u32);
        let whole = out.len();
        push_record(&mut out, &1u32, &2u32);
        for cut in whole + 1..out.len() {
            let mut read = records("channel", &out[..cut]);
            assert!(read.next().unwrap().is_ok());
            match read.next() {
                Some(Err(Error::Malformed { offset, .. })) => assert_eq!(offset, whole as u64),
                other => panic!("cut at {cut}: {other:?}"),
            }
            assert!(read.next().is_none());
        }
    }
}
