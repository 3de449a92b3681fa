//! `ember stream run`: a whole MapReduce job whose mapper, combiner and
//! reducer are shell commands, with Hadoop Streaming's contract, on all
//! cores (docs/streaming.md).
//!
//! The plan: cut the files into splits at line boundaries ([`splits`]);
//! run a mapper per split, a few at once ([`pool`], [`command`]); cut each
//! mapper's output into sort buffers, sort each by partition and key
//! ([`records`]), combine it if asked, and append it to one unnamed
//! temporary file as a run per partition ([`map`], [`shuffle`]); then run
//! a reducer per partition fed the merge of its runs, and copy the
//! reducers' outputs to the output in partition order ([`reduce`]).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::Input;
use ember_cli::output;

use crate::common::parse_size;

mod command;
mod map;
mod pool;
mod records;
mod reduce;
mod shuffle;
mod splits;

pub(crate) use command::kill_children;

const AFTER_HELP: &str = "\
The contract is Hadoop Streaming's: each command is run by `sh -c CMD`; a \
mapper reads its split's lines on stdin and writes `key<TAB>value` lines (the \
key is everything before the first tab; a line without a tab is all key); \
lines are partitioned by a hash of the key (Hadoop's HashPartitioner) and \
sorted by key bytes (LC_ALL=C order, stable); a reducer reads its \
partition's lines on stdin, equal keys together. The combiner, if given, \
runs over each sorted buffer of one mapper's output. Commands see \
mapreduce_map_input_file, mapreduce_map_input_start, \
mapreduce_map_input_length, mapreduce_task_partition (the split index for \
mappers and combiners, the partition for reducers) and \
mapreduce_task_ismap.

Memory: the input files are memory-mapped; each running mapper holds one \
sort buffer of its output (--sort-buffer, with a 32-byte index per line) \
and, with a combiner, the combiner's output for it; sorted map output goes \
to an unnamed temporary file in --spill-dir (removed when ember exits, \
however it exits), about the size of the map (or combiner) output; each \
reducer is fed by a merge that holds 16 MiB of read buffers (4 KiB a run \
at the least), and writes to a temporary file there too.

A command that exits non-zero or on a signal ends the job: ember kills the \
others, prints one line naming the command, its split or partition, its \
exit status and the last line of its stderr (the rest of a command's \
stderr is not shown), and exits 1 with no output file.";

/// `ember stream run`.
#[derive(ClapArgs)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Input files (text, cut into splits at line boundaries), folders
    /// (read recursively, leaving out names that start with `.` or `_`) or
    /// quoted glob patterns such as 'logs/*.txt'.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The map command (run by `sh -c`): reads lines on stdin, writes
    /// `key<TAB>value` lines on stdout.
    #[arg(long, value_name = "CMD")]
    mapper: String,
    /// A combine command, run over each mapper's sorted output before
    /// the shuffle (often the reducer itself).
    #[arg(long, value_name = "CMD")]
    combiner: Option<String>,
    /// The reduce command (run by `sh -c`): reads its partition's lines,
    /// sorted by key, on stdin.
    #[arg(long, value_name = "CMD")]
    reducer: String,
    /// Mapper processes at once (default: the number of CPUs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    mappers: Option<u32>,
    /// Partitions, each fed to one reducer process; they run up to N at
    /// once (default: the number of CPUs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    reducers: Option<u32>,
    /// Bytes of input per split, e.g. 16MiB (default: about 4 splits per
    /// mapper, from 1MiB to 64MiB).
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    split_size: Option<u64>,
    /// Map output a mapper holds before it sorts it and writes it out as a
    /// run (from 64KiB to 2GiB).
    #[arg(long, value_parser = parse_size, value_name = "SIZE", default_value = "64MiB")]
    sort_buffer: u64,
    /// Where the sorted map output and the reducers' outputs wait (unnamed
    /// temporary files). Default: $TMPDIR or /tmp.
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
    /// Write the output to this file (whole or not at all) instead of
    /// standard output (`-`).
    #[arg(long, short = 'o', value_name = "FILE", default_value = "-")]
    output: PathBuf,
}

/// What a job's tasks share.
struct Job<'a> {
    mapper: String,
    combiner: Option<String>,
    reducer: String,
    input: &'a Input<'a>,
    splits: Vec<splits::Split>,
    partitions: u32,
    sort_buffer: usize,
    spill_dir: PathBuf,
    shuffle: shuffle::Shuffle,
    ctl: command::Control,
}

/// Runs `ember stream run`.
pub(crate) fn run(a: Args) -> Result<()> {
    let input = Input::files(ember::expand_paths(&a.files)?)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mappers = a.mappers.map_or(cpus, |n| n as usize);
    let partitions = a.reducers.unwrap_or(cpus as u32);
    let size = a.split_size.map_or_else(
        || splits::default_size(input.len(), mappers),
        |s| s.max(1) as usize,
    );
    let spill_dir = a.spill_dir.unwrap_or_else(std::env::temp_dir);
    let mut out = output::create(&a.output)?;
    let job = Job {
        splits: splits::plan(&input, size),
        shuffle: shuffle::Shuffle::new(&spill_dir, partitions)?,
        mapper: a.mapper,
        combiner: a.combiner,
        reducer: a.reducer,
        input: &input,
        partitions,
        sort_buffer: a.sort_buffer.clamp(64 << 10, 2 << 30) as usize,
        spill_dir,
        ctl: command::Control::default(),
    };
    pool::each(job.splits.len(), mappers, &job.ctl, |i| {
        map::map_split(&job, i)
    });
    job.ctl.result()?;
    // A file cut short while mapped reads as zeros: fail rather than
    // reduce them.
    input.check_unchanged()?;
    let name = match a.output.to_str() {
        Some("-") => "standard output".to_string(),
        _ => a.output.display().to_string(),
    };
    reduce::reduce_all(&job, partitions as usize, &mut out, &name);
    job.ctl.result()?;
    out.finish()
}
