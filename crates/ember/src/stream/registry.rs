//! Jobs by name ([`Registry`]), the role a process plays ([`Role`]), and
//! the entry points that run a role over standard input and output.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use super::contract::StreamJob;
use crate::derive::names;
use crate::error::{Error, Result};
use crate::options::RunOptions;
use crate::runtime::Runtime;
use crate::stats::Stats;

/// Makes a job from its arguments (the words after the job's name), or
/// says what is wrong with them.
pub type Factory =
    Box<dyn Fn(&[String]) -> std::result::Result<Box<dyn StreamJob>, String> + Send + Sync>;

/// Jobs the streaming contract can run, by name.
///
/// ```
/// use ember::stream::{Folding, Registry};
/// # use ember::{Bytes, Emit, Job, MapResult, Split, Sum};
/// # struct Lines;
/// # impl Job for Lines {
/// #     type Key = Bytes; type Value = u64; type Combiner = Sum; type Out = u64;
/// #     fn map<E: Emit<Bytes, u64>>(&self, s: Split<'_>, e: &mut E) -> MapResult {
/// #         for l in s.data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) { e.emit(l, 1) }
/// #         Ok(())
/// #     }
/// #     fn reduce(&self, _: &Bytes, n: u64) -> u64 { n }
/// # }
///
/// let mut registry = Registry::new();
/// registry.register("lines", "count distinct lines", |_args| Ok(Box::new(Folding(Lines))));
/// assert!(registry.job("lines", &[]).is_ok());
/// assert!(registry.job("words", &[]).is_err());
/// ```
#[derive(Default)]
pub struct Registry {
    jobs: BTreeMap<String, (String, Factory)>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.jobs.keys()).finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the job `name`, described in a line by `about`.
    pub fn register(
        &mut self,
        name: &str,
        about: &str,
        make: impl Fn(&[String]) -> std::result::Result<Box<dyn StreamJob>, String>
            + Send
            + Sync
            + 'static,
    ) -> &mut Self {
        self.jobs
            .insert(name.to_owned(), (about.to_owned(), Box::new(make)));
        self
    }

    /// The job `name` made from `args`.
    pub fn job(&self, name: &str, args: &[String]) -> Result<Box<dyn StreamJob>> {
        let (_, make) = self.jobs.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.jobs.keys().map(String::as_str).collect();
            Error::Config(format!(
                "unknown job '{name}' (known: {})",
                known.join(", ")
            ))
        })?;
        make(args).map_err(|e| Error::Config(format!("{name}: {e}")))
    }

    /// Every job's name and description, by name.
    pub fn jobs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.jobs
            .iter()
            .map(|(name, (about, _))| (name.as_str(), about.as_str()))
    }
}

/// The part a process plays in the streaming contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// Input records in, one partial aggregate per distinct key out.
    Map,
    /// Partial aggregates in any order in, one per key out.
    Combine,
    /// Partial aggregates sorted by key in, final results out.
    Reduce,
}

names!(Role, "role" {
    Map => "map",
    Combine => "combine",
    Reduce => "reduce",
});

/// Runs `job` in `role` over standard input, writing standard output:
/// `map` on `runtime`'s workers with `opts` (its stats returned), over
/// standard input streamed or read whole as [`StreamJob::map_input`] says,
/// `combine` and `reduce` on this thread.
pub fn run(
    job: &dyn StreamJob,
    role: Role,
    runtime: &Runtime,
    opts: &RunOptions,
) -> Result<Option<Stats>> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let stats = match role {
        Role::Map => {
            let input = job.map_input().input("<stdin>", std::io::stdin())?;
            Some(job.map(runtime, &input, opts, &mut out)?)
        }
        Role::Combine => job
            .combine("<stdin>", &mut std::io::stdin().lock(), &mut out)
            .map(|()| None)?,
        Role::Reduce => job
            .reduce("<stdin>", &mut std::io::stdin().lock(), &mut out)
            .map(|()| None)?,
    };
    out.flush().map_err(|e| Error::io("<stdout>", e))?;
    Ok(stats)
}

/// The `main` of a program that runs its own jobs in the streaming
/// contract (as mapper, combiner and reducer of Hadoop Streaming or
/// Spark's `pipe`):
///
/// ```text
/// PROGRAM (map|combine|reduce) [--threads N] JOB [JOB ARGUMENTS...]
/// ```
///
/// An error is one line on standard error and exit status 1; a usage
/// error exits with 2.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     let registry = ember::stream::Registry::new(); // register jobs here
///     ember::stream::main(&registry)
/// }
/// ```
pub fn main(registry: &Registry) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let asked = match parse_args(&args) {
        Ok(parsed) => parsed,
        Err(usage) => {
            eprintln!("{usage}");
            let jobs: Vec<&str> = registry.jobs().map(|(name, _)| name).collect();
            eprintln!(
                "usage: (map|combine|reduce) [--threads N] JOB [ARGS...]; jobs: {}",
                jobs.join(", ")
            );
            return ExitCode::from(2);
        }
    };
    let result = registry.job(asked.job, asked.args).and_then(|job| {
        let mut builder = Runtime::builder();
        if let Some(n) = asked.threads {
            builder = builder.threads(n);
        }
        let runtime = builder.build()?;
        run(job.as_ref(), asked.role, &runtime, &RunOptions::default()).map(drop)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What a streaming program was asked to do:
/// `ROLE [--threads N] JOB [ARGS...]`.
#[derive(Debug, PartialEq)]
struct Invocation<'a> {
    role: Role,
    threads: Option<usize>,
    job: &'a str,
    args: &'a [String],
}

fn parse_args(args: &[String]) -> std::result::Result<Invocation<'_>, String> {
    let (role, mut rest) = args.split_first().ok_or("no role given")?;
    let role: Role = role.parse().map_err(|e: Error| e.to_string())?;
    let mut threads = None;
    if rest.first().map(String::as_str) == Some("--threads") {
        let n = rest.get(1).ok_or("--threads needs a number")?;
        threads = Some(
            n.parse()
                .map_err(|_| format!("--threads: not a number: '{n}'"))?,
        );
        rest = &rest[2..];
    }
    let (job, args) = rest.split_first().ok_or("no job given")?;
    Ok(Invocation {
        role,
        threads,
        job,
        args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_name_the_role_threads_job_and_its_arguments() {
        let args = strings(&["reduce", "--threads", "3", "wc", "--doc", "a"]);
        let doc = strings(&["--doc", "a"]);
        let want = Invocation {
            role: Role::Reduce,
            threads: Some(3),
            job: "wc",
            args: &doc,
        };
        assert_eq!(parse_args(&args), Ok(want));
        assert!(parse_args(&strings(&["shuffle", "wc"]))
            .unwrap_err()
            .contains("unknown role"));
        assert!(parse_args(&strings(&["map"]))
            .unwrap_err()
            .contains("no job"));
        assert!(parse_args(&strings(&["map", "--threads", "x", "wc"])).is_err());
    }
}
