//! `ember-bench pipeline`: the barrier and the pipelined mode on the same
//! inputs, in one run, with each run's phases and CPU utilization.
//!
//! Cases (rows of the table; a workload is added with one [`Case`]):
//!
//! - `wordcount`: word count on the generated Zipf corpus;
//! - `skewed`: the same corpus and counts, but the splits of the last 5% of
//!   the input are made about `--skew` times as costly to map (each word
//!   runs a calibrated amount of extra computation), so that with 100
//!   splits, 5% of them carry half the map work and finish last;
//! - `histogram`: the RGB histogram workload on a generated BMP of about
//!   the corpus' size (768 dense keys);
//! - `inverted-index`: the inverted index workload (documents are lines) on the
//!   first 32 MiB of the corpus (its posting lists are joined in any order
//!   and sorted by reduce, so it can be pipelined; `Auto` keeps the barrier,
//!   whose append container does not build a table on the map path);
//! - `bytes`: a byte histogram of the corpus: 256 dense keys, the array
//!   container's case in barrier mode;
//! - `offsets`: every word keyed by its byte offset: unique keys, declared
//!   (`KeyHint::Unique`, the barrier's unique container) or not
//!   (`offsets-unhinted`: the barrier samples and picks by repetition).

use std::cell::OnceCell;
use std::hint::black_box;

use anyhow::{bail, Result};
use clap::Args as ClapArgs;
use ember::tune::parse_size;
use ember::tune::{Mode, PipelineOptions};
use ember::{
    Bytes, Emit, Input, Job, KeyHint, MapResult, Records, RunOptions, Runtime, Split, Stats, Sum,
};
use ember_apps::histogram;
use ember_apps::inverted_index::{self, Docs};
use ember_apps::text::TextSpec;
use ember_apps::wordcount::{for_each_word, is_separator, WordCount};
use ember_cli::inputs;

use crate::harness::{measure, median, Contender, Measured, Row};
use crate::machine::{all_threads, cpu_secs};

/// `ember-bench pipeline`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Corpus size (1M-word vocabulary, Zipf 1.0, as word count's).
    #[arg(long, value_parser = parse_size, default_value = "128MiB")]
    size: u64,
    /// Distinct words in the corpus' vocabulary.
    #[arg(long, default_value_t = 1_000_000)]
    vocab: usize,
    /// Zipf exponent of the corpus' word frequencies.
    #[arg(long, default_value_t = 1.0)]
    zipf: f64,
    /// Runs of each contender; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Threads (default: all CPUs).
    #[arg(long, short = 't')]
    threads: Option<usize>,
    /// Pipelined mode's buffer size (default: the runtime's).
    #[arg(long, value_parser = parse_size)]
    buffer: Option<u64>,
    /// Pipelined mode's buffer kind: true combining, false append
    /// (default: measured by each mapper).
    #[arg(long)]
    combine: Option<bool>,
    /// How many times as costly a heavy split of the skewed case is.
    #[arg(long, default_value_t = 19.0)]
    skew: f64,
    /// Cases to run, comma-separated: wordcount, skewed, histogram,
    /// inverted-index, bytes, offsets, offsets-unhinted.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "wordcount,skewed,histogram,inverted-index"
    )]
    cases: Vec<String>,
    /// Leave out the pipelined row with one reduce-only worker.
    #[arg(long)]
    no_dedicated: bool,
}

/// What a case's run returns: its stats, and a digest of its output that
/// must be the same in every mode.
type Digest = (Stats, u64);

/// How a case runs its workload with the given options.
type RunCase<'a> = dyn Fn(&Runtime, &RunOptions) -> Result<Digest> + 'a;

/// One workload of the table.
struct Case<'a> {
    /// Row name.
    name: String,
    /// Input bytes (for the MB/s column).
    bytes: u64,
    /// Split size every mode runs with (`None`: the runtime's choice).
    split_size: Option<usize>,
    /// Runs the workload with the given options.
    run: Box<RunCase<'a>>,
}

