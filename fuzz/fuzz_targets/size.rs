//! Byte sizes (`--split-size 64KiB`, `split_size="64KiB"` in Python): any text parses
//! or fails with a message that quotes it, never panics; a parsed size
//! written back parses to itself; every `u64`, written in bytes or in a unit
//! that divides it, parses back exactly.
#![no_main]

use ember::tune::{format_size as format, parse_size};
use libfuzzer_sys::fuzz_target;

const UNITS: [(&str, u64); 6] = [
    ("KiB", 1 << 10),
    ("MB", 1_000_000),
    ("m", 1 << 20),
    ("GiB", 1 << 30),
    ("gb", 1_000_000_000),
    ("TiB", 1 << 40),
];

/// The parse, with its error as the text a user sees.
fn parse(text: &str) -> Result<u64, String> {
    parse_size(text).map_err(|e| e.to_string())
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        match parse(text) {
            Ok(n) => assert_eq!(parse(&format(n)), Ok(n), "{text:?}"),
            Err(e) => assert!(e.contains(&format!("'{text}'")), "{text:?}: {e}"),
        }
    }
    if let Some((head, _)) = data.split_first_chunk::<8>() {
        let x = u64::from_le_bytes(*head);
        assert_eq!(parse(&format(x)), Ok(x));
        assert_eq!(parse(&x.to_string()), Ok(x));
        for (unit, mult) in UNITS {
            let n = x >> (data.len() % 64);
            if let Some(bytes) = n.checked_mul(mult) {
                assert_eq!(parse(&format!("{n}{unit}")), Ok(bytes), "{n}{unit}");
            }
        }
    }
});
