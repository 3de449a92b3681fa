//! `ember-bench compressed`: word count on compressed copies of the Zipf
//! corpus (issue #43), each against the same text piped in by its
//! decompressor (`gzip -dc F | ember wordcount -`, one core decompressing)
//! and against the decompressor alone writing to `/dev/null` (the limit).
//!
//! The forms: the corpus cut into pieces at line ends, each gzipped; the
//! whole corpus as one gzip file; as zstd of independent frames
//! (`pzstd`) and of one frame (`zstd`); as bzip2. Each form is a table of
//! its own, every row a child process (the `ember` beside this binary and
//! the system's `gzip`, `zstd` and `bzip2`), so a row's CPU seconds and
//! peak memory are its processes' own. The one gzip file is also timed
//! with `rapidgzip -P THREADS` alone, if it is installed. Before a form
//! is timed, ember's full output on it is checked against its output on
//! the plain corpus.
//!
//! The compressed copies are made once, beside the corpus in the cache
//! folder (`compressed-…`), and reused by later runs.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use clap::Args as ClapArgs;
use ember::tune::parse_size;
use ember_apps::text::TextSpec;
use ember_cli::inputs;

use crate::harness::{measure, print_table, Contender, Measured};
use crate::machine::all_threads;
use crate::rss;
use crate::BenchArgs;

/// `ember-bench compressed`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Corpus size (the Zipf text of `ember-bench wordcount`).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    /// Pieces the corpus is cut into for the many-files form.
    #[arg(long, default_value_t = 8)]
    pieces: usize,
    #[command(flatten)]
    bench: BenchArgs,
}

/// A compressed form of the corpus: its files and how to decompress one.
struct Form {
    /// The table's title.
    title: String,
    /// The files, in order.
    files: Vec<PathBuf>,
    /// The decompressor, writing a file's text to standard output.
    decompress: &'static [&'static str],
    /// A parallel decompressor to time alone too (its thread count
    /// follows), if it is installed.
    parallel: Option<&'static [&'static str]>,
}

/// Runs `ember-bench compressed`.
pub(crate) fn run(a: Args) -> Result<()> {
    ensure!(a.pieces > 0, "--pieces must be at least 1");
    let text = inputs::text(&TextSpec {
        size: a.size,
        ..TextSpec::default()
    })
    .cached()?;
    let threads = all_threads(a.bench.threads);
    let plain = ember_output(std::slice::from_ref(&text), threads)?;
    let mb = a.size as f64 / 1e6;
    for form in forms(&text, a.pieces)? {
        ensure!(
            ember_output(&form.files, threads)? == plain,
            "ember's output on {} differs from its output on the plain corpus",
            form.title
        );
        let rows = measure(a.bench.runs, contenders(&form, &text, threads))?;
        let title = format!(
            "compressed: {}, {mb:.1} MB of text, {threads} threads",
            form.title
        );
        print_table(&title, mb, "MB", &rows);
        // Tables apart, as a reader (and the smoke test) takes them.
        println!();
    }
    Ok(())
}

/// The rows of a form's table: the pipe first (the baseline), ember
/// reading the files itself, the decompressor alone (one process per
/// file, `threads` at a time) and ember on the plain corpus.
fn contenders<'a>(form: &'a Form, text: &'a Path, threads: usize) -> Vec<Contender<'a>> {
    let t = threads.to_string();
    let program = form.decompress.join(" ");
    let pipe = format!("{program} \"$@\" | \"$EMBER\" wordcount - -t {t}");
    let alone = match threads {
        1 => format!("{program} alone > /dev/null"),
        n => format!("{program} alone > /dev/null, {n} processes side by side"),
    };
    let mut rows = vec![
        Contender::new(format!("{program} | ember wordcount -"), move || {
            timed(shell(&pipe, &form.files)?)
        }),
        Contender::new("ember wordcount FILES", move || {
            timed(ember_command(&form.files, threads)?)
        }),
        Contender::new(alone, move || decompress_alone(form, threads)),
        Contender::new("ember wordcount, the plain file", move || {
            timed(ember_command(&[text.to_path_buf()], threads)?)
        }),
    ];
    match form.parallel {
        Some(parallel) if installed(parallel[0]) => {
            let script = format!("{} {t} \"$@\" > /dev/null", parallel.join(" "));
            let name = format!("{} {t} alone > /dev/null", parallel.join(" "));
            rows.push(Contender::new(name, move || {
                timed(shell(&script, &form.files)?)
            }));
        }
        Some(parallel) => eprintln!("`{}` is not installed: its row is left out", parallel[0]),
        None => {}
    }
    rows
}