/// A way to run a case: a mode and its pipeline settings.
struct Setting {
    name: &'static str,
    mode: Mode,
    pipeline: PipelineOptions,
}

/// Word count on `input`: the stats, and a digest of the 20 most frequent
/// words, the word total and the distinct words.
fn count_words<J: Job<Key = Bytes, Out = u64>>(
    job: &J,
    rt: &Runtime,
    input: &Input<'_>,
    opts: &RunOptions,
) -> Result<Digest> {
    let out = rt.run_with(job, input, opts)?;
    let words = out.pairs.iter().flat_map(|(w, n)| {
        w.as_bytes()
            .iter()
            .map(|&b| b as u64)
            .chain(std::iter::once(*n))
    });
    let d = digest(&out.stats, words);
    Ok((out.stats, d))
}

/// Word count whose splits from byte `heavy_from` on are costly to map:
/// every word of them also runs `rounds` rounds of a hash.
struct Skewed {
    heavy_from: u64,
    rounds: u32,
}

/// Busy work standing for a costly map function.
fn spin(word: &[u8], rounds: u32) -> u64 {
    let mut h = word.len() as u64 ^ 0x9e37_79b9_7f4a_7c15;
    for _ in 0..rounds {
        h = (h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    }
    black_box(h)
}

impl Job for Skewed {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Separator(is_separator)
    }

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        if split.offset < self.heavy_from {
            return WordCount::new().map(split, emit);
        }
        for_each_word(split.data, |w| {
            spin(w, self.rounds);
            emit.emit(w, 1);
        });
        Ok(())
    }

    fn reduce(&self, _word: &Bytes, n: u64) -> u64 {
        n
    }

    fn order(&self, a: &(Bytes, u64), b: &(Bytes, u64)) -> std::cmp::Ordering {
        WordCount::by_count().order(a, b)
    }

    fn pipelinable(&self) -> bool {
        true
    }
}

/// CPU seconds of `job` on `input`, one thread, barrier (median of 3:
/// CPU time, unlike wall time, hardly depends on what else the machine
/// runs).
fn map_cost(job: &Skewed, input: &Input<'_>) -> Result<f64> {
    let rt = Runtime::builder().threads(1).build()?;
    let opts = RunOptions::default().mode(Mode::Barrier).top(1);
    let times: Vec<f64> = (0..3)
        .map(|_| {
            let cpu = cpu_secs();
            rt.run_with(job, input, &opts)?;
            Ok(cpu_secs() - cpu)
        })
        .collect::<Result<_>>()?;
    Ok(median(times))
}

/// Rounds of [`spin`] per word that make a heavy split `skew` times as
/// costly as a light one, measured on the first 32 MiB of the corpus.
fn calibrate(data: &[u8], skew: f64) -> Result<u32> {
    let sample = Input::bytes(&data[..data.len().min(32 << 20)]);
    let light = map_cost(
        &Skewed {
            heavy_from: u64::MAX,
            rounds: 0,
        },
        &sample,
    )?;
    let plain = map_cost(
        &Skewed {
            heavy_from: 0,
            rounds: 0,
        },
        &sample,
    )?;
    let probe = 64;
    let spun = map_cost(
        &Skewed {
            heavy_from: 0,
            rounds: probe,
        },
        &sample,
    )?;
    let per_round = ((spun - plain) / probe as f64).max(1e-12);
    Ok(((skew * light - plain) / per_round).max(0.0).round() as u32)
}

/// The cases, with their names as `--cases` spells them.
const CASES: &str =
    "wordcount, skewed, histogram, inverted-index, bytes, offsets, offsets-unhinted";

