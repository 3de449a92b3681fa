//! The streaming contract against a plain run: map the input cut into
//! pieces (as an engine hands one split to each map process), shuffle
//! (sort the lines by key), combine or not, reduce; the result is the
//! job's output over the whole input, whatever the cut, the thread count
//! and the keys' bytes (tabs, newlines, backslashes, invalid UTF-8).

use ember::stream::{Folding, StreamJob, Text};
use ember::{
    Bytes, Emit, Input, Job, KeepAll, MapResult, Records, RunOptions, Runtime, Split, Sum,
};
use proptest::prelude::*;

/// Keys are the bytes between `;` separators, any bytes at all; counts
/// them.
struct Fields;

impl Job for Fields {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Separator(|b| b == b';')
    }
    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for field in split.data.split(|&b| b == b';').filter(|f| !f.is_empty()) {
            emit.emit(field, 1);
        }
        Ok(())
    }
    fn reduce(&self, _key: &Bytes, n: u64) -> u64 {
        n
    }
}

/// The fields' lengths, kept as a list: a combiner that does not fold,
/// reduced to the sum of the lengths.
struct Lengths;

impl Job for Lengths {
    type Key = Bytes;
    type Value = u64;
    type Combiner = KeepAll;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Separator(|b| b == b';')
    }
    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for field in split.data.split(|&b| b == b';').filter(|f| !f.is_empty()) {
            emit.emit(&field[..1], field.len() as u64);
        }
        Ok(())
    }
    fn reduce(&self, _key: &Bytes, lengths: &mut [u64]) -> u64 {
        lengths.iter().sum()
    }
}

/// Maps each piece in a process of its own (a `map` call), combines each
/// map output if asked, shuffles, reduces.
fn run_contract<J>(job: J, pieces: &[&[u8]], threads: usize, combine: bool) -> Vec<u8>
where
    Folding<J>: StreamJob,
{
    let rt = Runtime::builder().threads(threads).build().unwrap();
    let job = Folding(job);
    let mut mapped = Vec::new();
    for piece in pieces {
        let mut out = Vec::new();
        job.map(&rt, &Input::bytes(piece), &RunOptions::default(), &mut out)
            .unwrap();
        if combine {
            let mut combined = Vec::new();
            job.combine("map output", &mut &out[..], &mut combined)
                .unwrap();
            out = combined;
        }
        // Each output is already in the shuffle's order: reduce reads it.
        job.reduce("one map output", &mut &out[..], &mut Vec::new())
            .unwrap();
        mapped.extend(out.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec));
    }
    // The shuffle: lines sorted by their key's text, as Hadoop sorts them.
    mapped.sort_by(|a, b| key_text(a).cmp(key_text(b)));
    let mut reduced = Vec::new();
    job.reduce("shuffle", &mut &mapped.concat()[..], &mut reduced)
        .unwrap();
    reduced
}

fn key_text(line: &[u8]) -> &[u8] {
    &line[..line.iter().position(|&b| b == b'\t').unwrap()]
}

/// The plain run's output, as `key<TAB>value` lines in the key text's order.
fn plain<J: Job>(job: &J, data: &[u8]) -> Vec<u8>
where
    J::Key: Text,
    J::Out: Text,
{
    let rt = Runtime::builder().threads(1).build().unwrap();
    let out = rt.run(job, &Input::bytes(data)).unwrap();
    let mut lines: Vec<Vec<u8>> = out
        .pairs
        .iter()
        .map(|(k, v)| {
            let mut line = Vec::new();
            k.write_text(&mut line);
            line.push(b'\t');
            v.write_text(&mut line);
            line.push(b'\n');
            line
        })
        .collect();
    lines.sort_by(|a, b| key_text(a).cmp(key_text(b)));
    lines.concat()
}

/// Cuts `data` at field boundaries near the given fractions.
fn cut<'a>(data: &'a [u8], at: &[usize]) -> Vec<&'a [u8]> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for &a in at {
        let mut end = (a % (data.len() + 1)).max(start);
        while end < data.len() && end > 0 && data[end - 1] != b';' {
            end += 1;
        }
        pieces.push(&data[start..end]);
        start = end;
    }
    pieces.push(&data[start..]);
    pieces
}

