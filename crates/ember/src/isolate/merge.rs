//! The reduce's input: the workers' outputs, each sorted by key text,
//! merged into one stream sorted by key text, read without copying.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufRead, Read};

/// A run's next line: its key, the run, the whole line (ordered by key,
/// then run).
type Head<'a> = (&'a [u8], usize, &'a [u8]);

/// `key<TAB>value` lines of several sorted runs, in key order (equal keys
/// in run order), as a [`BufRead`] that hands out one line at a time.
pub(super) struct Lines<'a> {
    /// Each run's lines not yet handed out, after its head.
    rest: Vec<&'a [u8]>,
    /// Each run's next line, by (key, run).
    heads: BinaryHeap<Reverse<Head<'a>>>,
    /// What is left of the line being read.
    line: &'a [u8],
}

impl<'a> Lines<'a> {
    pub(super) fn new(runs: Vec<&'a [u8]>) -> Self {
        let mut lines = Lines {
            rest: runs,
            heads: BinaryHeap::new(),
            line: &[],
        };
        for run in 0..lines.rest.len() {
            lines.advance(run);
        }
        lines
    }

    /// Moves run `run`'s next line to the heads.
    fn advance(&mut self, run: usize) {
        let rest = self.rest[run];
        if rest.is_empty() {
            return;
        }
        let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
        let (line, after) = rest.split_at(end);
        self.rest[run] = after;
        let key_end = memchr::memchr2(b'\t', b'\n', line).unwrap_or(line.len());
        self.heads.push(Reverse((&line[..key_end], run, line)));
    }
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
            if let Some(Reverse((_, run, line))) = self.heads.pop() {
                self.line = line;
                self.advance(run);
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

    #[test]
    fn runs_merge_by_key_with_equal_keys_in_run_order() {
        let runs: Vec<&[u8]> = vec![b"a\t1\nc\t1\n", b"", b"a\t2\nb\t2\nc\t2", b"ab\t3\n"];
        let mut merged = String::new();
        Lines::new(runs).read_to_string(&mut merged).unwrap();
        assert_eq!(merged, "a\t1\na\t2\nab\t3\nb\t2\nc\t1\nc\t2");
    }
}
