//! The counting limit of word count: every word of the text counted in an
//! open-addressing table of its thread's own, and nothing else: no key
//! kept past its table, no join of the threads' tables, no order, no
//! output. It is the per-word work of word count as a plain loop does it:
//!
//! - the words are found by word count's own tokenizer
//!   ([`for_each_word_range`]: 64 bytes at a time, from masks of the
//!   block's letters, AVX2 where the CPU has it);
//! - a word of up to 16 bytes is two little-endian `u64` lanes read
//!   straight from the text, lower-cased by setting bit 5 of every byte
//!   (every byte is a letter) and cut to its length; a longer word is
//!   counted under its length and a hash of its bytes (rare in text, and
//!   enough for a limit: the words found are checked, not the counts);
//! - one 128-bit multiply hashes the lanes; the word's slot is prefetched
//!   and the word counted [`AHEAD`] words later, so the table's cache
//!   misses overlap;
//! - slots of 32 bytes, aligned so that none straddles two cache lines, in
//!   a table at most 70% full, advised to use huge pages.

use std::path::PathBuf;

use anyhow::ensure;
use ember::Input;
use ember_apps::wordcount::{for_each_word_range, is_separator};

use super::limit_rows;
use crate::harness::Contender;

/// Words between hashing a word (and prefetching its slot) and counting it.
const AHEAD: usize = 32;

/// The counting limit of the text `files`: [`count`] of fresh maps of
/// them into tables sized for `distinct` words, checked against `want`
/// words in all.
pub(crate) fn limit(
    files: &[PathBuf],
    threads: usize,
    want: u64,
    distinct: u64,
) -> Vec<Contender<'_>> {
    limit_rows("counted in per-thread tables", threads, move |n| {
        let input = Input::files(files)?;
        let words: u64 = (0..input.parts())
            .map(|p| count(input.part_bytes(p), n, distinct as usize))
            .sum();
        ensure!(words == want, "the count found {words} words, not {want}");
        Ok(())
    })
}

/// One word's count: the word's lanes (`[0, 0]` for an empty slot: a word
/// has a letter).
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    lanes: [u64; 2],
    count: u64,
}

/// One thread's counts.
struct Table {
    slots: Vec<Slot>,
    mask: usize,
}

