//! What a user's functions can say: `map` reports a malformed record (the
//! run fails naming the file and byte offset, in every mode and from every
//! input kind), a combiner carries parameters, and `reduce` of a keep-all
//! job gets a key's values as a slice whatever the container. Each is
//! checked against a plain sequential computation.

use std::collections::BTreeMap;
use std::io::Write;

use ember::tune::{Ingest, Mode};
use ember::{
    Combiner, ContainerKind, Emit, Error, Input, Job, KeepAll, MapOnlyJob, MapResult, Records,
    RunOptions, Runtime, Split,
};

/// Lines of `key,value` with a decimal value: sums the values per key.
/// A line that is not `key,number` is malformed.
struct Csv;

/// Parses one `key,value` line of `split`.
fn parse<'s>(split: &Split<'s>, line: &'s [u8]) -> Result<(&'s [u8], u64), ember::Malformed> {
    let comma = line.iter().position(|&b| b == b',');
    let (key, value) = match comma {
        Some(c) => (&line[..c], &line[c + 1..]),
        None => return Err(split.malformed(line, "expected key,value")),
    };
    let value = std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| split.malformed(line, "the value is not a number"))?;
    Ok((key, value))
}

fn lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    data.split(|&b| b == b'\n').filter(|l| !l.is_empty())
}

impl Job for Csv {
    type Key = Vec<u8>;
    type Value = u64;
    type Combiner = ember::Sum;
    type Out = u64;

    fn map<E: Emit<Vec<u8>, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for line in lines(split.data) {
            let (key, value) = parse(&split, line)?;
            emit.emit(key, value);
        }
        Ok(())
    }

    fn reduce(&self, _key: &Vec<u8>, total: u64) -> u64 {
        total
    }

    fn pipelinable(&self) -> bool {
        true
    }
}

impl MapOnlyJob for Csv {
    type Key = Vec<u8>;
    type Value = u64;

    fn map(&self, split: Split<'_>, out: &mut Vec<(Vec<u8>, u64)>) -> MapResult {
        for line in lines(split.data) {
            let (key, value) = parse(&split, line)?;
            out.push((key.to_vec(), value));
        }
        Ok(())
    }
}

/// `n` good lines, with a bad one after line `bad` if given; returns the
/// text and the bad line's byte offset.
fn csv(n: usize, bad: Option<usize>) -> (Vec<u8>, Option<u64>) {
    let mut text = Vec::new();
    let mut at = None;
    for i in 0..n {
        writeln!(text, "k{},{}", i % 37, i).unwrap();
        if bad == Some(i) {
            at = Some(text.len() as u64);
            text.extend_from_slice(b"k5,twelve\n");
        }
    }
    (text, at)
}

fn sums(text: &[u8]) -> Vec<(Vec<u8>, u64)> {
    let mut m = BTreeMap::<Vec<u8>, u64>::new();
    for line in lines(text) {
        let c = line.iter().position(|&b| b == b',').unwrap();
        let v: u64 = std::str::from_utf8(&line[c + 1..])
            .unwrap()
            .parse()
            .unwrap();
        *m.entry(line[..c].to_vec()).or_default() += v;
    }
    m.into_iter().collect()
}

/// Asserts `e` is the malformed-record error for `path` at `offset`.
fn assert_malformed(e: Error, path: &std::path::Path, offset: u64) {
    match &e {
        Error::Malformed {
            path: p,
            offset: o,
            message,
        } => {
            assert_eq!((p.as_path(), *o), (path, offset), "{e}");
            assert_eq!(message, "the value is not a number");
        }
        other => panic!("expected a malformed-record error, got: {other}"),
    }
    let shown = e.to_string();
    assert!(
        shown.contains(&path.display().to_string()) && shown.contains(&offset.to_string()),
        "{shown}"
    );
}

#[test]
fn a_malformed_record_names_the_file_and_offset_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let (good, _) = csv(3000, None);
    let (bad, at) = csv(5000, Some(4321));
    let (good_path, bad_path) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    std::fs::write(&good_path, &good).unwrap();
    std::fs::write(&bad_path, &bad).unwrap();
    let paths = [&good_path, &bad_path];
    let at = at.unwrap();
    for threads in [1, 2, 3] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for split in [64, 4096] {
            for (mode, ingest) in [
                (Mode::Barrier, Ingest::Mmap),
                (Mode::Pipelined, Ingest::Mmap),
                (Mode::Barrier, Ingest::Chunked),
            ] {
                let input = Input::open(paths, ingest).unwrap();
                let opts = RunOptions::default()
                    .split_size(split)
                    .mode(mode)
                    .chunk_size(1000);
                let e = rt.run_with(&Csv, &input, &opts).unwrap_err();
                assert_malformed(e, &bad_path, at);
            }
            let input = Input::files(paths).unwrap();
            let opts = RunOptions::default().split_size(split);
            let e = rt.run_map_only(&Csv, &input, &opts).unwrap_err();
            assert_malformed(e, &bad_path, at);
        }
        // The runtime is still usable, and a good input sums right.
        let out = rt.run(&Csv, &Input::file(&good_path).unwrap());
        assert_eq!(out.unwrap().pairs, sums(&good));
    }
}

