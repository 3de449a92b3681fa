//! [`Runtime::run_registered`]: a job of a [`Registry`], run by name as the
//! runtime's [`Isolation`] says, on its threads or in worker processes.

use std::io::Write;
use std::path::PathBuf;

use super::{run, Options, Report};
use crate::error::Result;
use crate::input::Input;
use crate::options::RunOptions;
use crate::runtime::{Isolation, Runtime};
use crate::stream::{MapInput, Registry, StreamJob};

impl Runtime {
    /// Runs the job `name` of `registry`, made from `args`, over `files`
    /// and writes its reduce output to `out`: `key<TAB>output` lines in
    /// the order of the keys' text, whichever the isolation. On this
    /// runtime's threads ([`Isolation::Threads`]), or in worker processes
    /// ([`Isolation::Processes`]) as [`run`] runs them, with the runtime's
    /// threads as the workers at once, its split size and its
    /// [worker retries](crate::RuntimeBuilder::worker_retries); then the
    /// workers' [`Report`] is returned.
    ///
    /// With processes, the workers are this program re-executed, so its
    /// `main` must hand the same registry to
    /// [`worker_hook`](super::worker_hook) first thing:
    ///
    /// ```no_run
    /// # fn my_jobs() -> ember::stream::Registry { ember::stream::Registry::new() }
    /// fn main() -> ember::Result<()> {
    ///     let registry = my_jobs();
    ///     ember::isolate::worker_hook(&registry); // a worker does its task and exits here
    ///     let runtime = ember::Runtime::builder()
    ///         .isolation(ember::Isolation::Processes)
    ///         .build()?;
    ///     let mut out = Vec::new();
    ///     let files = [std::path::PathBuf::from("big.txt")];
    ///     runtime.run_registered(&registry, "wordcount", &[], &files, &mut out)?;
    ///     Ok(())
    /// }
    /// ```
    pub fn run_registered(
        &self,
        registry: &Registry,
        name: &str,
        args: &[String],
        files: &[PathBuf],
        out: &mut dyn Write,
    ) -> Result<Option<Report>> {
        match self.isolation() {
            Isolation::Threads => {
                let job = registry.job(name, args)?;
                in_threads(self, job.as_ref(), files, out).map(|()| None)
            }
            Isolation::Processes => {
                let (memory_limit, spill_dir) = self.memory_settings();
                let opts = Options {
                    workers: self.threads(),
                    retries: self.worker_retries(),
                    split_size: self.default_split_size().map(|s| s as u64),
                    memory_limit,
                    spill_dir: spill_dir.cloned(),
                    ..Options::default()
                };
                run(registry, name, args, files, &opts, out).map(Some)
            }
        }
    }
}

/// `job` mapped on `runtime`'s threads, then reduced; a job whose map
/// takes its input whole maps each non-empty file on its own, as the
/// worker processes do, and combine sorts and folds their outputs.
fn in_threads(
    runtime: &Runtime,
    job: &dyn StreamJob,
    files: &[PathBuf],
    out: &mut dyn Write,
) -> Result<()> {
    let opts = RunOptions::default();
    let mut mapped = Vec::new();
    if job.map_input() == MapInput::Whole {
        for file in files {
            let input = Input::in_memory([file])?;
            if !input.is_empty() {
                job.map(runtime, &input, &opts, &mut mapped)?;
            }
        }
        let mut combined = Vec::new();
        job.combine("<map output>", &mut &mapped[..], &mut combined)?;
        mapped = combined;
    } else {
        job.map(runtime, &Input::files(files)?, &opts, &mut mapped)?;
    }
    job.reduce("<map output>", &mut &mapped[..], out)
}
