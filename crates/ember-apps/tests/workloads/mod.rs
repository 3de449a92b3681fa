//! Every workload on small inputs, with its sequential oracle's answer
//! computed once, and the failing runs a long-lived runtime must survive:
//! what the soak and concurrency tests share.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use ember::tune::Ingest;
use ember::{Bytes, Emit, Error, Input, Job, MapResult, Phase, Records, RunOptions, Runtime};
use ember::{Split, Sum};
use ember_apps::histogram::{self, BmpSpec};
use ember_apps::inverted_index::{self, Docs, Index};
use ember_apps::kmeans::{self, Clustering, Params};
use ember_apps::linear_regression::{self, PointsSpec, Sums};
use ember_apps::matrix::{self, Matrix, MatrixSpec};
use ember_apps::matrix_multiply::{self, Product};
use ember_apps::pca::{self, Pca};
use ember_apps::sort::{self, SortSpec};
use ember_apps::string_match::{self, KeysSpec, Matches, Targets};
use ember_apps::text::{self, TextSpec};
use ember_apps::wordcount::{self, WordCount};

/// The text of the planned panics, which [`quiet_planned_panics`] keeps
/// off stderr.
pub const PLANNED_PANIC: &str = "planned panic";

/// A workload and the way its input reaches the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Word count over bytes in memory.
    WordCount,
    /// Word count over memory-mapped files.
    WordCountFiles,
    /// Word count over files streamed in chunks.
    WordCountStreamed,
    /// The inverted index, a document per file.
    InvertedIndex,
    Histogram,
    LinearRegression,
    StringMatch,
    KMeans,
    Pca,
    MatrixMultiply,
    Sort,
}

impl Workload {
    pub const ALL: [Workload; 11] = [
        Workload::WordCount,
        Workload::WordCountFiles,
        Workload::WordCountStreamed,
        Workload::InvertedIndex,
        Workload::Histogram,
        Workload::LinearRegression,
        Workload::StringMatch,
        Workload::KMeans,
        Workload::Pca,
        Workload::MatrixMultiply,
        Workload::Sort,
    ];
}

/// A failing run, each of a different kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// One of two input files does not exist.
    MissingFile,
    /// The job's `map` panics on one split.
    PanickingMap,
    /// A linear-regression file of odd length.
    MalformedRecord,
    /// A truncated BMP.
    TruncatedImage,
    /// A streamed read that fails half-way.
    FailedRead,
    /// A streamed read whose reader panics half-way.
    InterruptedRead,
}

impl Failure {
    pub const ALL: [Failure; 6] = [
        Failure::MissingFile,
        Failure::PanickingMap,
        Failure::MalformedRecord,
        Failure::TruncatedImage,
        Failure::FailedRead,
        Failure::InterruptedRead,
    ];
}

/// The inputs (small: a round of every workload takes milliseconds) and
/// what the sequential oracles say about them.
pub struct Fixtures {
    dir: PathBuf,
    text: Vec<u8>,
    text_files: Vec<PathBuf>,
    words: Vec<(Vec<u8>, u64)>,
    words_of_files: Vec<(Vec<u8>, u64)>,
    index: Index,
    image: Vec<u8>,
    image_counts: Vec<u64>,
    points: Vec<u8>,
    sums: Sums,
    keys: Vec<u8>,
    targets: Targets,
    matches: Matches,
    kmeans_points: Vec<u8>,
    clustering: Clustering,
    pca_matrix: Vec<u8>,
    pca: Pca,
    a: Vec<u8>,
    b: Vec<u8>,
    product: Product,
    records: Vec<u8>,
    sorted: Vec<u8>,
}

const K_MEANS: Params = Params {
    clusters: 5,
    max_iterations: 50,
};

fn matrix_bytes(rows: u64, cols: u64, seed: u64) -> Vec<u8> {
    matrix::matrix(&MatrixSpec {
        rows,
        cols,
        lo: -1000,
        hi: 1000,
        seed,
    })
}

fn parse<'a>(bytes: &'a [u8], name: &str) -> Matrix<'a> {
    Matrix::parse(bytes, name).unwrap()
}

