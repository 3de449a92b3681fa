//! `Records::Custom`: a job's own record format, cut the same way for an
//! input in memory and a streamed one. Two formats the built-in ones cannot
//! cut: CSV whose quoted fields hold newlines, and length-prefixed binary
//! records. Each job's output must equal a sequential parse of the whole
//! input, for every split size, thread count and ingest.

use std::collections::BTreeMap;
use std::io::Cursor;

use ember::{
    Bytes, Emit, Error, Input, Job, MapResult, Phase, Records, RunOptions, Runtime, Split, Sum,
};

/// A small deterministic generator (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Runs `job` over `data` in memory and streamed, on 1, 2 and 3 threads,
/// for several split and chunk sizes, and checks each output against
/// `expected`.
fn check_everywhere<J>(job: &J, data: &[u8], expected: &[(J::Key, J::Out)])
where
    J: Job,
    J::Key: std::fmt::Debug,
    J::Out: std::fmt::Debug + PartialEq,
{
    for threads in 1..=3 {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for split in [1, 7, 64, 1000, 1 << 20] {
            let opts = RunOptions::default().split_size(split);
            let out = rt.run_with(job, &Input::bytes(data), &opts).unwrap();
            assert_eq!(
                out.pairs, expected,
                "in memory, {threads} threads, split {split}"
            );
            for chunk in [50, 333, 4096] {
                let opts = opts.clone().chunk_size(chunk);
                let input = Input::reader("stream", Cursor::new(data.to_vec()));
                let out = rt.run_with(job, &input, &opts).unwrap();
                assert_eq!(
                    out.pairs, expected,
                    "streamed, {threads} threads, split {split}, chunk {chunk}"
                );
            }
        }
    }
}

// ---- CSV with quoted fields holding newlines ----

