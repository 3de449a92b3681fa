//! `ember wordcount` and `ember demo`.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::{Bytes, Input, Output, Runtime, Stats};
use ember_apps::text::TextSpec;
use ember_apps::wordcount::{self, WordCount};

use crate::common::{parse_size, summary_out, write_output, RunArgs, Workers};
use crate::isolated::{self, IsolateArgs};
use crate::lines;
use crate::progress::progress_while;

/// `ember wordcount`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Input files, folders (read recursively, leaving out names that
    /// start with `.` or `_`) or quoted glob patterns such as 'logs/*.txt'
    /// (`-` reads standard input). An hdfs://HOST:PORT/PATH URL reads a
    /// file, or every file under a folder, from HDFS (with the `hdfs`
    /// build feature; local files may be given beside it).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// How many of the most frequent words to print.
    #[arg(long, short = 'k', default_value_t = 20)]
    top: usize,
    /// Write every `word<TAB>count`, sorted by word, to this file (`-`:
    /// standard output, and the summary line to standard error instead of
    /// the top words).
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    isolate: IsolateArgs,
}

/// `ember demo`.
#[derive(ClapArgs)]
pub(crate) struct DemoArgs {
    /// Corpus size.
    #[arg(long, value_parser = parse_size, default_value = "100MiB")]
    size: u64,
    #[command(flatten)]
    run: RunArgs,
}

/// Counts words; prints the top `k`, optionally writes everything.
fn count(
    rt: &Runtime,
    input: &Input<'_>,
    a: &RunArgs,
    top: usize,
    output: Option<&PathBuf>,
) -> Result<()> {
    let opts = a.options();
    let (best, stats) = match output {
        Some(path) => {
            // Everything, sorted by word; the top k are selected from it.
            let Output { pairs, stats } =
                progress_while(opts, "job", |o| rt.run_with(&WordCount::new(), input, o))?;
            (
                write_all_and_top(pairs, Some(path), rt.threads(), top)?,
                stats,
            )
        }
        None => {
            let opts = opts.top(top);
            let out = progress_while(opts, "job", |o| {
                rt.run_with(&WordCount::by_count(), input, o)
            })?;
            (out.pairs, out.stats)
        }
    };
    summarize(&best, &stats, a, output)
}

/// Writes every `word<TAB>count` of `pairs` (sorted by word) to `output`,
/// if given, formatted on `threads` threads ([`lines`]), and returns the
/// `top` most frequent, most frequent first.
fn write_all_and_top(
    pairs: Vec<(Bytes, u64)>,
    output: Option<&PathBuf>,
    threads: usize,
    top: usize,
) -> Result<Vec<(Bytes, u64)>> {
    write_output(output.map(PathBuf::as_path), |w| {
        // A line's text: the word, a tab, a count of a few digits.
        let bytes = |(word, _): &(Bytes, u64)| word.as_bytes().len() + 8;
        let expected = pairs.iter().map(bytes).sum();
        let format = |(word, n): &(Bytes, u64), text: &mut Vec<u8>| {
            wordcount::push_line(word.as_bytes(), *n, text)
        };
        lines::scoped(w, threads, expected, format, |lines| {
            for pair in &pairs {
                lines.push(pair, bytes(pair))?;
            }
            lines.finish()
        })?;
        Ok(())
    })?;
    let mut best = pairs;
    let by_count = |a: &(Bytes, u64), b: &(Bytes, u64)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    if best.len() > top && top > 0 {
        best.select_nth_unstable_by(top - 1, by_count);
    }
    best.truncate(top);
    best.sort_by(by_count);
    Ok(best)
}

/// Prints the top words and the summary line, then the stats as asked.
fn summarize(
    best: &[(Bytes, u64)],
    stats: &Stats,
    a: &RunArgs,
    output: Option<&PathBuf>,
) -> Result<()> {
    // With every count on standard output (`-o -`), the top words would
    // repeat some of them: only the summary line goes (to standard error).
    // Written in one go, not a system call per line.
    let mut summary = BufWriter::new(summary_out(output.map(PathBuf::as_path)));
    if output.is_none_or(|p| p.as_os_str() != "-") {
        for (word, n) in best {
            summary.write_all(word.as_bytes())?;
            writeln!(summary, "\t{n}")?;
        }
    }
    writeln!(
        summary,
        "# {} words, {} distinct, {:.1} MB in {:.3} s",
        stats.pairs_emitted,
        stats.distinct_keys,
        stats.input_bytes as f64 / 1e6,
        stats.total_secs
    )?;
    summary.flush()?;
    a.report(stats)
}

/// Runs `ember wordcount`.
pub(crate) fn run(a: Args) -> Result<()> {
    if a.isolate.isolate {
        let iso =
            isolated::run_binary::<Bytes, u64>(&a.run, &a.isolate, "wordcount", &[], &a.files)?;
        let mut stats = iso.stats;
        // Every word emits a count of one.
        stats.pairs_emitted = iso.pairs.iter().map(|(_, n)| n).sum();
        let threads = a
            .run
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let best = write_all_and_top(iso.pairs, a.output.as_ref(), threads, a.top)?;
        return summarize(&best, &stats, &iso.run, a.output.as_ref());
    }
    let input = a.run.open(&a.files)?;
    let (rt, workers) = a.run.runtime_for(&input)?;
    count(&rt, &input, &a.run, a.top, a.output.as_ref())?;
    if a.run.stats && matches!(workers, Workers::SmallInput { .. }) {
        eprintln!("{workers}");
    }
    Ok(())
}

/// Runs `ember demo`: a cached corpus, its top 20 words and the breakdown.
pub(crate) fn demo(a: DemoArgs) -> Result<()> {
    let spec = TextSpec {
        size: a.size,
        ..TextSpec::default()
    };
    let path = ember_cli::inputs::text(&spec).cached()?;
    eprintln!(
        "corpus: {} ({:.1} MB)",
        path.display(),
        spec.size as f64 / 1e6
    );
    let input = Input::file(&path)?;
    let rt = a.run.runtime()?;
    let run = RunArgs {
        stats: true,
        ..a.run
    };
    count(&rt, &input, &run, 20, None)
}
