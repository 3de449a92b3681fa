//! `ember-bench isolate --perf`: a contender run once more under `perf
//! record -g` (the software `cpu-clock` event, which a VM without
//! hardware counters has too; children followed, as `perf record` does by
//! default), and the share of its samples in the kernel, in the
//! page-fault path and in lock contention, from `perf report --children`.

use std::ffi::OsString;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::rss;

/// The page fault's entry points: their inclusive share is the fault
/// path's (the larger, as one calls the other).
const FAULT_ENTRIES: [&str; 2] = ["asm_exc_page_fault", "exc_page_fault"];
/// Where a contended lock spins or queues: their own samples add up to
/// the time lost waiting (spinlocks, the mmap lock's rwsem, mutexes).
const LOCK_WAITS: [&str; 11] = [
    "native_queued_spin_lock_slowpath",
    "__pv_queued_spin_lock_slowpath",
    "queued_read_lock_slowpath",
    "queued_write_lock_slowpath",
    "osq_lock",
    "rwsem_optimistic_spin",
    "rwsem_spin_on_owner",
    "rwsem_down_read_slowpath",
    "rwsem_down_write_slowpath",
    "mutex_spin_on_owner",
    "__mutex_lock",
];
/// A fault that could not take its VMA's own lock and took the process's
/// mmap lock: its inclusive share.
const MMAP_LOCK_FAULT: &str = "lock_mm_and_find_vma";

/// Shares of a run's samples, in percent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Profile {
    /// In the kernel (the `[k]` symbols' own samples).
    pub(crate) kernel: f64,
    /// In the page-fault path, inclusive.
    pub(crate) faults: f64,
    /// Spinning or queueing on a contended lock.
    pub(crate) lock_waits: f64,
    /// In faults that fell back to the mmap lock, inclusive.
    pub(crate) mmap_lock_faults: f64,
}

/// Whether `perf` runs here: `None` if it does, else why not.
pub(crate) fn unavailable() -> Option<String> {
    match Command::new("perf").arg("--version").output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "perf --version failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Some(format!("perf: {e}")),
    }
}

/// Runs the `ember` command ([`rss::ember`]) with `args` under `perf
/// record -g`, its standard output dropped, and profiles it.
pub(crate) fn profile(args: &[OsString]) -> Result<Profile> {
    let dir = tempfile::tempdir().context("a folder for perf's data")?;
    let data = dir.path().join("perf.data");
    let exe = rss::ember()?;
    let status = Command::new("perf")
        .args(["record", "-q", "-g", "-e", "cpu-clock", "-o"])
        .arg(&data)
        .arg("--")
        .arg(exe)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .context("running perf record")?;
    if !status.success() {
        bail!("perf record failed ({status})");
    }
    let report = Command::new("perf")
        .args(["report", "--stdio", "--children", "--sort", "symbol"])
        .args(["-g", "none", "--percent-limit", "0", "-i"])
        .arg(&data)
        .stderr(Stdio::null())
        .output()
        .context("running perf report")?;
    if !report.status.success() {
        bail!("perf report failed ({})", report.status);
    }
    Ok(parse(&String::from_utf8_lossy(&report.stdout)))
}

/// The shares in the text of `perf report --stdio --children --sort
/// symbol`: lines of `children% self% [k] symbol ...` (`[.]` for user
/// space), comments starting with `#`.
fn parse(report: &str) -> Profile {
    let mut p = Profile::default();
    for line in report.lines().filter(|l| !l.starts_with('#')) {
        let mut fields = line.split_whitespace();
        let (Some(children), Some(own), Some(space), Some(symbol)) = (
            fields.next().and_then(percent),
            fields.next().and_then(percent),
            fields.next(),
            fields.next(),
        ) else {
            continue;
        };
        if space == "[k]" {
            p.kernel += own;
        }
        if FAULT_ENTRIES.contains(&symbol) {
            p.faults = p.faults.max(children);
        }
        if LOCK_WAITS.contains(&symbol) {
            p.lock_waits += own;
        }
        if symbol == MMAP_LOCK_FAULT {
            p.mmap_lock_faults = children;
        }
    }
    p
}

/// `12.34%` as 12.34.
fn percent(field: &str) -> Option<f64> {
    field.strip_suffix('%')?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from `perf report --stdio --children --sort symbol -g none`
    /// (perf 6.1) of a process that faults in fresh memory, cut short, with
    /// lock lines from another capture.
    const REPORT: &str = "\
# To display the perf.data header info, please use --header/--header-only options.
#
# Samples: 1K of event 'cpu-clock'
# Event count (approx.): 375250000
#
# Children      Self  Symbol                                         IPC   [IPC Coverage]
# ........  ........  .............................................  ....................
#
    55.43%     0.00%  [k] asm_exc_page_fault                         -      -            
    55.23%    11.46%  [k] exc_page_fault                             -      -            
    53.23%     4.53%  [.] __memset_avx512_unaligned_erms             -      -            
    41.37%     0.87%  [k] handle_mm_fault                            -      -            
    19.12%     0.13%  [k] do_syscall_64                              -      -            
     8.06%     8.06%  [k] _raw_spin_unlock_irqrestore                -      -            
     7.99%     7.99%  [k] clear_page_erms                            -      -            
     3.10%     2.50%  [k] native_queued_spin_lock_slowpath           -      -            
     1.20%     0.40%  [k] lock_mm_and_find_vma                       -      -            
     0.90%     0.90%  [k] osq_lock                                   -      -            
     0.50%     0.50%  [.] main                                       -      -            
";

    #[test]
    fn a_report_gives_the_fault_path_inclusive_and_lock_waits_exclusive() {
        let p = parse(REPORT);
        assert!((p.faults - 55.43).abs() < 1e-9, "{p:?}");
        assert!((p.lock_waits - 3.40).abs() < 1e-9, "{p:?}");
        assert!((p.mmap_lock_faults - 1.20).abs() < 1e-9, "{p:?}");
        let kernel = 11.46 + 0.87 + 0.13 + 8.06 + 7.99 + 2.50 + 0.40 + 0.90;
        assert!((p.kernel - kernel).abs() < 1e-9, "{p:?}");
    }

    #[test]
    fn a_report_without_samples_is_all_zero() {
        assert_eq!(parse("# Samples: 0\n#\n\nerror line\n"), Profile::default());
    }
}