/// The end of the CSV record that holds byte `min - 1`: the first newline
/// outside quotes at or after it. `data` starts at a record, so the quote
/// state is known from its first byte (`""` inside quotes toggles twice).
fn csv_next(data: &[u8], min: usize) -> Option<usize> {
    let mut quoted = false;
    for (i, &b) in data.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b'\n' if !quoted && i + 1 >= min => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// The fields of each CSV record in `data`, unquoted.
fn csv_rows(data: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let (mut rows, mut row, mut field) = (Vec::new(), Vec::new(), Vec::new());
    let mut quoted = false;
    let mut bytes = data.iter().copied().peekable();
    while let Some(b) = bytes.next() {
        match (quoted, b) {
            (true, b'"') if bytes.peek() == Some(&b'"') => {
                bytes.next();
                field.push(b'"');
            }
            (_, b'"') => quoted = !quoted,
            (false, b',') => row.push(std::mem::take(&mut field)),
            (false, b'\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            _ => field.push(b),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// Sums the amount (third field) of each account (first field) of a CSV
/// ledger whose second field is free text. Rows that do not parse count
/// under the account `?`.
struct Ledger(Records);

/// An account's key and amount; `?` and 0 for a row that does not parse.
fn entry(row: &[Vec<u8>]) -> (String, u64) {
    let parse = |account: &[u8], amount: &[u8]| {
        let account = String::from_utf8(account.to_vec()).ok()?;
        Some((account, std::str::from_utf8(amount).ok()?.parse().ok()?))
    };
    match row {
        [account, _, amount] => parse(account, amount),
        _ => None,
    }
    .unwrap_or_else(|| ("?".to_string(), 0))
}

impl Job for Ledger {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        self.0
    }

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for row in csv_rows(split.data) {
            let (account, amount) = entry(&row);
            emit.emit(account.as_bytes(), amount);
        }
        Ok(())
    }

    fn reduce(&self, _key: &Bytes, total: u64) -> u64 {
        total
    }
}

fn ledger(rows: usize) -> Vec<u8> {
    let mut rng = Lcg(7);
    let words = ["rent", "a \"big\" one", "line\nbreak", "x,y", "\n\n", ""];
    let mut out = Vec::new();
    for _ in 0..rows {
        let account = format!("acct{}", rng.below(12));
        let mut note = String::new();
        for _ in 0..rng.below(4) {
            note.push_str(words[rng.below(words.len() as u64) as usize]);
        }
        let note = format!("\"{}\"", note.replace('"', "\"\""));
        out.extend_from_slice(format!("{account},{note},{}\n", rng.below(1000)).as_bytes());
    }
    out
}

fn ledger_oracle(data: &[u8]) -> Vec<(Bytes, u64)> {
    let mut totals = BTreeMap::new();
    for row in csv_rows(data) {
        let (account, amount) = entry(&row);
        *totals.entry(Bytes::from(account.as_str())).or_insert(0) += amount;
    }
    totals.into_iter().collect()
}

#[test]
fn csv_with_quoted_newlines_is_cut_between_records() {
    let data = ledger(400);
    let expected = ledger_oracle(&data);
    assert!(
        !expected.iter().any(|(a, _)| a.as_bytes() == b"?"),
        "the ledger parses"
    );
    check_everywhere(&Ledger(Records::Custom(csv_next)), &data, &expected);
}

#[test]
fn lines_cut_csv_records_in_two() {
    let data = ledger(400);
    let expected = ledger_oracle(&data);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default().split_size(64);
    let out = rt
        .run_with(&Ledger(Records::Lines), &Input::bytes(&data), &opts)
        .unwrap();
    assert_ne!(out.pairs, expected, "Lines cuts inside quoted fields");
}

// ---- Length-prefixed binary records ----

/// The end of the record that holds byte `min - 1`, each record a
/// little-endian `u32` length and that many bytes.
fn framed_next(data: &[u8], min: usize) -> Option<usize> {
    let mut at = 0;
    while at < min {
        let len = data.get(at..at + 4)?;
        at += 4 + u32::from_le_bytes(len.try_into().unwrap()) as usize;
    }
    (at <= data.len()).then_some(at)
}

/// The payloads of the records in `data`.
fn frames(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while data.len() >= 4 {
        let len = u32::from_le_bytes(data[..4].try_into().unwrap()) as usize;
        let end = (4 + len).min(data.len());
        out.push(&data[4..end]);
        data = &data[end..];
    }
    out
}

/// Counts records by payload length (mod 16), summing their bytes.
struct Framed;

impl Job for Framed {
    type Key = u32;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Custom(framed_next)
    }

    fn map<E: Emit<u32, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for f in frames(split.data) {
            emit.emit(f.len() as u32 % 16, f.iter().map(|&b| b as u64).sum());
        }
        Ok(())
    }

    fn reduce(&self, _key: &u32, total: u64) -> u64 {
        total
    }
}

fn framed_input(records: usize) -> Vec<u8> {
    let mut rng = Lcg(11);
    let mut out = Vec::new();
    for _ in 0..records {
        // Mostly short records, a few longer than the smallest chunk.
        let len = if rng.below(20) == 0 {
            100 + rng.below(300)
        } else {
            rng.below(24)
        };
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend((0..len).map(|_| rng.below(256) as u8));
    }
    out
}

#[test]
fn length_prefixed_records_are_cut_between_records() {
    let data = framed_input(600);
    let mut totals = BTreeMap::new();
    for f in frames(&data) {
        *totals.entry(f.len() as u32 % 16).or_insert(0) += f.iter().map(|&b| b as u64).sum::<u64>();
    }
    let expected: Vec<(u32, u64)> = totals.into_iter().collect();
    check_everywhere(&Framed, &data, &expected);
}

/// A splitter that breaks its contract: a boundary before `min`.
fn backwards(_data: &[u8], _min: usize) -> Option<usize> {
    Some(0)
}

#[test]
fn a_boundary_out_of_range_is_a_split_error() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let job = Ledger(Records::Custom(backwards));
    let data = ledger(10);
    let opts = RunOptions::default().split_size(16).chunk_size(16);
    let streamed = Input::reader("stream", Cursor::new(data.clone()));
    for input in [Input::bytes(&data), streamed] {
        let err = rt.run_with(&job, &input, &opts).err().unwrap();
        assert!(
            matches!(
                err,
                Error::Panicked {
                    phase: Phase::Split,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains("Records::Custom returned the boundary 0"),
            "{err}"
        );
    }
}
