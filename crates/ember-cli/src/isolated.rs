//! `--isolate` on the workload commands: the command's job, taken from the
//! built-in streaming registry by name, runs through [`ember::isolate::run`]
//! (every split mapped in worker processes, docs/isolation.md),
//! and its reduced `key<TAB>output` lines come back decoded as the typed
//! pairs the command's thread mode has, which the command prints with its
//! own output code. One adaptor for every command: a command only turns
//! the pairs into its result type.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use ember::isolate::{self, Report, SharedInput};
use ember::spill::Encode;
use ember::stream::{self, Form, Text};
use ember::Stats;

use crate::common::RunArgs;
use crate::hdfs;

/// The options of a command that can run its job isolated.
#[derive(Args, Debug, Clone)]
pub(crate) struct IsolateArgs {
    /// Map every split and reduce every key range in worker processes
    /// (--threads of them, each started once and given task after task):
    /// a job that crashes costs a retry of its task, not the run
    /// (docs/isolation.md). The output is the thread mode's.
    #[arg(long)]
    pub(crate) isolate: bool,
    /// With --isolate: further attempts of a task whose worker died.
    #[arg(long, default_value_t = 1, requires = "isolate")]
    pub(crate) retries: u32,
}

/// An isolated run's result: the reduced pairs, sorted by key, and what of
/// the thread mode's stats it knows.
pub(crate) struct Isolated<K, V> {
    /// Every key and its output, in key order.
    pub(crate) pairs: Vec<(K, V)>,
    /// The input's bytes and parts, the workers, the splits, the distinct
    /// keys and the run's wall time; the rest is zero.
    pub(crate) stats: Stats,
    /// The command's options for reporting the run: `--stats` is off, its
    /// worker-process report already printed.
    pub(crate) run: RunArgs,
    /// The input's lines, if the job numbers them.
    pub(crate) lines: Option<u64>,
}

/// Runs the registry's job `job` (made from `args`) over `files` in worker
/// processes as `run` and `iso` say, and decodes its reduced lines as
/// `K<TAB>V`. Run options a worker cannot honour are a one-line error
/// naming the option.
pub(crate) fn run<K: Text + Ord, V: Text>(
    run: &RunArgs,
    iso: &IsolateArgs,
    job: &str,
    args: &[String],
    files: &[PathBuf],
) -> Result<Isolated<K, V>> {
    run_past_header(&mut Session::one_run(), run, iso, job, args, files, 0)
}

/// Worker processes for the isolated runs of one command: started by its
/// first run and, for a command of several runs (PCA's two jobs, k-means'
/// iterations), kept for the next (ended when the value is dropped).
pub(crate) struct Session {
    workers: Option<isolate::Workers>,
    /// Whether the workers stay after a run.
    keep: bool,
}

impl Session {
    /// Workers for one run, ended when it ends (their stats in its report).
    pub(crate) fn one_run() -> Session {
        Session {
            workers: None,
            keep: false,
        }
    }

    /// Workers kept from one run to the next.
    pub(crate) fn kept() -> Session {
        Session {
            workers: None,
            keep: true,
        }
    }

    /// Runs the registry's job on the session's workers, started with
    /// `opts` if there are none yet, its output in `form` if it has it.
    fn run(
        &mut self,
        opts: isolate::Options,
        job: &str,
        args: &[String],
        files: &[PathBuf],
        form: Form,
        out: &mut dyn Write,
    ) -> Result<Report> {
        let registry = ember_apps::stream::registry();
        let workers = match &mut self.workers {
            Some(workers) => workers,
            None => self.workers.insert(isolate::Workers::new(opts)?),
        };
        let mut report = workers.run(&registry, job, args, files, form, out)?;
        if !self.keep {
            let workers = self.workers.take().expect("started above");
            report.workers.extend(workers.finish());
        }
        Ok(report)
    }
}