impl Table {
    /// A table at most 70% full with `keys` words.
    fn new(keys: usize) -> Self {
        let len = (keys * 10 / 7 + 1).next_power_of_two();
        let slots = vec![Slot::default(); len];
        advise_huge_pages(&slots);
        Table {
            slots,
            mask: len - 1,
        }
    }

    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        let slot = self.slots.as_ptr().wrapping_add(hash as usize & self.mask);
        ember::plumbing::prefetch(slot);
    }

    #[inline(always)]
    fn add(&mut self, (lanes, hash): ([u64; 2], u64)) {
        let mut i = hash as usize & self.mask;
        loop {
            let slot = &mut self.slots[i];
            if slot.lanes == lanes {
                slot.count += 1;
                return;
            }
            if slot.lanes == [0, 0] {
                *slot = Slot { lanes, count: 1 };
                return;
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// Counts every word of `data` on `threads` threads, each into a table of
/// its own with room for `distinct` words, and returns how many words
/// there are. Each thread takes a piece of `data` cut between words.
pub(crate) fn count(data: &[u8], threads: usize, distinct: usize) -> u64 {
    let cuts = cuts(data, threads.max(1));
    std::thread::scope(|s| {
        let pieces: Vec<_> = cuts
            .windows(2)
            .map(|w| s.spawn(move || count_piece(data, w[0], w[1], distinct)))
            .collect();
        pieces
            .into_iter()
            .map(|h| h.join().expect("a counting thread panicked"))
            .sum()
    })
}

/// `pieces + 1` offsets from 0 to `data.len()`, ascending, each but the
/// ends at a separator (so no word is cut).
fn cuts(data: &[u8], pieces: usize) -> Vec<usize> {
    let mut cuts = vec![0];
    for i in 1..pieces {
        let from = (data.len() * i / pieces).max(cuts[i - 1]);
        let at = data[from..].iter().position(|&b| is_separator(b));
        cuts.push(at.map_or(data.len(), |at| from + at));
    }
    cuts.push(data.len());
    cuts
}

/// Counts the words of `data[from..to]` into a table of its own; returns
/// how many there are.
fn count_piece(data: &[u8], from: usize, to: usize, distinct: usize) -> u64 {
    let mut table = Table::new(distinct);
    let mut ring = [([0u64; 2], 0u64); AHEAD];
    let mut n = 0usize;
    for_each_word_range(&data[from..to], |start, end| {
        let word = lanes(data, from + start, from + end);
        table.prefetch(word.1);
        let old = std::mem::replace(&mut ring[n % AHEAD], word);
        if n >= AHEAD {
            table.add(old);
        }
        n += 1;
    });
    for i in n.saturating_sub(AHEAD)..n {
        table.add(ring[i % AHEAD]);
    }
    n as u64
}

/// The lanes and hash of the word `data[start..end]`.
#[inline(always)]
fn lanes(data: &[u8], start: usize, end: usize) -> ([u64; 2], u64) {
    let n = end - start;
    let lanes = if n <= 16 {
        let bytes: [u8; 16] = match data[start..].first_chunk() {
            Some(b) => *b,
            None => padded(&data[start..end]),
        };
        let [a, b] = [0, 8].map(|i| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8")));
        let lower = 0x2020_2020_2020_2020;
        let keep_a = u64::MAX >> (64 - 8 * n.min(8));
        let keep_b = if n > 8 { u64::MAX >> (128 - 8 * n) } else { 0 };
        [(a | lower) & keep_a, (b | lower) & keep_b]
    } else {
        let h = data[start..end]
            .iter()
            .fold(0u64, |h, &b| fold_mul(h ^ u64::from(b | 0x20), K1));
        [h | 1, n as u64 | 1 << 63]
    };
    (lanes, fold_mul(lanes[0] ^ K0, lanes[1] ^ K1))
}

/// A word at the end of the data, where 16 bytes cannot be read, padded.
#[cold]
fn padded(word: &[u8]) -> [u8; 16] {
    let mut buf = [0u8; 16];
    buf[..word.len()].copy_from_slice(word);
    buf
}

const K0: u64 = 0x243f_6a88_85a3_08d3;
const K1: u64 = 0x1319_8a2e_0370_7344;

/// The two halves of the 128-bit product, xor-ed.
#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

/// Asks the kernel to back the table with transparent huge pages.
fn advise_huge_pages(slots: &[Slot]) {
    const PAGE: usize = 4096;
    let start = slots.as_ptr() as usize;
    let end = start + std::mem::size_of_val(slots);
    let aligned = start.next_multiple_of(PAGE);
    if end > aligned + PAGE {
        // SAFETY: the range lies inside the table's allocation, which is
        // ours; MADV_HUGEPAGE changes how the kernel backs the pages, never
        // their contents. Failure is harmless.
        unsafe {
            libc::madvise(
                aligned as *mut libc::c_void,
                (end - aligned) / PAGE * PAGE,
                libc::MADV_HUGEPAGE,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_word_on_any_thread_count() {
        let text = b"The cat, the CAT and the hat; extraordinarilylongwords too. x".repeat(300);
        let words = super::super::count_words(&text, 1);
        for threads in [1, 2, 3] {
            assert_eq!(count(&text, threads, 16), words, "{threads}");
        }
    }

    #[test]
    fn lanes_lower_case_and_cut_every_short_word() {
        let text = b"  AbCdEfGhIjKlMnOpQ ";
        for n in 1..=16 {
            let (want, _) = lanes(&text.to_ascii_lowercase(), 2, 2 + n);
            let (got, _) = lanes(text, 2, 2 + n);
            assert_eq!(got, want, "{n}");
            let mut back = [0u8; 16];
            back[..8].copy_from_slice(&got[0].to_le_bytes());
            back[8..].copy_from_slice(&got[1].to_le_bytes());
            assert_eq!(&back[..n], &text.to_ascii_lowercase()[2..2 + n]);
            assert!(back[n..].iter().all(|&b| b == 0), "{n}");
        }
    }
}
