//! `ember-bench isolate`: word count, inverted index (`--lines`), PCA,
//! matrix multiply and histogram with their tasks done in worker processes
//! (`--isolate`, docs/isolation.md) against the same commands in threads,
//! in one run.
//!
//! Every contender is a child `ember` process running the workload's own
//! command: its CPU time, peak memory and page faults (`wait4`'s resource
//! usage) cover the workers it started and reaped. Histogram's isolated
//! mode maps the whole image in one worker process.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::tune::parse_size;
use ember_apps::histogram::BmpSpec;
use ember_apps::text::TextSpec;
use ember_cli::inputs;

use crate::harness::{measure, median, print_table, Contender, Measured, Row};
use crate::machine::all_threads;
use crate::perf;
use crate::rss;
use crate::BenchArgs;

/// `ember-bench isolate`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help("Workers, threads or processes (default: all CPUs)")))]
pub(crate) struct Args {
    /// Corpus size (word count's and inverted index's Zipf corpus).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    /// Split size of both modes of word count and inverted index (default:
    /// each mode's own, fitted to the input).
    #[arg(long, value_parser = parse_size)]
    split_size: Option<u64>,
    /// Rows and columns of PCA's matrix.
    #[arg(long, default_value_t = 1500)]
    pca_n: u64,
    /// Rows and columns of matrix multiply's two factors.
    #[arg(long, default_value_t = 1024)]
    matrix_n: u64,
    /// Rows of histogram's image (10240 pixels each; default: WORKLOADS.md's).
    #[arg(long, default_value_t = BmpSpec::default().height)]
    image_rows: u32,
    /// Then run each contender once more under `perf record -g` and print
    /// the share of its samples in the kernel, the page-fault path and
    /// lock contention.
    #[arg(long)]
    perf: bool,
    #[command(flatten)]
    bench: BenchArgs,
}

/// A job of the bench: the `ember` arguments of its thread mode, its
/// command's words then the rest (its process mode adds `--isolate`
/// between them).
struct Workload {
    name: &'static str,
    command: Vec<OsString>,
    rest: Vec<OsString>,
}

impl Workload {
    /// Its two modes, threads then processes: a row's name and the
    /// arguments of its `ember`.
    fn modes(&self) -> [(String, Vec<OsString>); 2] {
        [false, true].map(|isolate| {
            let mut args = self.command.clone();
            if isolate {
                args.push("--isolate".into());
            }
            args.extend(self.rest.iter().cloned());
            let mode = if isolate { "processes" } else { "threads" };
            (format!("{}, {mode}", self.name), args)
        })
    }
}

/// Runs `ember-bench isolate`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = TextSpec {
        size: a.size,
        ..TextSpec::default()
    };
    let text = inputs::text(&spec).cached()?;
    let image_spec = BmpSpec {
        height: a.image_rows,
        ..BmpSpec::default()
    };
    let image = inputs::bmp(image_spec).cached()?;
    let matrix = |n: u64, seed: u64| -> Result<std::path::PathBuf> {
        inputs::matrix(&inputs::factor(n, n, 1000, seed)?).cached()
    };
    let inputs = Inputs {
        text,
        pca: matrix(a.pca_n, 7)?,
        factors: [matrix(a.matrix_n, 7)?, matrix(a.matrix_n, 8)?],
        image,
    };
    let workers = all_threads(a.bench.threads);
    let workloads = workloads(&inputs, workers, a.split_size);
    let modes: Vec<_> = workloads.iter().flat_map(Workload::modes).collect();
    let contenders = modes.iter().map(|(name, args)| {
        let args = args.clone();
        Contender::new(name, move || child(&args))
    });
    let rows = measure(a.bench.runs, contenders.collect())?;
    let (text_rows, rest) = rows.split_at(4);
    let (matrix_rows, image_rows) = rest.split_at(4);
    let mb = a.size as f64 / 1e6;
    let splits = match a.split_size {
        Some(split) => format!("splits of {:.1} MiB", split as f64 / (1 << 20) as f64),
        None => "each mode's splits".to_string(),
    };
    let title = format!("isolate: {mb:.0} MB of text, {workers} workers, {splits}");
    print_table(&title, mb, "MB", text_rows);
    let title = format!(
        "isolate: PCA of {0} x {0}, matrix multiply of {1} x {1}, {workers} workers",
        a.pca_n, a.matrix_n
    );
    print_table(&title, 1.0, "runs", matrix_rows);
    let image_mb = image_spec.file_len() as f64 / 1e6;
    let title = format!("isolate: histogram of a {image_mb:.0} MB image, {workers} workers");
    print_table(&title, image_mb, "MB", image_rows);
    print_ratios(&rows);
    if a.perf {
        print_profiles(&modes)?;
    }
    Ok(())
}