/// The cases `a.cases` names, on `input` (the corpus) and `image` (a BMP,
/// when the histogram case is asked for).
fn cases<'a>(a: &Args, input: &'a Input<'a>, image: Option<&'a [u8]>) -> Result<Vec<Case<'a>>> {
    a.cases
        .iter()
        .map(|name| {
            Ok(match name.as_str() {
                "wordcount" => wordcount_case(input),
                "skewed" => skewed_case(input, a.skew)?,
                "histogram" => histogram_case(image.unwrap_or_default()),
                // The bench's earlier name for the case.
                "inverted-index" | "invindex" => inverted_index_case(input),
                "bytes" => bytes_case(input),
                "offsets" => offsets_case(input, KeyHint::Unique),
                "offsets-unhinted" => offsets_case(input, KeyHint::Unknown),
                other => bail!("unknown case '{other}' ({CASES})"),
            })
        })
        .collect()
}

/// The settings every case runs with: the barrier (the first, which the
/// others are compared with), pipelined, and pipelined with one
/// reduce-only worker (unless left out, or there is only one thread).
fn settings(a: &Args, threads: usize) -> Vec<Setting> {
    let pipeline = PipelineOptions::default()
        .buffer_bytes(a.buffer.map(|b| b as usize))
        .combine(a.combine);
    let mut settings = vec![
        Setting {
            name: "barrier",
            mode: Mode::Barrier,
            pipeline: pipeline.clone(),
        },
        Setting {
            name: "pipelined",
            mode: Mode::Pipelined,
            pipeline: pipeline.clone(),
        },
    ];
    if threads > 1 && !a.no_dedicated {
        settings.push(Setting {
            name: "pipelined, 1 reduce-only",
            mode: Mode::Pipelined,
            pipeline: pipeline.dedicated_reducers(1),
        });
    }
    settings
}

/// Runs `ember-bench pipeline`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = TextSpec {
        size: a.size,
        vocab: a.vocab,
        zipf: a.zipf,
        ..TextSpec::default()
    };
    let file = inputs::text(&spec).cached()?;
    let input = Input::file(&file)?;
    let threads = all_threads(a.threads);
    let rt = Runtime::builder().threads(threads).build()?;
    let image = a
        .cases
        .iter()
        .any(|c| c == "histogram")
        .then(|| bmp_of_size(a.size))
        .transpose()?;
    let cases = cases(&a, &input, image.as_deref())?;
    let settings = settings(&a, threads);
    println!(
        "barrier vs pipelined map/reduce, {threads} threads, median of {} runs",
        a.runs.max(1)
    );
    println!(
        "{:<16} {:<25} {:>8} {:>6} {:>8} {:>7} {:>7} {:>7} {:>7} {:>6} {:>8} {:>8}",
        "case",
        "mode",
        "time s",
        "cpu s",
        "MB/s",
        "vs bar",
        "map s",
        "red s",
        "merge s",
        "util",
        "batches",
        "peak MiB"
    );
    let mut details = Vec::new();
    for case in &cases {
        details.extend(bench_case(&rt, case, &settings, a.runs)?);
    }
    for (name, s) in details {
        println!("\n{name}, phases of the median run:\n{s}");
    }
    Ok(())
}

