//! The splitters (`Lines`, `Separator`, `Fixed` and a `Custom` one) at
//! split boundaries the fuzzer chooses: every split a map-only job sees,
//! put in order, covers each input part exactly once, and every split ends
//! at a record boundary of its kind. Inputs are held in memory or streamed
//! in chunks of a fuzzed size, as one part or cut into several.
#![no_main]

use std::io::Cursor;

use ember::{Input, MapOnlyJob, MapResult, Records, Split};
use libfuzzer_sys::fuzz_target;

/// Records that are a 1-byte length and that many bytes.
fn framed(data: &[u8], min: usize) -> Option<usize> {
    let mut at = 0;
    while at < min {
        at += 1 + usize::from(*data.get(at)?);
    }
    (at <= data.len()).then_some(at)
}

fn not_alphanumeric(b: u8) -> bool {
    !b.is_ascii_alphanumeric()
}

/// The record kind byte `k` picks.
fn records(k: u8) -> Records {
    match k % 4 {
        0 => Records::Lines,
        1 => Records::Separator(not_alphanumeric),
        2 => Records::Fixed(1 + usize::from(k / 4 % 16)),
        _ => Records::Custom(framed),
    }
}

/// Returns every split as it is: (part, offset) and its bytes.
struct Splits(Records);

impl MapOnlyJob for Splits {
    type Key = (usize, u64);
    type Value = Vec<u8>;

    fn records(&self) -> Records {
        self.0
    }

    fn map(&self, split: Split<'_>, out: &mut Vec<(Self::Key, Self::Value)>) -> MapResult {
        out.push(((split.part, split.offset), split.data.to_vec()));
        Ok(())
    }
}

/// True when a split of `part` may end at `end` (not the part's end).
fn is_boundary(records: Records, part: &[u8], end: usize) -> bool {
    match records {
        Records::Lines => part[end - 1] == b'\n',
        Records::Separator(sep) => sep(part[end]),
        Records::Fixed(n) => end % n == 0,
        Records::Custom(next) => {
            let mut at = 0;
            while at < end {
                match next(&part[at..], 1) {
                    Some(b) => at += b,
                    None => return false,
                }
            }
            at == end
        }
        Records::Whole => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((rt, opts, rest)) = ember_fuzz::setup(data) else {
        return;
    };
    let Some((&[kind, how, cut], text)) = rest.split_first_chunk::<3>() else {
        return;
    };
    let records = records(kind);
    // Up to three parts, cut where `cut` says.
    let at = usize::from(cut) % (text.len() + 1);
    let parts: Vec<&[u8]> = match how % 3 {
        0 => vec![text],
        1 => vec![&text[..at], &text[at..]],
        _ => vec![&text[..at / 2], &text[at / 2..at], &text[at..]],
    };
    let streamed = how & 4 != 0 || parts.len() > 1;
    let input = if streamed {
        Input::readers(parts.iter().enumerate().map(|(i, p)| {
            (
                format!("part{i}"),
                Cursor::new(p.to_vec()),
                Some(p.len() as u64),
            )
        }))
    } else {
        Input::bytes(text)
    };
    let opts = opts.chunk_size(1 + usize::from(how / 8) * 37);
    let out = rt
        .run_map_only(&Splits(records), &input, &opts)
        .expect("a map-only run that never fails");

    let mut next = (0, 0u64);
    for ((part, offset), bytes) in &out.pairs {
        while next.0 < *part {
            assert_eq!(
                next.1,
                parts[next.0].len() as u64,
                "part {} covered",
                next.0
            );
            next = (next.0 + 1, 0);
        }
        assert_eq!(
            (*part, *offset),
            next,
            "splits in order, no gap, no overlap"
        );
        assert!(!bytes.is_empty(), "an empty split at {next:?}");
        let end = *offset as usize + bytes.len();
        let whole = parts[*part];
        assert_eq!(&whole[*offset as usize..end], &bytes[..], "split bytes");
        if end < whole.len() {
            assert!(
                is_boundary(records, whole, end),
                "split end {end} of part {part}"
            );
        }
        next.1 = end as u64;
    }
    while next.0 < parts.len() {
        assert_eq!(
            next.1,
            parts[next.0].len() as u64,
            "part {} covered",
            next.0
        );
        next = (next.0 + 1, 0);
    }
});