/// Whether `program` runs (is on the `PATH`).
fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The compressed forms of `text`, made in the cache folder if missing.
fn forms(text: &Path, pieces: usize) -> Result<Vec<Form>> {
    let name = |suffix: &str| -> Result<PathBuf> {
        let base = text.file_name().context("the corpus has no file name")?;
        let mut name = OsString::from("compressed-");
        name.push(base);
        name.push(suffix);
        Ok(inputs::cache_dir()?.join(name))
    };
    let mut piece_files = Vec::new();
    for (i, range) in line_pieces(text, pieces)?.into_iter().enumerate() {
        let out = name(&format!(".{i}-of-{pieces}.gz"))?;
        cached(&out, |w| {
            compress_range(text, range.clone(), &["gzip", "-c"], w)
        })?;
        piece_files.push(out);
    }
    let whole = |suffix: &str, program: &'static [&'static str]| -> Result<PathBuf> {
        let out = name(suffix)?;
        cached(&out, |w| compress_range(text, 0..u64::MAX, program, w))?;
        Ok(out)
    };
    Ok(vec![
        Form {
            title: format!("{pieces} .gz pieces"),
            files: piece_files,
            decompress: &["gzip", "-dc"],
            parallel: None,
        },
        Form {
            title: "one .gz".into(),
            files: vec![whole(".gz", &["gzip", "-c"])?],
            decompress: &["gzip", "-dc"],
            // rapidgzip (`pip install rapidgzip`) decodes one gzip file
            // on several threads.
            parallel: Some(&["rapidgzip", "-d", "-c", "-P"]),
        },
        Form {
            title: "one .zst of independent frames (pzstd)".into(),
            files: vec![whole(".frames.zst", &["pzstd", "-c", "-q"])?],
            decompress: &["zstd", "-dc"],
            parallel: None,
        },
        Form {
            title: "one .zst of one frame (zstd)".into(),
            files: vec![whole(".zst", &["zstd", "-c", "-q"])?],
            decompress: &["zstd", "-dc"],
            parallel: None,
        },
        Form {
            title: "one .bz2".into(),
            files: vec![whole(".bz2", &["bzip2", "-c"])?],
            decompress: &["bzip2", "-dc"],
            parallel: None,
        },
    ])
}

/// Byte ranges cutting `text` into `n` pieces of about equal size, each
/// ending at a line end (the last at the file's end).
fn line_pieces(text: &Path, n: usize) -> Result<Vec<Range<u64>>> {
    let len = std::fs::metadata(text)?.len();
    let mut reader = BufReader::new(File::open(text)?);
    let (mut ranges, mut start, mut line) = (Vec::new(), 0u64, Vec::new());
    for i in 1..n as u64 {
        let target = len * i / n as u64;
        if target <= start {
            continue;
        }
        std::io::copy(
            &mut (&mut reader).take(target - start),
            &mut std::io::sink(),
        )?;
        line.clear();
        let end = target + reader.read_until(b'\n', &mut line)? as u64;
        ranges.push(start..end);
        start = end;
    }
    ranges.push(start..len);
    Ok(ranges)
}

