//! Histogram in the streaming contract: one whole 24-bit BMP per map
//! process, `channel:value<TAB>pixels` partials summed over many images.
//!
//! A BMP cannot be cut at line boundaries (its header describes all of
//! it), so a map process reads one whole image from standard input
//! ([`MapInput::Whole`]) and counts it on all its threads with
//! [`crate::histogram::run`]. Keys are the channel's letter and the value
//! in three digits (`r:007`, `g:255`), so that the text order of the keys
//! is their order within a channel; only values with pixels are written.

use std::io::{BufRead, Write};

use ember::stream::{read_lines, KeyOrder, MapInput, StreamJob, Text};
use ember::{Error, Input, Result, RunOptions, Runtime, Stats};

use super::whole;
use crate::histogram::{self, CHANNELS, KEYS};

/// A histogram key (`channel * 256 + value`, as [`crate::histogram`]'s),
/// written `r:000` .. `b:255`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChannelValue(pub u16);

/// The channels in the order of their letters' text: blue, green, red.
const TEXT_ORDER: [usize; 3] = [2, 1, 0];

fn letter(channel: usize) -> u8 {
    CHANNELS[channel].as_bytes()[0]
}

impl Text for ChannelValue {
    fn write_text(&self, out: &mut Vec<u8>) {
        let (channel, value) = (usize::from(self.0) / 256, self.0 % 256);
        out.push(letter(channel));
        out.extend_from_slice(format!(":{value:03}").as_bytes());
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        let [l, b':', digits @ ..] = text else {
            return None;
        };
        let channel = (0..CHANNELS.len()).find(|&c| letter(c) == *l)?;
        if digits.len() != 3 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let value: u16 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        (value < 256).then_some(ChannelValue(channel as u16 * 256 + value))
    }
}

/// The histogram of whole images, one per map process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Images;

impl StreamJob for Images {
    fn map_input(&self) -> MapInput {
        MapInput::Whole
    }

    fn map(
        &self,
        runtime: &Runtime,
        input: &Input<'_>,
        opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats> {
        let (counts, stats) = histogram::run(runtime, whole(input, "a BMP image")?, opts)?;
        let seen: Vec<Option<u64>> = counts.iter().map(|&n| (n > 0).then_some(n)).collect();
        write_counts(&seen, out)?;
        Ok(stats)
    }

    fn combine(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        write_counts(&add_up(name, input, KeyOrder::Any)?, out)
    }

    fn reduce(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        write_counts(&add_up(name, input, KeyOrder::Sorted)?, out)
    }
}

/// Every key's count over the lines of `input`; `None` for a key that no
/// line has.
fn add_up(name: &str, input: &mut dyn BufRead, order: KeyOrder) -> Result<Vec<Option<u64>>> {
    let mut counts = vec![None; KEYS];
    read_lines(name, input, order, |key: ChannelValue, n: u64, _| {
        *counts[usize::from(key.0)].get_or_insert(0) += n;
        Ok(())
    })?;
    Ok(counts)
}

/// Writes a line for each key that has a count, in the order of the keys'
/// text.
fn write_counts(counts: &[Option<u64>], out: &mut dyn Write) -> Result<()> {
    let mut text = Vec::new();
    for channel in TEXT_ORDER {
        let keys = counts.iter().enumerate().skip(channel * 256).take(256);
        for (key, &count) in keys {
            if let Some(n) = count {
                ChannelValue(key as u16).write_text(&mut text);
                text.push(b'\t');
                n.write_text(&mut text);
                text.push(b'\n');
            }
        }
    }
    out.write_all(&text).map_err(|e| Error::io("<output>", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_letter_colon_three_digits_in_text_order() {
        let text = |k: u16| {
            let mut t = Vec::new();
            ChannelValue(k).write_text(&mut t);
            String::from_utf8(t).unwrap()
        };
        assert_eq!(text(7), "r:007");
        assert_eq!(text(256 + 255), "g:255");
        assert_eq!(text(512), "b:000");
        for k in 0..KEYS as u16 {
            assert_eq!(
                ChannelValue::read_text(text(k).as_bytes()),
                Some(ChannelValue(k))
            );
        }
        for bad in ["r:256", "r:07", "r:0007", "x:001", "r001", "R:001", "r:+01"] {
            assert_eq!(ChannelValue::read_text(bad.as_bytes()), None, "{bad}");
        }
        let written: Vec<String> = TEXT_ORDER
            .iter()
            .flat_map(|&c| (c * 256..(c + 1) * 256).map(|k| text(k as u16)))
            .collect();
        assert!(written.is_sorted());
    }

    #[test]
    fn combine_adds_counts_and_reduce_wants_them_sorted() {
        let mut out = Vec::new();
        let lines = b"r:001\t2\nb:000\t1\nr:001\t3\nr:002\t0\n";
        Images
            .combine("partials", &mut &lines[..], &mut out)
            .unwrap();
        assert_eq!(out, b"b:000\t1\nr:001\t5\nr:002\t0\n");
        let e = Images
            .reduce("shuffle", &mut &lines[..], &mut Vec::new())
            .unwrap_err();
        assert!(e.to_string().contains("line 2: keys out of order"), "{e}");
    }
}