/// Runs `case` in every setting (interleaved), checks that all give the
/// barrier's output, prints a row per setting and the mode `Auto` picks;
/// returns each setting's stats of its median run.
fn bench_case(
    rt: &Runtime,
    case: &Case<'_>,
    settings: &[Setting],
    runs: usize,
) -> Result<Vec<(String, Stats)>> {
    let opts = |mode: Option<Mode>, pipeline: PipelineOptions| {
        RunOptions::default()
            .mode(mode)
            .pipeline(pipeline)
            .split_size(case.split_size)
            .top(20)
    };
    // The barrier's output (its warm-up runs first), which all must give.
    let first = OnceCell::new();
    let contenders = settings
        .iter()
        .map(|set| {
            let (opts, first) = (opts(Some(set.mode), set.pipeline.clone()), &first);
            Contender::new(set.name, move || {
                let mut digest = 0;
                let mut m = Measured::of(|| {
                    let (stats, d) = (case.run)(rt, &opts)?;
                    digest = d;
                    Ok(Some(stats))
                })?;
                if *first.get_or_init(|| digest) != digest {
                    bail!(
                        "{}: {} gave a different output than barrier",
                        case.name,
                        set.name
                    );
                }
                // The job's own time, without the digest.
                m.secs = m.stats.as_ref().map_or(m.secs, |s| s.total_secs);
                Ok(m)
            })
        })
        .collect();
    let rows = measure(Some(runs), contenders)?;
    let mut details = Vec::new();
    for row in &rows {
        let s = row.median_run().stats.clone().expect("an ember run");
        print_row(case, row, &s, rows[0].timing.median);
        details.push((format!("{}, {}", case.name, row.name), s));
    }
    let auto = (case.run)(rt, &opts(None, PipelineOptions::default()))?;
    println!(
        "{:<16} auto picks {}: {}",
        case.name, auto.0.plan.mode, auto.0.plan.mode_reason
    );
    Ok(details)
}

/// Prints a setting's row: `s` is its median run's stats, `barrier` the
/// barrier's median time.
fn print_row(case: &Case<'_>, row: &Row, s: &Stats, barrier: f64) {
    let t = row.timing.median;
    let cpu = median(row.runs.iter().map(|m| m.cpu).collect());
    let (batches, peak) = s
        .pipeline
        .as_ref()
        .map_or((String::new(), String::new()), |p| {
            (
                p.batches.to_string(),
                format!("{:.1}", p.peak_buffered_bytes as f64 / (1 << 20) as f64),
            )
        });
    println!(
        "{:<16} {:<25} {:>8.3} {:>6.2} {:>8.1} {:>6.2}x {:>7.3} {:>7.3} {:>7.3} {:>5.1}% {:>8} {:>8}",
        case.name,
        row.name,
        t,
        cpu,
        case.bytes as f64 / 1e6 / t,
        barrier / t,
        s.map_secs,
        s.reduce_secs,
        s.merge_secs,
        100.0 * s.utilization,
        batches,
        peak
    );
}

fn wordcount_case<'a>(input: &'a Input<'a>) -> Case<'a> {
    Case {
        name: "wordcount".into(),
        bytes: input.len() as u64,
        split_size: None,
        run: Box::new(move |rt, opts| count_words(&WordCount::by_count(), rt, input, opts)),
    }
}

fn skewed_case<'a>(input: &'a Input<'a>, skew: f64) -> Result<Case<'a>> {
    let len = input.len() as u64;
    let rounds = calibrate(input.part_bytes(0), skew)?;
    println!("skewed: heavy splits (the last 5% of the input) spin {rounds} rounds per word, ~{skew}x a light split");
    let job = Skewed {
        heavy_from: len - len / 20,
        rounds,
    };
    Ok(Case {
        name: "skewed".into(),
        bytes: len,
        split_size: Some((len as usize / 100).max(1)),
        run: Box::new(move |rt, opts| count_words(&job, rt, input, opts)),
    })
}

/// Counts byte values: 256 dense keys.
struct ByteHistogram;

impl Job for ByteHistogram {
    type Key = u8;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Fixed(1)
    }

    fn keys(&self) -> KeyHint {
        KeyHint::Dense(256)
    }

    fn map<E: Emit<u8, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for &b in split.data {
            emit.emit(b, 1);
        }
        Ok(())
    }

    fn reduce(&self, _key: &u8, n: u64) -> u64 {
        n
    }

    fn pipelinable(&self) -> bool {
        true
    }
}

/// Every word's length, keyed by its byte offset: each key occurs once.
struct Offsets {
    hint: KeyHint,
}

