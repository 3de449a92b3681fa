//! Chunked ingest gives the same results as memory-mapped input, for every
//! workload that reads a file, any chunk size, many small files, standard
//! input; keeps input memory bounded; and fails cleanly on a read error.
//!
//! Workloads that cannot stream say so, and asking them to is an error:
//! an inverted index of lines (it reads its input twice) and the gather
//! step of sort (random access to every record; only its order streams).
//! k-means and PCA take a [`ember_apps::matrix::Matrix`] in memory, so
//! chunked ingest cannot be asked of them (see their `run`).

use std::fmt::Debug;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use ember::stats::IngestKind;
use ember::tune::Ingest;
use ember::{Error, Input, RunOptions, Runtime, Stats};
use ember_apps::histogram::{self, Bmp, BmpSpec};
use ember_apps::inverted_index::{self, Docs};
use ember_apps::linear_regression::{self, PointsSpec};
use ember_apps::sort::{self, SortSpec};
use ember_apps::string_match::{self, KeysSpec, Targets};
use ember_apps::text::{text, TextSpec};
use ember_apps::wordcount::{sequential, WordCount};
use proptest::prelude::*;

/// A fresh directory for one test, removed with its files when dropped.
fn tempdir(name: &str) -> tempfile::TempDir {
    let prefix = format!("ember-ingest-{name}-");
    tempfile::Builder::new().prefix(&prefix).tempdir().unwrap()
}

/// Chunk sizes (and buffer counts) of the chunked runs: from 4 KB, a size
/// that cuts records anywhere, to larger than any input here.
const CHUNKS: [(usize, usize); 4] = [(4 << 10, 2), (100_003, 3), (1 << 20, 2), (64 << 20, 2)];

fn chunk_opts(chunk: usize, buffers: usize) -> RunOptions {
    RunOptions::default()
        .chunk_size(chunk)
        .chunk_buffers(buffers)
}

/// Asserts that `run` gives `want` on the input `open` returns in memory
/// (`Ingest::Mmap`) and streamed (`Ingest::Chunked`) with every chunk size
/// of [`CHUNKS`], on 1, 2 and 7 threads; and that a streamed run says so
/// in its stats and counts each of the input's `bytes` once.
fn assert_chunked_equals_mmap<T: PartialEq + Debug>(
    what: &str,
    bytes: u64,
    want: &T,
    open: impl Fn(Ingest) -> Input<'static>,
    run: impl Fn(&Runtime, &Input<'_>, &RunOptions) -> ember::Result<(T, Stats)>,
) {
    for threads in [1, 2, 7] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let in_memory = open(Ingest::Mmap);
        assert!(!in_memory.is_streamed());
        let (got, _) = run(&rt, &in_memory, &RunOptions::default()).unwrap();
        assert_eq!(&got, want, "{what}, {threads} threads, in memory");
        for (chunk, buffers) in CHUNKS {
            let streamed = open(Ingest::Chunked);
            assert!(streamed.is_streamed());
            let label = format!("{what}, {threads} threads, chunk {chunk}");
            let (got, stats) = run(&rt, &streamed, &chunk_opts(chunk, buffers)).unwrap();
            assert_eq!(&got, want, "{label}");
            assert_eq!(stats.plan.ingest, IngestKind::Chunked, "{label}");
            assert_eq!(stats.input_bytes, bytes, "{label}");
            assert_eq!(
                stats.chunks.iter().map(|c| c.bytes).sum::<u64>(),
                bytes,
                "{label}"
            );
        }
    }
}

/// Word count's output with owned keys.
type Counts = Vec<(Vec<u8>, u64)>;

/// Word count's pairs with owned keys, and the stats.
fn word_counts(
    rt: &Runtime,
    input: &Input<'_>,
    opts: &RunOptions,
) -> ember::Result<(Counts, Stats)> {
    let out = rt.run_with(&WordCount::new(), input, opts)?;
    let pairs = out
        .pairs
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v))
        .collect();
    Ok((pairs, out.stats))
}

/// [`word_counts`] with these chunk settings.
fn counts(rt: &Runtime, input: &Input<'_>, chunk: usize, buffers: usize) -> (Counts, Stats) {
    word_counts(rt, input, &chunk_opts(chunk, buffers)).unwrap()
}