impl Fixtures {
    /// Generates the inputs (the files under a fresh directory named after
    /// `name`) and computes the oracles' answers.
    pub fn new(name: &str) -> Fixtures {
        let dir = std::env::temp_dir().join(format!("ember-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let spec = |size, seed| TextSpec {
            size,
            vocab: 300,
            zipf: 1.0,
            seed,
        };
        let text = text::text(&spec(20_000, 1));
        let parts: Vec<Vec<u8>> = (2..5).map(|seed| text::text(&spec(6_000, seed))).collect();
        let text_files = write_all(&dir, &parts);
        let part_refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let image = histogram::bmp(&BmpSpec {
            width: 37,
            height: 21,
            seed: 5,
        })
        .unwrap();
        let points = linear_regression::points(&PointsSpec {
            size: 10_000,
            seed: 6,
        })
        .unwrap();
        let keys = string_match::keys(&KeysSpec {
            size: 8_000,
            seed: 7,
            plant: vec!["ferrari".into()],
        })
        .unwrap();
        let targets = Targets::new(&["ferrari", "notthere"]).unwrap();
        let kmeans_points = matrix_bytes(300, 3, 8);
        let pca_matrix = matrix_bytes(12, 40, 9);
        let (a, b) = (matrix_bytes(17, 9, 10), matrix_bytes(9, 13, 11));
        let records = sort::records(&SortSpec {
            records: 400,
            seed: 12,
        });
        Fixtures {
            words: wordcount::sequential(&[&text]),
            words_of_files: wordcount::sequential(&part_refs),
            index: inverted_index::sequential(&part_refs, Docs::Files).unwrap(),
            image_counts: histogram::sequential(&image).unwrap().to_vec(),
            sums: linear_regression::sequential(&points).unwrap(),
            matches: string_match::sequential(&keys, &targets),
            clustering: kmeans::sequential(&parse(&kmeans_points, "k"), K_MEANS).unwrap(),
            pca: pca::sequential(&parse(&pca_matrix, "p")).unwrap(),
            product: matrix_multiply::sequential(&parse(&a, "a"), &parse(&b, "b")).unwrap(),
            sorted: sort::sequential(&records).unwrap(),
            dir,
            text,
            text_files,
            image,
            points,
            keys,
            targets,
            kmeans_points,
            pca_matrix,
            a,
            b,
            records,
        }
    }
}

impl Drop for Fixtures {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn write_all(dir: &Path, parts: &[Vec<u8>]) -> Vec<PathBuf> {
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let path = dir.join(format!("part{i}.txt"));
            std::fs::write(&path, p).unwrap();
            path
        })
        .collect()
}

/// A small split size, so that every run has many splits.
fn opts() -> RunOptions {
    RunOptions::default().split_size(Some(1024))
}

fn counts(rt: &Runtime, input: &Input<'_>, opts: &RunOptions) -> Vec<(Vec<u8>, u64)> {
    let out = rt.run_with(&WordCount::new(), input, opts).unwrap();
    let pairs = out.pairs.into_iter();
    pairs.map(|(k, n)| (k.as_bytes().to_vec(), n)).collect()
}

/// Runs `w` on `rt` and asserts that its result equals the sequential
/// oracle's.
pub fn run_and_check(rt: &Runtime, f: &Fixtures, w: Workload) {
    let o = &opts();
    match w {
        Workload::WordCount => assert_eq!(counts(rt, &Input::bytes(&f.text), o), f.words),
        Workload::WordCountFiles => {
            let input = Input::files(&f.text_files).unwrap();
            assert_eq!(counts(rt, &input, o), f.words_of_files);
        }
        Workload::WordCountStreamed => {
            let input = Input::open(&f.text_files, Ingest::Chunked).unwrap();
            let chunked = o.clone().chunk_size(4096).chunk_buffers(2);
            assert_eq!(counts(rt, &input, &chunked), f.words_of_files);
        }
        Workload::InvertedIndex => {
            let input = Input::files(&f.text_files).unwrap();
            let got = inverted_index::build(rt, &input, Docs::Files, o).unwrap();
            assert!(got.index == f.index, "the inverted index differs");
        }
        Workload::Histogram => {
            let got = histogram::run(rt, &f.image, o).unwrap().0;
            assert_eq!(got[..], f.image_counts[..]);
        }
        Workload::LinearRegression => {
            assert_eq!(linear_regression::run(rt, &f.points, o).unwrap().0, f.sums);
        }
        Workload::StringMatch => {
            let got = string_match::run(rt, &f.keys, &f.targets, o).unwrap().0;
            assert_eq!(got, f.matches);
        }
        Workload::KMeans => {
            let m = parse(&f.kmeans_points, "k");
            let got = kmeans::run(rt, &m, K_MEANS, o, |_, _| {}).unwrap().0;
            assert_eq!(got, f.clustering);
        }
        Workload::Pca => {
            let got = pca::run(rt, &parse(&f.pca_matrix, "p"), o).unwrap().0;
            assert_eq!(got, f.pca);
        }
        Workload::MatrixMultiply => {
            let (a, b) = (parse(&f.a, "a"), parse(&f.b, "b"));
            let got = matrix_multiply::run(rt, &a, &b, o).unwrap().0;
            assert_eq!(got, f.product);
        }
        Workload::Sort => {
            let order = sort::sort_order(rt, &f.records, o).unwrap();
            let mut got = vec![0; f.records.len()];
            order.gather_into(rt, &f.records, &mut got);
            assert!(got == f.sorted, "the sorted records differ");
        }
    }
}