fn fields() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![
        proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b')], 1..3),
        proptest::collection::vec(any::<u8>().prop_filter("not ;", |&b| b != b';'), 1..4),
    ];
    proptest::collection::vec(field, 0..200).prop_map(|fs| fs.join(&b';'))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn map_shuffle_reduce_equals_the_plain_run(
        data in fields(),
        at in proptest::collection::vec(any::<usize>(), 0..5),
        threads in 1usize..4,
        combine in any::<bool>(),
    ) {
        let pieces = cut(&data, &at);
        prop_assert_eq!(run_contract(Fields, &pieces, threads, combine), plain(&Fields, &data));
    }

    #[test]
    fn a_combiner_that_keeps_values_goes_through_the_contract(
        data in fields(),
        at in proptest::collection::vec(any::<usize>(), 0..5),
        threads in 1usize..4,
    ) {
        let pieces = cut(&data, &at);
        prop_assert_eq!(run_contract(Lengths, &pieces, threads, true), plain(&Lengths, &data));
    }
}

#[test]
fn every_line_is_utf8_and_keys_with_tabs_and_newlines_survive() {
    let data = b"a\tb;a\tb;line\nbreak;\xff\xfe;back\\slash;plain";
    let rt = Runtime::builder().threads(2).build().unwrap();
    let mut out = Vec::new();
    Folding(Fields)
        .map(&rt, &Input::bytes(data), &RunOptions::default(), &mut out)
        .unwrap();
    let text = String::from_utf8(out).expect("valid UTF-8");
    assert_eq!(
        text,
        // In the order of the text, as a shuffle sorts it: `\` before letters.
        "\\xff\\xfe\t1\na\\tb\t2\nback\\\\slash\t1\nline\\nbreak\t1\nplain\t1\n"
    );
}

#[test]
fn reduce_refuses_unsorted_and_malformed_lines_with_their_place() {
    let job = Folding(Fields);
    let cases: [(&[u8], &str); 6] = [
        (b"b\t1\na\t1\n", "line 2: keys out of order"),
        // Only the text escaping writes: one key, one text.
        (b"\\x41\t1\n", "line 1: bad key"),
        (b"\xce\t1\n", "line 1: bad key"),
        (b"a\t1\nb 1\n", "line 2: no tab"),
        (b"a\tx\n", "line 1: bad value"),
        (b"a\\q\t1\n", "line 1: bad key"),
    ];
    for (input, want) in cases {
        let e = job
            .reduce("shuffle", &mut &input[..], &mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want) && e.contains("'shuffle'"), "{e}");
    }
    // Combine takes any order.
    let mut out = Vec::new();
    job.combine("partials", &mut &b"b\t1\na\t2\nb\t3\n"[..], &mut out)
        .unwrap();
    assert_eq!(out, b"a\t2\nb\t4\n");
}

/// Fails every read.
struct Broken;

impl std::io::Read for Broken {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("disk on fire"))
    }
}

#[test]
fn a_whole_map_input_is_read_into_memory_and_maps_as_the_stream_does() {
    use ember::stream::MapInput;
    use std::io::Cursor;

    let data = b"a\tb;a\tb;line\nbreak;\xff\xfe;back\\slash;plain".to_vec();
    assert_eq!(Folding(Fields).map_input(), MapInput::Streamed);
    let whole = MapInput::Whole
        .input("<stdin>", Cursor::new(data.clone()))
        .unwrap();
    assert!(!whole.is_streamed());
    assert_eq!((whole.parts(), whole.part_bytes(0)), (1, &data[..]));
    assert_eq!(whole.part_name(0), std::path::Path::new("<stdin>"));
    let streamed = MapInput::Streamed
        .input("<stdin>", Cursor::new(data.clone()))
        .unwrap();
    assert!(streamed.is_streamed());
    for threads in 1..4 {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let opts = RunOptions::default().split_size(Some(7));
        let map = |input: &Input<'_>| {
            let mut out = Vec::new();
            Folding(Fields).map(&rt, input, &opts, &mut out).unwrap();
            out
        };
        let fresh = |kind: MapInput| kind.input("<stdin>", Cursor::new(data.clone())).unwrap();
        assert_eq!(
            map(&fresh(MapInput::Whole)),
            map(&fresh(MapInput::Streamed))
        );
        assert_eq!(map(&fresh(MapInput::Whole)), plain(&Fields, &data));
    }
    let e = MapInput::Whole
        .input("<stdin>", Broken)
        .unwrap_err()
        .to_string();
    assert!(e.contains("<stdin>") && e.contains("disk on fire"), "{e}");
}