/// `paths` opened as `how` says.
fn opener(paths: &[PathBuf]) -> impl Fn(Ingest) -> Input<'static> + '_ {
    move |how| Input::open(paths, how).unwrap()
}

fn corpus(size: u64, seed: u64) -> Vec<u8> {
    text(&TextSpec {
        size,
        vocab: 20_000,
        zipf: 1.0,
        seed,
    })
}

#[test]
fn chunked_equals_mmap_for_every_chunk_size() {
    let tmp = tempdir("sizes");
    let dir = tmp.path();
    let data = corpus(3 << 20, 11);
    let file = write(dir, "corpus.txt", &data);
    assert!(Input::open([&file], Ingest::Mmap).unwrap().is_mapped());
    assert_chunked_equals_mmap(
        "word count",
        data.len() as u64,
        &sequential(&[&data]),
        opener(&[file]),
        word_counts,
    );
}

#[test]
fn many_small_files_are_batched_and_counted_once() {
    let tmp = tempdir("small");
    let dir = tmp.path();
    let mut paths = Vec::new();
    let mut all = Vec::new();
    for i in 0..1000 {
        let data = corpus(3000 + i * 7, i);
        let p = dir.join(format!("f{i:04}.txt"));
        std::fs::write(&p, &data).unwrap();
        paths.push(p);
        all.push(data);
    }
    let refs: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
    let want = sequential(&refs);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let (got, _) = counts(&rt, &Input::open(&paths, Ingest::Mmap).unwrap(), 1, 1);
    assert_eq!(got, want);
    let (got, stats) = counts(
        &rt,
        &Input::open(&paths, Ingest::Chunked).unwrap(),
        256 << 10,
        2,
    );
    assert_eq!(got, want);
    // ~3.5 MB in 256 KiB chunks: files were batched, not one chunk each.
    assert!(stats.chunks.len() < 30, "{} chunks", stats.chunks.len());
}

#[test]
fn standard_input_equals_the_file() {
    let data = corpus(1 << 20, 5);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let want = counts(&rt, &Input::bytes(&data), 1, 1).0;
    let piped = Input::reader("<stdin>", std::io::Cursor::new(data.clone()));
    assert_eq!(counts(&rt, &piped, 64 << 10, 2).0, want);
    // A stream is read once.
    let opts = RunOptions::default();
    let e = rt.run_with(&WordCount::new(), &piped, &opts).err().unwrap();
    assert!(e.to_string().contains("already read"), "{e}");
}

/// Reads its bytes, then fails, as a disk or a truncated network file would.
struct FailsAfter {
    data: std::io::Cursor<Vec<u8>>,
}

impl Read for FailsAfter {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.data.read(buf)? {
            0 => Err(std::io::Error::other("device went away")),
            n => Ok(n),
        }
    }
}

#[test]
fn a_read_error_midway_is_an_error_not_a_short_result() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let input = Input::reader(
        "/data/big.txt",
        FailsAfter {
            data: std::io::Cursor::new(corpus(1 << 20, 6)),
        },
    );
    let opts = RunOptions::default().chunk_size(64 << 10);
    let e = rt.run_with(&WordCount::new(), &input, &opts).err().unwrap();
    assert_eq!(
        e.to_string(),
        "cannot read '/data/big.txt': device went away"
    );
    // The runtime (and its ingest thread) still work.
    let data = corpus(100_000, 7);
    let again = Input::reader("again", std::io::Cursor::new(data.clone()));
    assert_eq!(counts(&rt, &again, 4096, 2).0, sequential(&[&data]));
}