#[test]
fn a_malformed_record_in_a_stream_names_the_stream() {
    let (bad, at) = csv(2000, Some(1500));
    let rt = Runtime::builder().threads(2).build().unwrap();
    let input = Input::reader("stdin", std::io::Cursor::new(bad));
    let opts = RunOptions::default().chunk_size(512).split_size(128);
    let e = rt.run_with(&Csv, &input, &opts).unwrap_err();
    assert_malformed(e, std::path::Path::new("stdin"), at.unwrap());
}

/// Keeps the `k` largest values of a key, largest first: a combiner with a
/// parameter.
#[derive(Debug, Clone, Default)]
struct TopK {
    k: usize,
}

impl Combiner<u32> for TopK {
    type State = Vec<u32>;
    type Reduced<'a> = Vec<u32>;
    const FOLDS: bool = false;

    fn init(&self, v: u32) -> Vec<u32> {
        vec![v]
    }
    fn add(&self, state: &mut Vec<u32>, v: u32) {
        state.push(v);
        if state.len() > 2 * self.k {
            self.trim(state);
        }
    }
    fn merge(&self, state: &mut Vec<u32>, other: Vec<u32>) {
        state.extend(other);
        self.trim(state);
    }
    fn finish<O>(&self, mut state: Vec<u32>, reduce: impl FnOnce(Vec<u32>) -> O) -> O {
        self.trim(&mut state);
        reduce(state)
    }
}

impl TopK {
    fn trim(&self, state: &mut Vec<u32>) {
        state.sort_unstable_by(|a, b| b.cmp(a));
        state.truncate(self.k);
    }
}

/// Little-endian `u32` records; key = value % 11.
struct Largest {
    k: usize,
}

fn records(data: &[u8]) -> impl Iterator<Item = u32> + '_ {
    data.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
}

/// Emits every record keyed by its residue mod 11.
fn by_residue<E: Emit<u32, u32>>(split: Split<'_>, emit: &mut E) -> MapResult {
    for v in records(split.data) {
        emit.emit(v % 11, v);
    }
    Ok(())
}

impl Job for Largest {
    type Key = u32;
    type Value = u32;
    type Combiner = TopK;
    type Out = Vec<u32>;

    fn records(&self) -> Records {
        Records::Fixed(4)
    }
    fn combiner(&self) -> TopK {
        TopK { k: self.k }
    }
    fn map<E: Emit<u32, u32>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        by_residue(split, emit)
    }
    fn reduce(&self, _key: &u32, top: Vec<u32>) -> Vec<u32> {
        top
    }
}

/// Every value of a key, sorted: reduce gets them as a slice.
struct AllSorted;

impl Job for AllSorted {
    type Key = u32;
    type Value = u32;
    type Combiner = KeepAll;
    type Out = Vec<u32>;

    fn records(&self) -> Records {
        Records::Fixed(4)
    }
    fn map<E: Emit<u32, u32>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        by_residue(split, emit)
    }
    fn reduce(&self, _key: &u32, values: &mut [u32]) -> Vec<u32> {
        values.sort_unstable();
        values.to_vec()
    }
}

fn numbers(n: u32) -> Vec<u8> {
    (0..n)
        .flat_map(|i| (i.wrapping_mul(2_654_435_761) >> 7).to_le_bytes())
        .collect()
}

/// Each key's values, sorted.
fn grouped(data: &[u8]) -> BTreeMap<u32, Vec<u32>> {
    let mut m = BTreeMap::<u32, Vec<u32>>::new();
    for v in records(data) {
        m.entry(v % 11).or_default().push(v);
    }
    m.values_mut().for_each(|vs| vs.sort_unstable());
    m
}

const CONTAINERS: [ContainerKind; 5] = [
    ContainerKind::Hash,
    ContainerKind::HashTree,
    ContainerKind::Append,
    ContainerKind::Intern,
    ContainerKind::Auto,
];

#[test]
fn a_combiner_carries_its_parameter_into_every_container() {
    let data = numbers(20_000);
    let input = Input::bytes(&data);
    for k in [1, 5] {
        let expected: Vec<(u32, Vec<u32>)> = grouped(&data)
            .into_iter()
            .map(|(key, mut vs)| {
                vs.reverse();
                vs.truncate(k);
                (key, vs)
            })
            .collect();
        for threads in [1, 2, 3] {
            let rt = Runtime::builder().threads(threads).build().unwrap();
            for container in CONTAINERS {
                for split in [40, 4096] {
                    let opts = RunOptions::default().container(container).split_size(split);
                    let out = rt.run_with(&Largest { k }, &input, &opts).unwrap();
                    assert_eq!(out.pairs, expected, "k {k}, {threads} threads, {container}");
                }
            }
        }
    }
}

#[test]
fn keep_all_reduce_gets_every_value_in_every_container() {
    let data = numbers(30_000);
    let input = Input::bytes(&data);
    let expected: Vec<(u32, Vec<u32>)> = grouped(&data).into_iter().collect();
    for threads in [1, 2, 4] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for container in CONTAINERS {
            for split in [40, 4096] {
                let opts = RunOptions::default().container(container).split_size(split);
                let out = rt.run_with(&AllSorted, &input, &opts).unwrap();
                assert_eq!(out.pairs, expected, "{threads} threads, {container}");
            }
        }
    }
}