/// As [`run`], on the workers of `session`, over the bytes of each file
/// after its first `header` bytes (an ember matrix file's values).
pub(crate) fn run_past_header<K: Text + Ord, V: Text>(
    session: &mut Session,
    run: &RunArgs,
    iso: &IsolateArgs,
    job: &str,
    args: &[String],
    files: &[PathBuf],
    header: u64,
) -> Result<Isolated<K, V>> {
    let call = Call::new(job, args, files, header, Form::Text);
    run_decoded(session, run, iso, call, |out, _| decode::<K, V>(out))
}

/// As [`run`], for a job with a binary form (word count, the inverted
/// index of lines): its pairs pass from map to reduce to this process as
/// records, no value in text.
pub(crate) fn run_binary<K: Text + Ord, V: Text + Encode>(
    run: &RunArgs,
    iso: &IsolateArgs,
    job: &str,
    args: &[String],
    files: &[PathBuf],
) -> Result<Isolated<K, V>> {
    run_binary_past_header(&mut Session::one_run(), run, iso, job, args, files, 0)
}

/// As [`run_past_header`], for a job with a binary form ([`run_binary`]).
pub(crate) fn run_binary_past_header<K: Text + Ord, V: Text + Encode>(
    session: &mut Session,
    run: &RunArgs,
    iso: &IsolateArgs,
    job: &str,
    args: &[String],
    files: &[PathBuf],
    header: u64,
) -> Result<Isolated<K, V>> {
    let call = Call::new(job, args, files, header, Form::Binary);
    run_decoded(session, run, iso, call, |out, form| match form {
        Form::Text => decode::<K, V>(out),
        Form::Binary => decode_records::<K, V>(out),
    })
}

/// Runs `call` on the workers of `session` and turns its output (in the
/// form the run wrote) into pairs with `decode`.
fn run_decoded<K: Ord, V>(
    session: &mut Session,
    run: &RunArgs,
    iso: &IsolateArgs,
    call: Call<'_>,
    decode: impl FnOnce(&[u8], Form) -> Result<Vec<(K, V)>>,
) -> Result<Isolated<K, V>> {
    let mut out = Vec::new();
    let Ran {
        mut stats,
        run,
        lines,
        form,
    } = run_into(session, run, iso, call, &mut out)?;
    let mut pairs = decode(&out, form)?;
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    stats.distinct_keys = pairs.len() as u64;
    Ok(Isolated {
        pairs,
        stats,
        run,
        lines,
    })
}

/// What [`run_into`] knows of its run.
pub(crate) struct Ran {
    /// As [`Isolated::stats`].
    pub(crate) stats: Stats,
    /// As [`Isolated::run`].
    pub(crate) run: RunArgs,
    /// As [`Isolated::lines`].
    pub(crate) lines: Option<u64>,
    /// The form of the output written.
    pub(crate) form: Form,
}

/// The input of an isolated run: files, each past its first `header`
/// bytes.
#[derive(Clone, Copy)]
pub(crate) struct Files<'a> {
    pub(crate) paths: &'a [PathBuf],
    pub(crate) header: u64,
}

/// An isolated run's job: the registry's job `job` made from `args`,
/// over `input`, its output asked for in `form`.
pub(crate) struct Call<'a> {
    pub(crate) job: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) input: Files<'a>,
    pub(crate) form: Form,
}

impl<'a> Call<'a> {
    /// The job `job` made from `args` over `files`, each past its first
    /// `header` bytes, its output asked for in `form`.
    fn new(
        job: &'a str,
        args: &'a [String],
        paths: &'a [PathBuf],
        header: u64,
        form: Form,
    ) -> Self {
        let input = Files { paths, header };
        Call {
            job,
            args,
            input,
            form,
        }
    }
}

