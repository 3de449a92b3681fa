//! `ember stream`: the built-in jobs as the mapper, combiner and reducer of
//! an engine that moves `key<TAB>value` lines (Hadoop Streaming, Spark's
//! `pipe`, a shell pipeline), and `ember stream run`, that engine on all
//! cores for commands of any language.

use anyhow::Result;
use clap::{Args, Subcommand};
use ember::stream::Role;

use crate::common::RunArgs;

mod job;
mod run;

pub(crate) use run::kill_children;

/// The streaming contract's roles.
#[derive(Subcommand)]
pub(crate) enum Stream {
    /// Map standard input: one `key<TAB>partial` line per distinct key,
    /// combined over all the input (not one line per record), sorted by the
    /// key's text (histogram and sort read it whole: one image, one block
    /// of records).
    Map(MapArgs),
    /// Fold `key<TAB>partial` lines, in any order, into one line per key.
    Combine(FoldArgs),
    /// Fold `key<TAB>partial` lines sorted by key (byte order, as Hadoop's
    /// shuffle and `LC_ALL=C sort` sort them) into `key<TAB>result` lines.
    Reduce(FoldArgs),
    /// List the jobs and what their lines hold.
    Jobs,
    /// Run a whole job on all cores: split the files at line boundaries,
    /// one mapper process per split, sort and partition its
    /// `key<TAB>value` lines by key, one reducer process per partition.
    Run(run::Args),
    /// Run a built-in job over files in this process, or with --isolate
    /// each split mapped in worker processes (a crash is
    /// retried, then named); `key<TAB>output` lines on standard output.
    Job(job::Args),
}

/// `ember stream map`.
#[derive(Args)]
pub(crate) struct MapArgs {
    #[command(flatten)]
    run: RunArgs,
    /// The job (`ember stream jobs` lists them).
    job: String,
    /// The job's own arguments (inverted-index: --doc NAME).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    job_args: Vec<String>,
}

/// `ember stream combine` and `ember stream reduce`.
#[derive(Args)]
pub(crate) struct FoldArgs {
    /// The job (`ember stream jobs` lists them).
    job: String,
    /// The job's own arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    job_args: Vec<String>,
}

/// Runs an `ember stream` command.
pub(crate) fn run(cmd: Stream) -> Result<()> {
    let registry = ember_apps::stream::registry();
    match cmd {
        Stream::Map(a) => {
            let job = registry.job(&a.job, &a.job_args)?;
            let runtime = a.run.runtime()?;
            let stats = ember::stream::run(job.as_ref(), Role::Map, &runtime, &a.run.options())?;
            if let Some(stats) = stats {
                a.run.report(&stats)?;
            }
        }
        Stream::Combine(a) => fold(&registry, Role::Combine, &a)?,
        Stream::Reduce(a) => fold(&registry, Role::Reduce, &a)?,
        Stream::Jobs => {
            let width = registry.jobs().map(|(name, _)| name.len()).max();
            for (name, about) in registry.jobs() {
                println!("{name:<w$}  {about}", w = width.unwrap_or(0));
            }
        }
        Stream::Run(a) => run::run(a)?,
        Stream::Job(a) => job::run(a, &registry)?,
    }
    Ok(())
}

fn fold(registry: &ember::stream::Registry, role: Role, a: &FoldArgs) -> Result<()> {
    let job = registry.job(&a.job, &a.job_args)?;
    let runtime = ember::Runtime::builder().threads(1).build()?;
    ember::stream::run(job.as_ref(), role, &runtime, &ember::RunOptions::default())?;
    Ok(())
}
