//! `Runtime::sort_records`, the external sort of fixed-size records: the
//! bytes of a plain stable sort by key for any record and key length,
//! thread count and budget (records kept in memory or spilled as runs),
//! from memory or from a mapped file; its spill files are gone after a
//! success and after a failed spill; bad shapes and inputs are refused.

use std::path::Path;

use ember::{Error, Input, RecordShape, RunOptions, Runtime};
use proptest::prelude::*;

/// `n` records of `len` bytes: keys drawn from `keys` distinct values
/// (ties on purpose), the rest of each record its index.
fn records(n: usize, shape: RecordShape, keys: u64, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(n * shape.len);
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x % keys).to_be_bytes();
        let mut rec = vec![0u8; shape.len];
        // The key's last bytes vary; its first repeat across records.
        let take = shape.key.min(8);
        rec[shape.key - take..shape.key].copy_from_slice(&k[8 - take..]);
        for (j, b) in rec[shape.key..].iter_mut().enumerate() {
            *b = (i >> (8 * (j % 4))) as u8;
        }
        out.extend_from_slice(&rec);
    }
    out
}

/// The plain sort: records stably sorted by key.
fn plain(data: &[u8], shape: RecordShape) -> Vec<u8> {
    let mut recs: Vec<&[u8]> = data.chunks_exact(shape.len).collect();
    recs.sort_by(|a, b| a[..shape.key].cmp(&b[..shape.key]));
    recs.concat()
}

fn left_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

fn sort(
    rt: &Runtime,
    input: &Input<'_>,
    shape: RecordShape,
    opts: &RunOptions,
) -> (Vec<u8>, ember::Stats) {
    let mut out = Vec::new();
    let stats = rt.sort_records(input, shape, opts, &mut out).unwrap();
    (out, stats)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn any_shape_budget_and_thread_count_gives_the_plain_sort(
        n in prop_oneof![0usize..50, 1_000usize..30_000],
        len in 1usize..130,
        key in 1usize..=12,
        keys in prop_oneof![Just(1u64), 2u64..50, Just(u64::MAX)],
        limit in prop_oneof![Just(0u64), 1u64..(3 << 20), Just(1 << 30)],
        threads in prop_oneof![Just(1usize), Just(2), Just(7)],
        seed in any::<u64>(),
    ) {
        let shape = RecordShape { len: len.max(key), key };
        let data = records(n, shape, keys, seed);
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let opts = RunOptions::default().memory_limit(limit).spill_dir(dir.path().to_path_buf());
        let (got, stats) = sort(&rt, &Input::bytes(&data), shape, &opts);
        prop_assert!(got == plain(&data, shape));
        prop_assert_eq!(stats.output_pairs, n as u64);
        // Spilled exactly when the records (and their keys) pass the budget.
        let spills = (n * (shape.len + 16)) as u64 > limit;
        prop_assert_eq!(stats.memory.spills > 0, spills);
        prop_assert_eq!(left_in(dir.path()), 0);
    }
}

/// 1, 2 and 7 threads and a tiny budget, from a mapped file (whose pages
/// each run lets go of): the bytes of the plain sort, the same as with a
/// budget every record fits in.
#[test]
fn a_mapped_file_sorts_the_same_spilled_or_not() {
    let shape = RecordShape { len: 100, key: 10 };
    let data = records(60_000, shape, u64::MAX, 5);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records");
    std::fs::write(&path, &data).unwrap();
    let spill = tempfile::tempdir().unwrap();
    let want = plain(&data, shape);
    for threads in [1, 2, 7] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for limit in [256 << 10, 1 << 20, 1 << 30] {
            let input = Input::file(&path).unwrap();
            let opts = RunOptions::default()
                .memory_limit(limit)
                .spill_dir(spill.path().to_path_buf());
            let (got, stats) = sort(&rt, &input, shape, &opts);
            let what = format!("{threads} threads, limit {limit}");
            assert!(got == want, "{what}: output differs");
            assert_eq!(stats.memory.spills > 0, limit < 1 << 30, "{what}");
            assert_eq!(left_in(spill.path()), 0, "{what}: spill files left");
        }
    }
}

