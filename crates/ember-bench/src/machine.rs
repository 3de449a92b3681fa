//! What the machine gave a bench: its CPUs, the CPU time this process
//! used, the time the hypervisor took (steal), and how much compute all
//! CPUs together delivered ([`capacity`]). On a shared VM a 2-thread row
//! can lose its second core to another tenant, or share a physical core
//! with other work; [`around`] says when it did.

use std::time::Instant;

use anyhow::Result;

/// The default "all threads" count: all CPUs.
pub(crate) fn all_threads(t: Option<usize>) -> usize {
    t.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// CPU seconds this process has used so far, user and system, all
/// threads, from `/proc/self/stat` (Linux; 0 elsewhere). On a shared
/// machine CPU time is steadier than wall time for comparing the work two
/// contenders do, and CPU time over wall time x threads is utilization.
pub(crate) fn cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which is in parentheses): utime and
    // stime are the 12th and 13th, in clock ticks (100 per second on Linux).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: f64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}

/// Seconds of steal time summed over all CPUs (`/proc/stat`), if known.
fn steal_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    // "cpu user nice system idle iowait irq softirq steal ...", in ticks of
    // 1/100 s.
    let cpu = stat.lines().next()?;
    let steal: f64 = cpu.split_whitespace().nth(8)?.parse().ok()?;
    Some(steal / 100.0)
}

/// Runs a bench, then says how much CPU time the hypervisor took from this
/// VM meanwhile (steal time), and what [`capacity`] all CPUs together
/// delivered just before and just after it.
pub(crate) fn around(bench: impl FnOnce() -> Result<()>) -> Result<()> {
    let cpus = all_threads(None);
    let (steal, before) = (steal_secs(), capacity(cpus));
    bench()?;
    if let (Some(start), Some(end)) = (steal, steal_secs()) {
        println!(
            "\nsteal     {:.2} s of CPU time taken by the hypervisor during this bench",
            end - start
        );
    }
    let after = capacity(cpus);
    println!(
        "capacity  {cpus} threads vs 1, before and after this bench: compute loop {:.2}x, \
         {:.2}x; latency-bound loop {:.2}x, {:.2}x\n          \
         ({cpus}.00x: {cpus} free cores; the compute loop low but not the latency-bound one: \
         the CPUs shared cores' execution units with other work, as SMT siblings do)",
        before.throughput, after.throughput, before.latency, after.latency
    );
    Ok(())
}

/// What [`capacity`] measured: how many times one thread's rate all
/// threads together reached, on two loops.
struct Capacity {
    /// Independent multiply chains, which keep a core's multiplier busy:
    /// two threads on one physical core (SMT siblings, as a host may place
    /// two vCPUs, or one vCPU beside another tenant's) reach about 1x
    /// together, on two free cores 2x.
    throughput: f64,
    /// One dependent multiply chain, which leaves most of a core idle:
    /// SMT siblings reach about 2x on it as well, so it stays high while
    /// `throughput` drops when the CPUs share a core, and drops with it
    /// when a CPU is not running at all.
    latency: f64,
}

/// `N` independent multiply chains, `rounds` steps each.
fn chains<const N: usize>(rounds: u64) -> [u64; N] {
    let mut h: [u64; N] = std::array::from_fn(|i| i as u64 + 1);
    for _ in 0..rounds {
        for x in &mut h {
            *x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (*x >> 7);
        }
    }
    std::hint::black_box(h)
}

/// The compute loop of [`Capacity::throughput`].
fn wide(rounds: u64) {
    chains::<8>(rounds);
}

/// The latency-bound loop of [`Capacity::latency`].
fn narrow(rounds: u64) {
    chains::<1>(rounds);
}

/// Seconds `f` takes.
fn timed(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

/// How many times one thread's rate `threads` threads reach on `work`,
/// each doing about 20 ms of it.
fn ratio(work: fn(u64), threads: usize) -> f64 {
    let probe = 1 << 16;
    let per_round = timed(|| work(probe)) / probe as f64;
    let rounds = (0.02 / per_round.max(1e-12)) as u64;
    let alone = timed(|| work(rounds));
    let together = timed(|| {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| work(rounds));
            }
        })
    });
    threads as f64 * alone / together.max(1e-12)
}

/// Measures [`Capacity`] on `threads` threads, about 0.1 s.
fn capacity(threads: usize) -> Capacity {
    Capacity {
        throughput: ratio(wide, threads),
        latency: ratio(narrow, threads),
    }
}