impl Job for Offsets {
    type Key = u64;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Separator(is_separator)
    }

    fn keys(&self) -> KeyHint {
        self.hint
    }

    fn map<E: Emit<u64, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let mut start = None;
        for (i, &b) in split.data.iter().chain([&b' ']).enumerate() {
            match (is_separator(b), start) {
                (false, None) => start = Some(i),
                (true, Some(s)) => {
                    emit.emit(split.offset + s as u64, (i - s) as u64);
                    start = None;
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn reduce(&self, _key: &u64, len: u64) -> u64 {
        len
    }

    fn pipelinable(&self) -> bool {
        true
    }
}

/// Runs a job with integer keys and counts: its stats, and a digest of the
/// output, the pairs emitted and the distinct keys.
fn run_counts<J, K>(job: &J, rt: &Runtime, input: &Input<'_>, opts: &RunOptions) -> Result<Digest>
where
    J: Job<Key = K, Out = u64>,
    K: ember::Key + Into<u64> + Copy,
{
    let out = rt.run_with(job, input, opts)?;
    let d = digest(
        &out.stats,
        out.pairs.iter().flat_map(|&(k, n)| [k.into(), n]),
    );
    Ok((out.stats, d))
}

fn bytes_case<'a>(input: &'a Input<'a>) -> Case<'a> {
    Case {
        name: "bytes".into(),
        bytes: input.len() as u64,
        split_size: None,
        run: Box::new(move |rt, opts| run_counts(&ByteHistogram, rt, input, opts)),
    }
}

fn offsets_case<'a>(input: &'a Input<'a>, hint: KeyHint) -> Case<'a> {
    let name = match hint {
        KeyHint::Unique => "offsets",
        _ => "offsets-unhinted",
    };
    Case {
        name: name.into(),
        bytes: input.len() as u64,
        split_size: None,
        run: Box::new(move |rt, opts| run_counts(&Offsets { hint }, rt, input, opts)),
    }
}

/// A generated 24-bit BMP of about `size` bytes (4096 pixels a row).
fn bmp_of_size(size: u64) -> Result<Vec<u8>> {
    let width = 4096;
    let height = (size / (3 * width as u64)).max(1) as u32;
    Ok(histogram::bmp(&histogram::BmpSpec {
        width,
        height,
        seed: 7,
    })?)
}

/// FNV-1a over `words`, seeded with the stats' pair and key counts.
fn digest(stats: &Stats, words: impl IntoIterator<Item = u64>) -> u64 {
    words.into_iter().fold(
        stats.pairs_emitted ^ stats.distinct_keys.rotate_left(32),
        |d, w| (d ^ w).wrapping_mul(0x100_0000_01b3),
    )
}

fn histogram_case(file: &[u8]) -> Case<'_> {
    Case {
        name: "histogram".into(),
        bytes: file.len() as u64,
        split_size: None,
        run: Box::new(move |rt, opts| {
            let (counts, stats) = histogram::run(rt, file, opts)?;
            let d = digest(&stats, counts);
            Ok((stats, d))
        }),
    }
}

/// Bytes of the corpus the inverted index case indexes.
const INVERTED_INDEX_BYTES: usize = 32 << 20;

fn inverted_index_case<'a>(input: &'a Input<'a>) -> Case<'a> {
    let data = input.part_bytes(0);
    let data = &data[..data.len().min(INVERTED_INDEX_BYTES)];
    Case {
        name: "inverted-index".into(),
        bytes: data.len() as u64,
        split_size: None,
        run: Box::new(move |rt, opts| {
            let built = inverted_index::build(rt, &Input::bytes(data), Docs::Lines, opts)?;
            let words = built.index.iter().flat_map(|(w, ids)| {
                w.as_bytes()
                    .iter()
                    .map(|&b| b as u64)
                    .chain(ids.iter().map(|&i| i as u64))
            });
            let d = digest(&built.stats, words);
            Ok((built.stats, d))
        }),
    }
}