/// Runs `call` as [`run`] does, on the workers of `session`, but writes
/// its output to `out` as it is (sort's records), in the form asked for
/// where the job has it.
pub(crate) fn run_into(
    session: &mut Session,
    run: &RunArgs,
    iso: &IsolateArgs,
    call: Call<'_>,
    out: &mut dyn Write,
) -> Result<Ran> {
    let Call {
        job,
        args,
        input,
        form,
    } = call;
    if let Some(option) = unsupported(run) {
        bail!("{option}: not with --isolate (a worker maps its split with the job's defaults)");
    }
    let (_stdin, files) = local(input.paths)?;
    let files = &files[..];
    let opts = isolate::Options {
        workers: run.threads.unwrap_or(isolate::Options::default().workers),
        retries: iso.retries,
        split_size: run.split_size,
        header: input.header,
        memory_limit: run.memory_limit,
        spill_dir: run.spill_dir.clone(),
    };
    // Worker processes are made: a signal kills and reaps them first.
    ember_cli::output::watch()?;
    let started = Instant::now();
    let report = session.run(opts.clone(), job, args, files, form, out)?;
    let mut stats = Stats::default();
    stats.threads = opts.workers;
    stats.input_parts = files.len();
    for f in files {
        let meta = std::fs::metadata(f).with_context(|| format!("'{}'", f.display()))?;
        stats.input_bytes += meta.len().saturating_sub(input.header);
    }
    stats.splits = report.splits;
    stats.total_secs = started.elapsed().as_secs_f64();
    if run.stats {
        print_report(&report);
    }
    let run = RunArgs {
        stats: false,
        ..run.clone()
    };
    Ok(Ran {
        stats,
        run,
        lines: report.lines,
        form: report.form,
    })
}

/// The files `args` name (folders and glob patterns expanded, see
/// [`ember::expand_paths`]) with standard input (`-`) read once into
/// shared memory, which the workers map as they map a file (the value
/// holds it until the run ends); an HDFS URL is an error.
fn local(args: &[PathBuf]) -> Result<(Option<SharedInput>, Vec<PathBuf>)> {
    let paths = ember::expand_paths(args)?;
    if let Some(url) = paths.iter().find(|f| hdfs::is_url(f)) {
        bail!(
            "--isolate: reads local files and standard input, not '{}'",
            url.display()
        );
    }
    let stdin = |f: &PathBuf| f.as_path() == Path::new("-");
    let shared = match paths.iter().any(stdin) {
        true => Some(SharedInput::read("<stdin>", std::io::stdin().lock())?),
        false => None,
    };
    let paths = paths.iter().map(|f| match (&shared, stdin(f)) {
        (Some(shared), true) => shared.path().to_path_buf(),
        _ => f.clone(),
    });
    let paths: Vec<PathBuf> = paths.collect();
    Ok((shared, paths))
}

/// The first option of `run` set to what a worker process cannot do (it
/// maps with the job's default container, reading and mode, and writes no
/// stats file or trace). The memory limit and spill directory are the
/// channels' ([`isolate::Options::memory_limit`]).
fn unsupported(run: &RunArgs) -> Option<&'static str> {
    let set = [
        (
            run.container != ember::ContainerKind::default(),
            "--container",
        ),
        (
            run.aggregation != ember::tune::Aggregation::default(),
            "--aggregation",
        ),
        (run.partitions.is_some(), "--partitions"),
        (run.table_keys.is_some(), "--table-keys"),
        (run.partition_buffer.is_some(), "--partition-buffer"),
        (run.ingest != ember::tune::Ingest::default(), "--ingest"),
        (run.chunk_size.is_some(), "--chunk-size"),
        (
            run.chunk_buffers != ember::tune::DEFAULT_CHUNK_BUFFERS,
            "--chunk-buffers",
        ),
        (run.mode != ember::tune::Mode::default(), "--mode"),
        (run.buffer_size.is_some(), "--buffer-size"),
        (run.max_buffered.is_some(), "--max-buffered"),
        (run.stats_json.is_some(), "--stats-json"),
        (run.trace.is_some(), "--trace"),
    ];
    set.into_iter().find_map(|(set, name)| set.then_some(name))
}

/// A file the parent writes for its workers and names in the job's
/// arguments (k-means' means, PCA's row sums): shared memory named by this
/// process's descriptor, so nothing is left on disk however the command
/// ends (an error, a signal, or SIGPIPE from `| head`).
pub(crate) struct JobFile {
    shared: ember::isolate::SharedInput,
    name: String,
}

impl JobFile {
    /// An empty job file.
    pub(crate) fn new() -> Result<JobFile> {
        let shared = ember::isolate::SharedInput::read("<job file>", std::io::empty())?;
        let name = path_arg(&shared.path_from_workers())?;
        Ok(JobFile { shared, name })
    }