#[test]
fn input_memory_stays_bounded_by_the_buffers() {
    let tmp = tempdir("bounded");
    let dir = tmp.path();
    let file = dir.join("big.txt");
    let data = corpus(24 << 20, 8);
    std::fs::write(&file, &data).unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let (chunk, buffers) = (256 << 10, 2);
    let (got, stats) = counts(
        &rt,
        &Input::open([&file], Ingest::Chunked).unwrap(),
        chunk,
        buffers,
    );
    assert_eq!(got, sequential(&[&data]));
    assert!(stats.chunks.len() > 50);
    // Never more than the buffers (each at most a chunk plus a carried
    // record), on an input ~50x their size.
    assert!(
        stats.peak_chunk_bytes <= (buffers * (chunk + 64)) as u64,
        "peak {} bytes",
        stats.peak_chunk_bytes
    );
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Words straddling chunk boundaries are never split or lost.
    #[test]
    fn random_chunk_sizes_never_split_a_word(
        parts in proptest::collection::vec("[a-c ]{0,300}", 1..4),
        chunk in 1usize..200,
        buffers in 1usize..4,
    ) {
        let tmp = tempdir("prop");
        let dir = tmp.path();
        let paths: Vec<PathBuf> = parts.iter().enumerate().map(|(i, p)| write(dir, &format!("p{i}"), p.as_bytes())).collect();
        let refs: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
        let rt = Runtime::builder().threads(2).build().unwrap();
        let (got, _) = counts(&rt, &Input::open(&paths, Ingest::Chunked).unwrap(), chunk, buffers);
        prop_assert_eq!(got, sequential(&refs));
    }
}

#[test]
fn inverted_index_of_a_thousand_small_files_chunked_equals_mmap() {
    let tmp = tempdir("ii-files");
    let dir = tmp.path();
    let spec = TextSpec {
        size: 3_500_000,
        vocab: 20_000,
        zipf: 1.0,
        seed: 12,
    };
    inverted_index::write_docs(&spec, 1000, dir, |_| {}).unwrap();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 1000);
    let docs: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
    let want = inverted_index::sequential(&refs, Docs::Files).unwrap();
    assert_chunked_equals_mmap(
        "inverted index of files",
        spec.size,
        &want,
        opener(&paths),
        |rt, input, opts| {
            let built = inverted_index::build(rt, input, Docs::Files, opts)?;
            assert_eq!(built.documents, 1000);
            Ok((built.index, built.stats))
        },
    );
}

#[test]
fn inverted_index_of_lines_refuses_a_streamed_input() {
    let tmp = tempdir("ii-lines");
    let dir = tmp.path();
    let data = corpus(200_000, 13);
    let file = write(dir, "lines.txt", &data);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let streamed = Input::open([&file], Ingest::Chunked).unwrap();
    let e = inverted_index::build(&rt, &streamed, Docs::Lines, &chunk_opts(4096, 2))
        .err()
        .unwrap();
    assert!(matches!(e, Error::Config(_)), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("an inverted index of lines needs its input in memory"),
        "{msg}"
    );
    assert!(msg.contains("lines.txt' is streamed"), "{msg}");
    // The same file memory-mapped is indexed by line.
    let mapped = Input::open([&file], Ingest::Mmap).unwrap();
    let built = inverted_index::build(&rt, &mapped, Docs::Lines, &RunOptions::default()).unwrap();
    assert!(built.index == inverted_index::sequential(&[&data], Docs::Lines).unwrap());
}

#[test]
fn string_match_chunked_equals_mmap() {
    let tmp = tempdir("strmatch");
    let dir = tmp.path();
    let spec = KeysSpec {
        size: 2 << 20,
        seed: 14,
        plant: vec!["ferrari".into(), "whotheman".into()],
    };
    let data = string_match::keys(&spec).unwrap();
    let file = write(dir, "keys.txt", &data);
    let targets = Targets::new(&["ferrari", "whotheman", "notthere"]).unwrap();
    let want = string_match::sequential(&data, &targets);
    assert!(!want[0].is_empty() && !want[1].is_empty());
    assert_chunked_equals_mmap(
        "string match",
        data.len() as u64,
        &want,
        opener(&[file]),
        |rt, input, opts| string_match::run_input(rt, input, &targets, opts),
    );
}

#[test]
fn linear_regression_chunked_equals_mmap() {
    let tmp = tempdir("linreg");
    let dir = tmp.path();
    let data = linear_regression::points(&PointsSpec {
        size: 2_000_002,
        seed: 15,
    })
    .unwrap();
    let file = write(dir, "points.bin", &data);
    assert_chunked_equals_mmap(
        "linear regression",
        data.len() as u64,
        &linear_regression::sequential(&data).unwrap(),
        opener(&[file]),
        linear_regression::run_input,
    );
}

