//! Soak: one `Runtime` runs every workload round after round, mixed with
//! failing runs (a missing file, a panicking `map`, malformed records, a
//! streamed read that fails or panics half-way). Every result stays equal
//! to the sequential oracle's, and after the first rounds the process's
//! threads and open file descriptors stay exactly level and its resident
//! memory grows by less than [`MAX_RSS_GROWTH_KIB`].
//!
//! Threads and file descriptors are held exactly: leaking one parked
//! thread, or one open `File`, every 50 rounds fails the test.
//!
//! `EMBER_SOAK_ROUNDS` sets the number of rounds (`scripts/soak.sh` runs
//! 1,000); this file holds one test so that no other test's threads or
//! files are counted.

mod workloads;

use std::time::Instant;

use ember::Runtime;
use workloads::{quiet_planned_panics, round, Fixtures};

/// Rounds in CI, unless `EMBER_SOAK_ROUNDS` says otherwise.
const DEFAULT_ROUNDS: usize = 200;
/// Rounds after which the process is warmed up (allocator arenas, lazily
/// started threads, caches): the level every later round is held to.
const WARM_UP_ROUNDS: usize = 10;
/// Growth of the resident set allowed from the end of the warm-up to the
/// last round. Without a leak it grows by under 400 KiB over the default
/// rounds; a leak of 2 KiB a run (4,180 runs after the warm-up) passes the
/// bound. Checked: leaking a 4 KiB `Vec` after each workload run (half the
/// runs) grew it by 8,760 KiB and failed the test.
const MAX_RSS_GROWTH_KIB: u64 = 8 << 10;

/// What the process holds, from `/proc/self`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Usage {
    rss_kib: u64,
    threads: u64,
    fds: usize,
}

fn status_field(status: &str, name: &str) -> u64 {
    let line = status.lines().find(|l| l.starts_with(name)).unwrap();
    let value = line[name.len()..].trim().trim_end_matches(" kB");
    value.parse().unwrap()
}

fn usage() -> Usage {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    Usage {
        rss_kib: status_field(&status, "VmRSS:"),
        threads: status_field(&status, "Threads:"),
        fds: std::fs::read_dir("/proc/self/fd").unwrap().count(),
    }
}

fn rounds() -> usize {
    match std::env::var("EMBER_SOAK_ROUNDS") {
        Ok(n) => n.parse().expect("EMBER_SOAK_ROUNDS is a number of rounds"),
        Err(_) => DEFAULT_ROUNDS,
    }
}

#[test]
fn a_runtime_used_for_many_runs_stays_exact_and_holds_its_threads_fds_and_memory() {
    quiet_planned_panics();
    let rounds = rounds();
    assert!(
        rounds > WARM_UP_ROUNDS,
        "run more than {WARM_UP_ROUNDS} rounds"
    );
    let start = Instant::now();
    let before = usage();
    let fixtures = Fixtures::new("soak");
    let rt = Runtime::builder().threads(3).build().unwrap();
    let mut runs = 0;
    let mut warm = before;
    for r in 1..=rounds {
        runs += round(&rt, &fixtures);
        if r == WARM_UP_ROUNDS {
            warm = usage();
        }
    }
    let end = usage();
    let secs = start.elapsed().as_secs_f64();
    println!("soak: {rounds} rounds, {runs} runs, {secs:.1} s");
    for (when, u) in [("start", before), ("after warm-up", warm), ("end", end)] {
        println!(
            "soak: {when}: RSS {} KiB, {} threads, {} fds",
            u.rss_kib, u.threads, u.fds
        );
    }
    assert_eq!(end.threads, warm.threads, "threads after warm-up");
    assert_eq!(end.fds, warm.fds, "open file descriptors after warm-up");
    let growth = end.rss_kib.saturating_sub(warm.rss_kib);
    assert!(
        growth < MAX_RSS_GROWTH_KIB,
        "RSS grew by {growth} KiB after warm-up (bound {MAX_RSS_GROWTH_KIB} KiB)"
    );
}