/// Writes `program`'s compression of bytes `range` of `text` into `w`.
fn compress_range(
    text: &Path,
    range: Range<u64>,
    program: &[&str],
    w: &mut dyn Write,
) -> Result<()> {
    let mut file = File::open(text)?;
    file.seek(SeekFrom::Start(range.start))?;
    let mut child = Command::new(program[0])
        .args(&program[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run `{}`", program.join(" ")))?;
    let mut stdin = child.stdin.take().expect("piped");
    let feeder = std::thread::spawn(move || {
        let copied = std::io::copy(&mut file.take(range.end - range.start), &mut stdin);
        drop(stdin);
        copied
    });
    std::io::copy(child.stdout.as_mut().expect("piped"), w)?;
    let status = child.wait()?;
    feeder.join().expect("the feeder does not panic")?;
    ensure!(status.success(), "`{}` failed: {status}", program.join(" "));
    Ok(())
}

/// `out`, written by `write` first if it is not there yet (whole or not at
/// all: a stopped run leaves no partial file under its name).
fn cached(out: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    if out.exists() {
        return Ok(());
    }
    eprintln!("making {} (cached for next time)", out.display());
    ember_cli::output::write_output(Some(out), write)
}

/// `ember wordcount FILES -t threads`, its output to `/dev/null`.
fn ember_command(files: &[PathBuf], threads: usize) -> Result<Command> {
    let mut cmd = Command::new(rss::ember()?);
    cmd.arg("wordcount")
        .args(files)
        .args(["-t", &threads.to_string()]);
    Ok(cmd)
}

/// `sh -c script` with `files` as its arguments and `$EMBER` the `ember`
/// beside this binary.
fn shell(script: &str, files: &[PathBuf]) -> Result<Command> {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script, "sh"])
        .args(files)
        .env("EMBER", rss::ember()?);
    Ok(cmd)
}

/// Runs `cmd` once, its output to `/dev/null`: wall seconds, and the CPU
/// seconds and peak memory of it and the processes it waited for.
fn timed(mut cmd: Command) -> Result<Measured> {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    let (status, usage) = rss::wait(child.id())?;
    let secs = start.elapsed().as_secs_f64();
    ensure!(status == 0, "{cmd:?} failed (wait status {status})");
    Ok(Measured {
        secs,
        cpu: rss::seconds(usage.ru_utime) + rss::seconds(usage.ru_stime),
        stats: None,
        note: None,
        memory: rss::peak_of(&usage).map(|peak| rss::Peak { base: 0, peak }),
    })
}

/// The decompressor alone on every file of `form`, its output to
/// `/dev/null`, `threads` processes at a time.
fn decompress_alone(form: &Form, threads: usize) -> Result<Measured> {
    let start = Instant::now();
    let (mut cpu, mut peak) = (0.0, 0);
    for batch in form.files.chunks(threads.max(1)) {
        let children = batch
            .iter()
            .map(|f| {
                Command::new(form.decompress[0])
                    .args(&form.decompress[1..])
                    .arg(f)
                    .stdout(Stdio::null())
                    .spawn()
                    .with_context(|| format!("cannot run `{}`", form.decompress.join(" ")))
            })
            .collect::<Result<Vec<_>>>()?;
        for child in children {
            let (status, usage) = rss::wait(child.id())?;
            ensure!(status == 0, "`{}` failed", form.decompress.join(" "));
            cpu += rss::seconds(usage.ru_utime) + rss::seconds(usage.ru_stime);
            peak = peak.max(rss::peak_of(&usage).unwrap_or(0));
        }
    }
    Ok(Measured {
        secs: start.elapsed().as_secs_f64(),
        cpu,
        stats: None,
        note: None,
        memory: Some(rss::Peak { base: 0, peak }),
    })
}

/// Every `word<TAB>count` ember writes for `files` (`-o -`).
fn ember_output(files: &[PathBuf], threads: usize) -> Result<Vec<u8>> {
    let mut cmd = ember_command(files, threads)?;
    cmd.args(["-o", "-"]);
    let (out, _) = rss::run_child(&mut cmd)?;
    ensure!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(out.stdout)
}