/// Counts words like word count, but panics on a split holding `!`.
struct PanicsOnBang;

impl Job for PanicsOnBang {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Separator(|b| b == b' ')
    }

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        assert!(!split.data.contains(&b'!'), "{PLANNED_PANIC} in map");
        for w in split.data.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
            emit.emit(w, 1);
        }
        Ok(())
    }

    fn reduce(&self, _key: &Bytes, n: u64) -> u64 {
        n
    }
}

/// Reads its bytes, then fails (`panics: false`, as a disk that goes away
/// would) or panics (`panics: true`) instead of reading more.
struct BreaksAfter {
    data: Cursor<Vec<u8>>,
    panics: bool,
}

impl Read for BreaksAfter {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.data.read(buf)? {
            0 if self.panics => panic!("{PLANNED_PANIC} in read"),
            0 => Err(std::io::Error::other("device went away")),
            n => Ok(n),
        }
    }
}

fn broken_stream(f: &Fixtures, panics: bool) -> Input<'static> {
    let data = Cursor::new(f.text.clone());
    Input::reader("broken.txt", BreaksAfter { data, panics })
}

/// Runs the failing run `kind` on `rt` and asserts that it fails with the
/// error that says what went wrong.
pub fn run_and_check_failure(rt: &Runtime, f: &Fixtures, kind: Failure) {
    let chunked = opts().chunk_size(4096).chunk_buffers(2);
    let wc = |input: &Input<'_>| rt.run_with(&WordCount::new(), input, &chunked).err();
    let err: Error = match kind {
        Failure::MissingFile => {
            let paths = [f.text_files[0].clone(), f.dir.join("missing.txt")];
            Input::open(&paths, Ingest::Chunked).err().unwrap()
        }
        Failure::PanickingMap => {
            let mut data = f.text.clone();
            data[f.text.len() / 2] = b'!';
            let e = rt.run_with(&PanicsOnBang, &Input::bytes(&data), &opts());
            e.err().unwrap()
        }
        Failure::MalformedRecord => {
            let odd = &f.points[..f.points.len() - 1];
            linear_regression::run(rt, odd, &opts()).unwrap_err()
        }
        Failure::TruncatedImage => {
            let cut = &f.image[..f.image.len() - 100];
            histogram::run(rt, cut, &opts()).unwrap_err()
        }
        Failure::FailedRead => wc(&broken_stream(f, false)).unwrap(),
        Failure::InterruptedRead => wc(&broken_stream(f, true)).unwrap(),
    };
    let msg = err.to_string();
    let ok = match kind {
        Failure::MissingFile => matches!(err, Error::Io { .. }) && msg.contains("missing.txt"),
        Failure::PanickingMap => {
            matches!(
                err,
                Error::Panicked {
                    phase: Phase::Map,
                    ..
                }
            ) && msg.contains(PLANNED_PANIC)
        }
        Failure::MalformedRecord => msg.contains("an odd length"),
        Failure::TruncatedImage => msg.contains("truncated BMP"),
        Failure::FailedRead => msg == "cannot read 'broken.txt': device went away",
        Failure::InterruptedRead => {
            msg.contains("the reader panicked") && msg.contains(PLANNED_PANIC)
        }
    };
    assert!(ok, "{kind:?}: unexpected error {err:?}");
}

/// Keeps the planned panics (of `map` and of a reader) off stderr; any
/// other panic, a failed assertion included, is printed as usual.
pub fn quiet_planned_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let planned = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|m| m.starts_with(PLANNED_PANIC));
        if !planned {
            default(info);
        }
    }));
}

/// Runs in a [`round`].
pub const RUNS_PER_ROUND: usize = 2 * Workload::ALL.len();

/// One round: every workload, each followed by a failing run (all kinds
/// of [`Failure`] in turn). Returns the number of runs.
pub fn round(rt: &Runtime, f: &Fixtures) -> usize {
    for (i, &w) in Workload::ALL.iter().enumerate() {
        run_and_check(rt, f, w);
        run_and_check_failure(rt, f, Failure::ALL[i % Failure::ALL.len()]);
    }
    RUNS_PER_ROUND
}
