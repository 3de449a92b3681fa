//! The peak resident memory of one bench row.
//!
//! The bench's contenders run in this one process, interleaved, so the
//! process's lifetime peak (`getrusage`'s `ru_maxrss`, monotone) would
//! give every row the largest row's figure. Instead, before each run the
//! heap's free memory is handed back to the system (`malloc_trim`) and the
//! kernel's peak-RSS mark is reset to the current RSS
//! (`/proc/self/clear_refs` "5", Linux); after the run `VmHWM` is that
//! run's own peak, on top of what the bench itself keeps resident (its
//! inputs' oracles, the runtimes' idle threads), which [`Peak::base`]
//! reports. A mapped input counts while it is mapped, as in any process.
//! A contender that runs as a child process reports the child's own peak
//! instead ([`run_child`], and [`run_ember`] for the `ember` command).

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::Instant;

use anyhow::{ensure, Context, Result};

/// A run's memory: the RSS it started from and its peak, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Peak {
    /// RSS when the run started (after the trim and the reset).
    pub(crate) base: u64,
    /// The highest RSS during the run.
    pub(crate) peak: u64,
}

/// Starts a run's measurement: trims the heap, resets the peak mark and
/// returns the RSS now (`None` where the kernel has no such interface).
pub(crate) fn start() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the system; it
    // takes no pointer and is safe to call at any time.
    unsafe {
        libc::malloc_trim(0);
    }
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    status_kib("VmRSS:").map(|k| k * 1024)
}

/// Ends a run's measurement begun by [`start`] (which returned `base`).
pub(crate) fn finish(base: Option<u64>) -> Option<Peak> {
    let peak = status_kib("VmHWM:")? * 1024;
    Some(Peak { base: base?, peak })
}

/// A `kB` field of `/proc/self/status`.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}

/// Runs `cmd` to completion with its standard output and error captured,
/// and returns its output and its own peak RSS.
pub(crate) fn run_child(cmd: &mut Command) -> Result<(Output, Option<u64>)> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    // The reference writes a line or two: reading one pipe to its end
    // before the other cannot fill the other.
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_end(&mut stdout)?;
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_end(&mut stderr)?;
    let (status, usage) = wait(child.id())?;
    let output = Output {
        status: ExitStatus::from_raw(status),
        stdout,
        stderr,
    };
    Ok((output, peak_of(&usage)))
}

/// Waits for child `pid` (not waited for yet): its wait status and
/// resource usage.
pub(crate) fn wait(pid: u32) -> Result<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value (integers and
    // timevals); `wait4` writes both out-parameters, which live for the
    // call, for a child of this process that has not been waited for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let got = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut usage) };
    if got < 0 {
        return Err(std::io::Error::last_os_error()).context("waiting for a child process");
    }
    Ok((status, usage))
}

/// The `ember` command, which some benches time as a child process: the
/// binary beside this one (`cargo build` puts both in the target folder
/// of its profile).
pub(crate) fn ember() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the ember-bench binary")?;
    let ember = exe.with_file_name("ember");
    ensure!(
        ember.is_file(),
        "this bench runs the `ember` command, and there is none beside ember-bench \
         ('{}'): build it with `cargo build -p ember-cli` (with --release for a \
         release ember-bench)",
        ember.display()
    );
    Ok(ember)
}

/// A run of the `ember` command as a child, its standard output dropped:
/// wall and CPU seconds and its resource usage.
pub(crate) struct EmberRun {
    pub(crate) secs: f64,
    pub(crate) cpu: f64,
    pub(crate) usage: libc::rusage,
}

/// Runs the `ember` command ([`ember()`]) with `args` as a child process,
/// its standard output dropped and its standard error shown; an error if
/// it fails.
pub(crate) fn run_ember(args: &[&std::ffi::OsStr]) -> Result<EmberRun> {
    let exe = ember()?;
    let start = Instant::now();
    let spawned = Command::new(exe)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()?;
    let (status, usage) = wait(spawned.id())?;
    let secs = start.elapsed().as_secs_f64();
    if status != 0 {
        let words: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
        anyhow::bail!("ember {} failed (wait status {status})", words.join(" "));
    }
    let cpu = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    Ok(EmberRun { secs, cpu, usage })
}

/// A `timeval` in seconds.
pub(crate) fn seconds(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// A child's peak RSS in bytes from its resource usage (Linux gives
/// `ru_maxrss` in KiB).
pub(crate) fn peak_of(usage: &libc::rusage) -> Option<u64> {
    u64::try_from(usage.ru_maxrss).ok().map(|kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn a_run_s_peak_covers_what_it_touched_and_not_an_earlier_run_s() {
        const MIB: usize = 1 << 20;
        // The RSS while `mib` MiB are live. Other tests of this process
        // allocate and free meanwhile, so the run's base is no bound on
        // it: the RSS seen with the block live is.
        let touch = |mib: usize| {
            let v = vec![1u8; mib * MIB];
            std::hint::black_box(&v);
            status_kib("VmRSS:").map(|k| k * 1024)
        };
        touch(512);
        let base = start();
        let during = touch(16);
        let (Some(p), Some(during)) = (finish(base), during) else {
            return; // no clear_refs on this kernel
        };
        // The kernel sums its per-CPU RSS counters approximately (a few
        // hundred KiB apart here), far less than the 16 MiB touched.
        let slack = 2 * MIB as u64;
        assert!(p.peak + slack >= during, "{p:?}, {during} while live");
        // Far below the earlier 512 MiB.
        assert!(p.peak < p.base + 256 * MIB as u64, "{p:?}");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_child_s_peak_is_its_own() {
        let (out, peak) = run_child(Command::new("sh").args(["-c", "echo hi"])).unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, b"hi\n");
        assert!(peak.is_some_and(|p| p > 0 && p < 1 << 30));
    }
}