#[test]
fn linear_regression_of_an_odd_stream_is_an_error() {
    let mut data = linear_regression::points(&PointsSpec {
        size: 100_000,
        seed: 16,
    })
    .unwrap();
    data.push(1);
    let rt = Runtime::builder().threads(2).build().unwrap();
    // A stream of unknown length: the odd byte shows only at its end.
    let input = Input::reader("<stdin>", std::io::Cursor::new(data));
    let e = linear_regression::run_input(&rt, &input, &chunk_opts(4096, 2))
        .err()
        .unwrap();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    assert!(
        e.to_string()
            .contains("100001 bytes, an odd length: points are pairs of bytes (x, y), so byte 100000 has no y"),
        "{e}"
    );
}

/// The pixel array of a BMP file, as a reader placed at its start.
fn pixel_reader(file: &Path, bmp: &Bmp) -> impl Read + Send + 'static {
    let mut f = std::fs::File::open(file).unwrap();
    f.seek(SeekFrom::Start(bmp.offset as u64)).unwrap();
    f.take(bmp.pixels_len() as u64)
}

#[test]
fn histogram_pixels_chunked_equal_in_memory() {
    let tmp = tempdir("histogram");
    let dir = tmp.path();
    // 301 pixels a row: 903 bytes and a padding of 1, so chunks cut rows.
    let image = histogram::bmp(&BmpSpec {
        width: 301,
        height: 2000,
        seed: 17,
    })
    .unwrap();
    let file = write(dir, "image.bmp", &image);
    let bmp = Bmp::parse(&image).unwrap();
    assert_chunked_equals_mmap(
        "histogram",
        bmp.pixels_len() as u64,
        &histogram::sequential(&image).unwrap(),
        |how| match how {
            Ingest::Chunked => Input::reader(&file, pixel_reader(&file, &bmp)),
            _ => Input::owned(&file, bmp.pixels(&image).to_vec()),
        },
        |rt, input, opts| histogram::run_pixels(rt, bmp, input, opts),
    );
    // A pixel stream that ends early is an error, not a short histogram.
    let rt = Runtime::builder().threads(2).build().unwrap();
    let short = Input::reader(&file, pixel_reader(&file, &bmp).take(100_000));
    let e = histogram::run_pixels(&rt, bmp, &short, &chunk_opts(4096, 2))
        .err()
        .unwrap();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    assert!(
        e.to_string().contains(&format!(
            "the pixel array of a 301 x 2000 BMP is {} bytes, the input has 100000",
            bmp.pixels_len()
        )),
        "{e}"
    );
}

#[test]
fn sort_order_chunked_equals_mmap() {
    let tmp = tempdir("sort");
    let dir = tmp.path();
    let data = sort::records(&SortSpec {
        records: 30_000,
        seed: 18,
    });
    let file = write(dir, "records.bin", &data);
    // The order streams; the gather reads the records from memory.
    assert_chunked_equals_mmap(
        "sort",
        data.len() as u64,
        &sort::sequential(&data).unwrap(),
        opener(&[file]),
        |rt, input, opts| {
            let order = sort::sort_order_input(rt, input, opts)?;
            let mut out = vec![0; data.len()];
            order.gather_into(rt, &data, &mut out);
            Ok((out, order.stats))
        },
    );
}

#[test]
fn sort_of_a_stream_ending_inside_a_record_is_an_error() {
    let mut data = sort::records(&SortSpec {
        records: 1000,
        seed: 19,
    });
    data.truncate(data.len() - 30);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let input = Input::reader("<stdin>", std::io::Cursor::new(data));
    let e = sort::sort_order_input(&rt, &input, &chunk_opts(4096, 2))
        .err()
        .unwrap();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    assert!(
        e.to_string().contains(
            "99970 bytes is not a whole number of 100-byte records: 70 bytes left over after record 999"
        ),
        "{e}"
    );
    // Record indices count from the start of one file.
    let tmp = tempdir("sort-parts");
    let dir = tmp.path();
    let a = write(dir, "a", &[0; 100]);
    let e = sort::sort_order_input(
        &rt,
        &Input::open([&a, &a], Ingest::Chunked).unwrap(),
        &RunOptions::default(),
    )
    .err()
    .unwrap();
    assert!(
        e.to_string()
            .contains("sort reads one file of records, not 2"),
        "{e}"
    );
}