    /// Its name, as a job argument.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Replaces what it holds with `bytes`.
    pub(crate) fn write(&self, bytes: &[u8]) -> Result<()> {
        self.shared
            .replace(bytes)
            .with_context(|| format!("writing the job file '{}'", self.name))
    }
}

/// `path` as a job argument (a worker's arguments are UTF-8).
pub(crate) fn path_arg(path: &Path) -> Result<String> {
    match path.to_str() {
        Some(name) => Ok(name.to_string()),
        None => bail!(
            "--isolate: '{}' is not a UTF-8 name, which a worker's job arguments need",
            path.display()
        ),
    }
}

/// The `key<TAB>output` lines of a reduce, in their [`Text`] forms.
fn decode<K: Text, V: Text>(lines: &[u8]) -> Result<Vec<(K, V)>> {
    let mut pairs = Vec::new();
    for (i, line) in lines.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let tab = memchr::memchr(b'\t', line);
        let pair =
            tab.and_then(|t| Some((K::read_text(&line[..t])?, V::read_text(&line[t + 1..])?)));
        match pair {
            Some(pair) => pairs.push(pair),
            None => bail!(
                "the isolated run's output line {}: unreadable '{}'",
                i + 1,
                String::from_utf8_lossy(line)
            ),
        }
    }
    Ok(pairs)
}

/// The pairs of an isolated run's output in records.
fn decode_records<K: Text, V: Encode>(out: &[u8]) -> Result<Vec<(K, V)>> {
    let mut pairs = Vec::new();
    for (i, record) in stream::records("<isolated output>", out).enumerate() {
        let record = record?;
        match record.decode() {
            Some(pair) => pairs.push(pair),
            None => bail!(
                "the isolated run's output record {}: unreadable key '{}' or value",
                i + 1,
                String::from_utf8_lossy(record.key)
            ),
        }
    }
    Ok(pairs)
}

/// An isolated run on standard error: its tasks, its phases' wall times,
/// every task attempt its worker died on, and every worker process (the
/// tasks it did, how it died if it did, peak RSS and page faults).
pub(crate) fn print_report(report: &Report) {
    eprintln!(
        "splits {}, key ranges {}, worker processes {}, retries {}, page faults {} minor, {} major, channels on disk {} of {}",
        report.splits,
        report.partitions,
        report.workers.len(),
        report.retries(),
        report.minor_faults(),
        report.major_faults(),
        report.disk_channels,
        report.splits + report.partitions
    );
    let t = &report.times;
    eprintln!(
        "phases: split {:.3} s, map {:.3} s, key ranges {:.3} s, reduce {:.3} s, output {:.3} s",
        t.split.as_secs_f64(),
        t.map.as_secs_f64(),
        t.partition.as_secs_f64(),
        t.reduce.as_secs_f64(),
        t.output.as_secs_f64()
    );
    for t in report.tasks.iter().filter(|t| t.death.is_some()) {
        let death = t.death.map(|d| d.to_string()).unwrap_or_default();
        eprintln!(
            "  {} attempt {}: worker pid {} {death}",
            t.task, t.attempt, t.pid
        );
    }
    for w in &report.workers {
        let death = w.death.map_or_else(|| "ok".to_string(), |d| d.to_string());
        eprintln!(
            "  pid {}: {} tasks, {death}, peak RSS {} KiB, faults {} minor, {} major",
            w.pid, w.tasks, w.peak_rss_kib, w.minor_faults, w.major_faults
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ember::Bytes;

    #[test]
    fn reduced_lines_decode_escaped_keys_and_reject_a_line_without_a_tab() {
        let pairs = decode::<Bytes, u64>(b"a\\tb\t2\ncaf\\xff\t7\n").unwrap();
        assert_eq!(
            pairs,
            vec![(Bytes::new(b"a\tb"), 2), (Bytes::new(b"caf\xff"), 7)]
        );
        let e = decode::<Bytes, u64>(b"a\t1\nno tab\n").unwrap_err();
        assert!(e.to_string().contains("line 2: unreadable 'no tab'"), "{e}");
    }
}