/// Sorted into a file at offsets by the workers (after bytes already in
/// it): the bytes of the plain sort after those, for 1, 2 and 7 threads,
/// budgets that spill and one that does not, runs large enough to be
/// spread into buckets before they are sorted; the file's position is left
/// after the records, and no spill file is left.
#[test]
fn a_file_output_written_at_offsets_holds_the_plain_sort() {
    use std::io::{Read, Seek, SeekFrom, Write};
    let shape = RecordShape { len: 24, key: 10 };
    let data = records(400_000, shape, u64::MAX, 9);
    let want = plain(&data, shape);
    let spill = tempfile::tempdir().unwrap();
    for threads in [1, 2, 7] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for limit in [1 << 20, 8 << 20, 1 << 30] {
            let opts = RunOptions::default()
                .memory_limit(limit)
                .spill_dir(spill.path().to_path_buf());
            let mut file = tempfile::tempfile().unwrap();
            file.write_all(b"before").unwrap();
            let stats = rt
                .sort_records_to_file(&Input::bytes(&data), shape, &opts, &file)
                .unwrap();
            let what = format!("{threads} threads, limit {limit}");
            assert_eq!(stats.memory.spills > 0, limit < 1 << 30, "{what}");
            assert_eq!(file.stream_position().unwrap(), 6 + data.len() as u64);
            let mut got = Vec::new();
            file.seek(SeekFrom::Start(0)).unwrap();
            file.read_to_end(&mut got).unwrap();
            assert!(got[..6] == *b"before", "{what}: the bytes before");
            assert!(got[6..] == want[..], "{what}: output differs");
            assert_eq!(left_in(spill.path()), 0, "{what}: spill files left");
        }
    }
}

/// A file opened for appending would take every write at its end,
/// whatever the offset: refused before anything is sorted.
#[test]
fn a_file_output_opened_for_appending_is_refused() {
    let shape = RecordShape { len: 100, key: 10 };
    let data = records(1_000, shape, u64::MAX, 10);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let err = rt.sort_records_to_file(&Input::bytes(&data), shape, &RunOptions::default(), &file);
    assert!(matches!(err, Err(Error::Config(_))), "{err:?}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

/// A spill directory that cannot be written (a file-size limit, as for a
/// full disk, is not portable; a missing directory is): an error naming
/// it, nothing written.
#[test]
fn a_spill_directory_that_is_gone_is_an_error() {
    let shape = RecordShape { len: 100, key: 10 };
    let data = records(20_000, shape, u64::MAX, 6);
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default()
        .memory_limit(1 << 20)
        .spill_dir(gone.clone());
    let mut out = Vec::new();
    let err = rt
        .sort_records(&Input::bytes(&data), shape, &opts, &mut out)
        .unwrap_err();
    assert!(err.to_string().contains("gone"), "{err}");
    assert!(out.is_empty());
}

#[test]
fn bad_shapes_and_partial_records_are_refused() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let data = vec![0u8; 1000];
    let opts = RunOptions::default();
    let mut out = Vec::new();
    for (len, key) in [(10, 0), (20, 13), (4, 8)] {
        let shape = RecordShape { len, key };
        let err = rt.sort_records(&Input::bytes(&data), shape, &opts, &mut out);
        assert!(matches!(err, Err(Error::Config(_))), "{len}/{key}: {err:?}");
    }
    let shape = RecordShape { len: 300, key: 10 };
    let err = rt.sort_records(&Input::bytes(&data), shape, &opts, &mut out);
    assert!(matches!(err, Err(Error::InvalidInput(_))), "{err:?}");
    let streamed = Input::reader("records", std::io::Cursor::new(data));
    let shape = RecordShape { len: 100, key: 10 };
    let err = rt.sort_records(&streamed, shape, &opts, &mut out);
    assert!(matches!(err, Err(Error::Config(_))), "{err:?}");
    assert!(out.is_empty());
}

/// Disk blocks the files under `dir` (and its subdirectories) hold.
fn blocks_under(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map(|e| {
            let path = e.unwrap().path();
            match path.is_dir() {
                true => blocks_under(&path),
                false => std::fs::metadata(&path).map_or(0, |m| m.blocks()),
            }
        })
        .sum()
}

/// An output that notes, at every write, the disk blocks the runs hold.
struct Watching<'d> {
    dir: &'d Path,
    seen: Vec<u64>,
    bytes: Vec<u8>,
}

impl std::io::Write for Watching<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.seen.push(blocks_under(self.dir));
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The runs' disk space is freed range by range as the merge writes the
/// output: the last write sees far fewer blocks than the first.
#[test]
fn the_runs_shrink_as_the_output_is_written() {
    let shape = RecordShape { len: 100, key: 10 };
    let data = records(100_000, shape, u64::MAX, 8);
    let spill = tempfile::tempdir().unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default()
        .memory_limit(2 << 20)
        .spill_dir(spill.path().to_path_buf());
    let mut out = Watching {
        dir: spill.path(),
        seen: Vec::new(),
        bytes: Vec::new(),
    };
    let stats = rt
        .sort_records(&Input::bytes(&data), shape, &opts, &mut out)
        .unwrap();
    assert!(stats.memory.spills > 1);
    assert!(out.bytes == plain(&data, shape));
    let (first, last) = (out.seen[0], *out.seen.last().unwrap());
    assert!(
        last * 4 < first,
        "blocks at the first write {first}, at the last {last}"
    );
}
