//! The reduce's input: the workers' outputs, each sorted by key text,
//! merged into one stream sorted by key text, read without copying.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufRead, Read};

use super::pairs;
use crate::error::{Error, Result};
use crate::stream::{Form, Record};

/// A run's next pair: its key, the run, the whole pair (ordered by key,
/// then run).
type Head<'a> = (&'a [u8], usize, &'a [u8]);

/// The pairs of several runs sorted by key text, in key order (equal keys
/// in run order), one whole pair at a time.
pub(super) struct Merged<'a> {
    form: Form,
    /// Each run's pairs not yet handed out, after its head.
    rest: Vec<&'a [u8]>,
    /// Each run's next pair, by (key, run).
    heads: BinaryHeap<Reverse<Head<'a>>>,
}

impl<'a> Merged<'a> {
    pub(super) fn new(form: Form, runs: Vec<&'a [u8]>) -> Self {
        let mut merged = Merged {
            form,
            rest: runs,
            heads: BinaryHeap::new(),
        };
        for run in 0..merged.rest.len() {
            merged.advance(run);
        }
        merged
    }

    /// Moves run `run`'s next pair to the heads (a record cut short: the
    /// rest of the run, which does not read as a record).
    fn advance(&mut self, run: usize) {
        let rest = self.rest[run];
        if rest.is_empty() {
            return;
        }
        let pair = pairs::first(self.form, rest).unwrap_or(pairs::Pair {
            key: &[],
            len: rest.len(),
        });
        let (whole, after) = rest.split_at(pair.len);
        self.rest[run] = after;
        self.heads.push(Reverse((pair.key, run, whole)));
    }

    /// The merge of lines as one text.
    pub(super) fn lines(self) -> Lines<'a> {
        Lines {
            merged: self,
            line: &[],
        }
    }

    /// The merge of records, each read (a record cut short is an error).
    pub(super) fn records(self) -> impl Iterator<Item = Result<Record<'a>>> {
        self.map(|bytes| match Record::split_first(bytes) {
            Some((record, [])) => Ok(record),
            _ => Err(Error::InvalidInput(
                "a map channel's record cut short".into(),
            )),
        })
    }
}

impl<'a> Iterator for Merged<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let Reverse((_, run, whole)) = self.heads.pop()?;
        self.advance(run);
        Some(whole)
    }
}

/// `key<TAB>value` lines of several sorted runs, in key order, as a
/// [`BufRead`] that hands out one line at a time.
pub(super) struct Lines<'a> {
    merged: Merged<'a>,
    /// What is left of the line being read.
    line: &'a [u8],
}

impl Read for Lines<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let data = self.fill_buf()?;
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Lines<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.line.is_empty() {
            if let Some(line) = self.merged.next() {
                self.line = line;
            }
        }
        Ok(self.line)
    }

    fn consume(&mut self, n: usize) {
        self.line = &self.line[n..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Bytes;

    #[test]
    fn runs_merge_by_key_with_equal_keys_in_run_order() {
        let runs: Vec<&[u8]> = vec![b"a\t1\nc\t1\n", b"", b"a\t2\nb\t2\nc\t2", b"ab\t3\n"];
        let mut merged = String::new();
        let mut lines = Merged::new(Form::Text, runs).lines();
        lines.read_to_string(&mut merged).unwrap();
        assert_eq!(merged, "a\t1\na\t2\nab\t3\nb\t2\nc\t1\nc\t2");
    }

    #[test]
    fn records_merge_by_key_with_equal_keys_in_run_order() {
        let run = |pairs: &[(&str, u32)]| {
            let mut bytes = Vec::new();
            for (key, value) in pairs {
                crate::stream::push_record(&mut bytes, &Bytes::from(key.as_bytes()), value);
            }
            bytes
        };
        let runs = [
            run(&[("a", 1), ("c", 1)]),
            run(&[]),
            run(&[("a", 2), ("b", 2)]),
        ];
        let merged = Merged::new(Form::Binary, runs.iter().map(|r| &r[..]).collect());
        let pairs: Vec<(Bytes, u32)> = merged
            .records()
            .map(|r| r.unwrap().decode().unwrap())
            .collect();
        let want =
            [("a", 1), ("a", 2), ("b", 2), ("c", 1)].map(|(k, v)| (Bytes::from(k.as_bytes()), v));
        assert_eq!(pairs, want);
        let mut cut = runs[0].clone();
        cut.pop();
        let mut merged = Merged::new(Form::Binary, vec![&cut[..]]).records();
        assert!(merged.next().unwrap().is_ok());
        assert!(merged.next().unwrap().is_err());
    }
}
