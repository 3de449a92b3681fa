//! The reduce side: one reducer per partition, fed the merge of the
//! partition's runs, its output sent to an unnamed temporary file and
//! copied to the job's output in partition order as soon as every earlier
//! partition's is.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::thread;

use anyhow::{Context, Result};

use super::command::{self, Control, Role, Task};
use super::pool;
use super::Job;

/// Runs every partition's reducer, at most `width` at once, and writes
/// their outputs to `out` (named `name` in errors) in partition order.
/// Failures are recorded in `job.ctl`.
pub(super) fn reduce_all(job: &Job<'_>, width: usize, out: &mut dyn Write, name: &str) {
    let (tx, rx) = mpsc::channel::<(usize, File)>();
    let partitions = job.partitions as usize;
    thread::scope(|s| {
        s.spawn(move || {
            pool::each(partitions, width, &job.ctl, |p| {
                let file = reduce(job, p)?;
                // The receiver outlives the pool: a send cannot fail.
                let _ = tx.send((p, file));
                Ok(())
            })
        });
        write_in_order(rx, out, name, &job.ctl);
    });
}

/// Runs partition `p`'s reducer; returns its output.
fn reduce(job: &Job<'_>, p: usize) -> Result<File> {
    let dir = &job.spill_dir;
    let out = tempfile::tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in '{}'", dir.display()))?;
    let task = Task {
        role: Role::Reducer,
        cmd: &job.reducer,
        what: format!("partition {p}"),
        env: vec![
            ("mapreduce_task_partition", p.to_string()),
            ("mapreduce_task_ismap", "false".to_string()),
        ],
    };
    let stdout = Stdio::from(out.try_clone().context("cannot open a temporary file")?);
    let feed = |w: &mut dyn Write| job.shuffle.merge(p, w);
    command::run(&task, &job.ctl, stdout, feed, |_| Ok(()))?;
    Ok(out)
}

/// Copies the reducers' outputs, as they arrive on `rx`, to `out` in
/// partition order; stops copying at the first failure.
fn write_in_order(
    rx: mpsc::Receiver<(usize, File)>,
    out: &mut dyn Write,
    name: &str,
    ctl: &Control,
) {
    let mut ready = BTreeMap::new();
    let mut next = 0;
    for (p, file) in rx {
        ready.insert(p, file);
        while let Some(mut file) = ready.remove(&next) {
            next += 1;
            if ctl.failed() {
                continue;
            }
            let copied = file.rewind().and_then(|()| io::copy(&mut file, out));
            if let Err(e) = copied {
                ctl.fail(anyhow::Error::new(e).context(format!("cannot write '{name}'")));
            }
        }
    }
}