/// Each mode run once more under `perf`, and where its samples fell; one
/// line if `perf` does not run here.
fn print_profiles(modes: &[(String, Vec<OsString>)]) -> Result<()> {
    if let Some(why) = perf::unavailable() {
        println!("perf: not run ({why})");
        return Ok(());
    }
    println!("perf (cpu-clock samples of one more run, workers included), share of samples in:");
    println!(
        "  {:<28} {:>8} {:>11} {:>11} {:>19}",
        "contender", "kernel", "page faults", "lock waits", "faults on mmap lock"
    );
    for (name, args) in modes {
        let p = perf::profile(args)?;
        println!(
            "  {name:<28} {:>7.1}% {:>10.1}% {:>10.1}% {:>18.1}%",
            p.kernel, p.faults, p.lock_waits, p.mmap_lock_faults
        );
    }
    Ok(())
}

/// The bench's input files.
struct Inputs {
    text: std::path::PathBuf,
    pca: std::path::PathBuf,
    factors: [std::path::PathBuf; 2],
    image: std::path::PathBuf,
}

/// Word count and inverted index by lines (over the text, in splits of
/// `split` bytes if given), PCA, matrix multiply, then histogram, each
/// its workload's command with `workers` threads or processes.
fn workloads(inputs: &Inputs, workers: usize, split: Option<u64>) -> Vec<Workload> {
    let command = |name: &'static str, words: &[&str], files: &[&Path], text: bool| {
        let mut rest: Vec<OsString> = files.iter().map(|f| f.as_os_str().to_owned()).collect();
        rest.extend(["-t".into(), workers.to_string().into()]);
        if let Some(split) = split.filter(|_| text) {
            rest.extend(["--split-size".into(), split.to_string().into()]);
        }
        Workload {
            name,
            command: words.iter().map(OsString::from).collect(),
            rest,
        }
    };
    let [a, b] = &inputs.factors;
    let mut lines = command(
        "inverted-index",
        &["inverted-index", "--lines"],
        &[&inputs.text],
        true,
    );
    lines.name = "inverted-index --lines";
    vec![
        command("wordcount", &["wordcount"], &[&inputs.text], true),
        lines,
        command("pca", &["pca"], &[&inputs.pca], false),
        command("matrix-multiply", &["matrix-multiply"], &[a, b], false),
        command("histogram", &["histogram"], &[&inputs.image], false),
    ]
}

/// For each job (its threads row, then its processes row): the processes'
/// wall and CPU time over the threads', paired by round (the harness runs
/// the rows in turn), and each row's page faults.
fn print_ratios(rows: &[Row]) {
    println!("processes / threads, medians of the ratios of runs of the same round:");
    for pair in rows.chunks(2) {
        let [threads, procs] = pair else {
            continue;
        };
        let ratio = |of: fn(&Measured) -> f64| {
            let pairs = threads.runs.iter().zip(&procs.runs);
            median(pairs.map(|(t, p)| of(p) / of(t)).collect())
        };
        println!(
            "  {}: wall {:.2}x, CPU {:.2}x",
            procs.name,
            ratio(|m| m.secs),
            ratio(|m| m.cpu)
        );
    }
    for row in rows {
        if let Some(note) = &row.median_run().note {
            println!("  {:<28} {note}", row.name);
        }
    }
}

/// Runs `ember ARGS` as a child process, its output dropped: its times,
/// peak memory and page faults, with its workers'.
fn child(args: &[OsString]) -> Result<Measured> {
    let all: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
    let run = rss::run_ember(&all)?;
    let usage = &run.usage;
    Ok(Measured {
        secs: run.secs,
        cpu: run.cpu,
        stats: None,
        note: Some(format!(
            "page faults: {} minor, {} major; system CPU {:.2} s",
            usage.ru_minflt,
            usage.ru_majflt,
            rss::seconds(usage.ru_stime)
        )),
        memory: rss::peak_of(usage).map(|peak| rss::Peak { base: 0, peak }),
    })
}
