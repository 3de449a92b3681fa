//! `ember-bench numa`: the NUMA-aware schedule (one split queue per node,
//! stealing nearest first) against one shared queue, on word count and
//! string match over memory-mapped files.
//!
//! On simulated nodes (the default: `--nodes` nodes dealt over this
//! machine's CPUs) the rows are one queue on one node (the schedule of a
//! one-node machine), per-node queues, and one queue over the same nodes
//! (blind): the cost of the queues, which should be noise. With
//! `--machine` the machine's own topology, aware against blind: on a
//! multi-node machine (or VM) the hit rates and steals say where each
//! split ran; the inputs are first copied so that their pages are spread
//! over the nodes in 1 MiB stripes (a generated file sits on the node of
//! the thread that wrote it). Under each table, every row's locality per
//! node (from its median run), the input's share of map time, and the cost
//! of asking the kernel which node holds a page.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{ensure, Result};
use clap::Args as ClapArgs;
use ember::tune::parse_size;
use ember::tune::{Ingest, Locality, Topology};
use ember::{Input, RunOptions, Runtime, Stats};
use ember_apps::string_match::{self, KeysSpec, Targets};
use ember_apps::text::TextSpec;
use ember_apps::wordcount::WordCount;
use ember_cli::inputs;

use crate::harness::{measure, print_table, Contender, Measured, Row};
use crate::machine::all_threads;
use crate::versus::warm;
use crate::BenchArgs;

/// `ember-bench numa`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help("Worker threads (default: all CPUs)")))]
pub(crate) struct Args {
    /// Simulated nodes over this machine's CPUs.
    #[arg(long, default_value_t = 2)]
    nodes: usize,
    /// The machine's own topology (aware vs blind) instead of simulated
    /// nodes.
    #[arg(long)]
    machine: bool,
    /// Input size of each workload.
    #[arg(long, value_parser = parse_size, default_value = "64MiB")]
    size: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

/// A row: its name, topology and locality.
type Setup = (String, Topology, Locality);

/// Runs `ember-bench numa`.
pub(crate) fn run(a: Args) -> Result<()> {
    let threads = all_threads(a.bench.threads);
    let setups: Vec<Setup> = match a.machine {
        true => {
            let t = Topology::detect();
            let n = t.nodes();
            vec![
                (
                    format!("blind, one queue, {n} nodes"),
                    t.clone(),
                    Locality::Blind,
                ),
                (
                    format!("aware, per-node queues, {n} nodes"),
                    t,
                    Locality::Aware,
                ),
            ]
        }
        false => {
            let n = a.nodes;
            let sim = || Topology::simulated(n);
            vec![
                (
                    "one queue, 1 node".into(),
                    Topology::simulated(1),
                    Locality::Aware,
                ),
                (
                    format!("per-node queues, {n} nodes"),
                    sim(),
                    Locality::Aware,
                ),
                (
                    format!("one queue, {n} nodes (blind)"),
                    sim(),
                    Locality::Blind,
                ),
            ]
        }
    };
    let runtimes = setups
        .iter()
        .map(|(_, t, l)| {
            let b = Runtime::builder().threads(threads).topology(t.clone());
            Ok(b.locality(*l).build()?)
        })
        .collect::<Result<Vec<_>>>()?;
    println!("topology: {:?}", runtimes.last().map(Runtime::topology));

    let text = inputs::text(&TextSpec {
        size: a.size,
        ..TextSpec::default()
    })
    .cached()?;
    let keys_spec = KeysSpec {
        size: a.size,
        ..KeysSpec::default()
    };
    let keys = inputs::keys(&keys_spec).cached()?;
    let (text, keys) = match a.machine {
        true => {
            let t = runtimes[0].topology();
            (spread(&text, t)?, spread(&keys, t)?)
        }
        false => (text, keys),
    };
    warm(&[&text, &keys])?;
    let targets = Targets::new(&keys_spec.plant)?;

    let word_count = |rt: &Runtime| -> Result<Stats> {
        let input = Input::file(&text)?;
        Ok(rt.run(&WordCount::new(), &input)?.stats)
    };
    let string_match = |rt: &Runtime| -> Result<Stats> {
        let opts = RunOptions::default();
        let input = Input::open([&keys], Ingest::Mmap)?;
        Ok(string_match::run_input(rt, &input, &targets, &opts)?.1)
    };
    let read = read_secs_per_byte(&text)?;
    println!(
        "one thread reads the mapped text at {:.2} GB/s",
        1e-9 / read
    );
    let workload = |name, file| Workload { name, file, read };
    let runs = a.bench.runs;
    let text_load = workload("word count", &text);
    bench_one(text_load, &setups, &runtimes, runs, word_count)?;
    let keys_load = workload("string match", &keys);
    bench_one(keys_load, &setups, &runtimes, runs, string_match)?;
    print_page_query_costs(&text)
}

/// Stripe of a spread file.
const STRIPE: usize = 1 << 20;

/// A copy of `file` whose page-cache pages are spread over `t`'s nodes:
/// stripe `k` (of [`STRIPE`] bytes) written, so first touched, by a thread
/// bound to node `k mod nodes` (a generated input is written by one thread,
/// so all of it sits on one node). Written afresh each run.
fn spread(file: &Path, t: &Topology) -> Result<PathBuf> {
    use std::os::unix::fs::FileExt;
    let out = file.with_extension("spread");
    let _ = std::fs::remove_file(&out);
    let input = Input::file(file)?;
    let data = input.part_bytes(0);
    let dest = std::fs::File::create(&out)?;
    dest.set_len(data.len() as u64)?;
    let nodes = t.nodes();
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..nodes)
            .map(|node| {
                let (dest, cpus) = (&dest, t.cpus(node));
                s.spawn(move || -> std::io::Result<()> {
                    bind(cpus);
                    let stripes = data.chunks(STRIPE).enumerate();
                    for (k, stripe) in stripes.skip(node).step_by(nodes) {
                        dest.write_all_at(stripe, (k * STRIPE) as u64)?;
                    }
                    Ok(())
                })
            })
            .collect();
        let mut joined = writers.into_iter().map(|w| w.join());
        joined.try_for_each(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })?;
    Ok(out)
}

/// Binds the calling thread to `cpus` (a hint: on failure it runs anywhere).
fn bind(cpus: &[usize]) {
    // SAFETY: a zeroed CPU set with the given bits set (CPU_SET ignores
    // numbers past the set's size), passed with its size; the call only
    // reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Seconds one thread takes per byte to read a mapped, cached file (a sum
/// of its 8-byte words: a split's input traffic and nothing else), the
/// best of 3 passes.
fn read_secs_per_byte(file: &Path) -> Result<f64> {
    let input = Input::file(file)?;
    let data = input.part_bytes(0);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = Instant::now();
        let words = data
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()));
        std::hint::black_box(words.fold(0u64, u64::wrapping_add));
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best / data.len().max(1) as f64)
}

/// A job's input traffic per split and the share of its map time that a
/// plain read of that input takes (what locality can speed up), from a
/// run's stats.
fn print_traffic(stats: &Stats, read: f64) {
    let bytes = stats.input_bytes as f64;
    let busy: f64 = stats.map_busy_secs.iter().sum();
    println!(
        "  input traffic: {} splits of {:.0} KiB on average; map {:.2} ns/byte (worker time), \
         a plain read {:.2} ns/byte: the input read is {:.0}% of map time",
        stats.splits,
        bytes / stats.splits.max(1) as f64 / 1024.0,
        busy / bytes * 1e9,
        read * 1e9,
        100.0 * read * bytes / busy.max(f64::MIN_POSITIVE)
    );
}

/// A workload of the comparison: its name, its input file, and the
/// seconds one thread takes per byte to read a mapped, cached input (what
/// its map time is set against).
struct Workload<'a> {
    name: &'a str,
    file: &'a Path,
    read: f64,
}

/// Times `job` on every row's runtime (`runtimes[i]` built for
/// `setups[i]`) and prints the table and each row's locality. Every run
/// must give the first run's output size.
fn bench_one(
    workload: Workload<'_>,
    setups: &[Setup],
    runtimes: &[Runtime],
    runs: Option<usize>,
    job: impl Fn(&Runtime) -> Result<Stats>,
) -> Result<()> {
    let Workload { name, file, read } = workload;
    let want = job(&runtimes[0])?.output_pairs;
    let contenders = setups
        .iter()
        .zip(runtimes)
        .map(|((row, ..), rt)| {
            let job = &job;
            Contender::new(row.clone(), move || {
                Measured::of(|| {
                    let stats = job(rt)?;
                    ensure!(stats.output_pairs == want, "{row}: another output");
                    Ok(Some(stats))
                })
            })
        })
        .collect();
    let rows = measure(runs, contenders)?;
    let mb = std::fs::metadata(file)?.len() as f64 / 1e6;
    let threads = runtimes[0].threads();
    print_table(
        &format!("numa: {name}, {mb:.0} MB, {threads} threads"),
        mb,
        "MB",
        &rows,
    );
    for row in &rows {
        print_locality(row);
    }
    if let Some(stats) = &rows[0].median_run().stats {
        print_traffic(stats, read);
    }
    Ok(())
}

/// One line per node of a row's median run: tasks, steals, hit rate.
fn print_locality(row: &Row) {
    let Some(stats) = &row.median_run().stats else {
        return;
    };
    if stats.nodes.is_empty() {
        println!("  {}: one node, no per-node tallies", row.name);
        return;
    }
    let (hits, tasks) = stats
        .nodes
        .iter()
        .fold((0, 0), |(h, t), n| (h + n.data_local, t + n.tasks));
    println!(
        "  {}: hit rate {:.1}% of {tasks} tasks",
        row.name,
        100.0 * hits as f64 / tasks.max(1) as f64
    );
    for (i, n) in stats.nodes.iter().enumerate() {
        println!(
            "    node {i}: {} tasks ({} local, {} stolen), {} with local data ({:.1}%), {} splits' data here",
            n.tasks,
            n.local(),
            n.stolen,
            n.data_local,
            100.0 * n.hit_rate(),
            n.splits_here
        );
    }
}

/// What asking the kernel for a page's node costs, per page: with
/// `get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR)` (what the runtime asks, once
/// per split) and with `move_pages` given no target nodes.
fn print_page_query_costs(file: &Path) -> Result<()> {
    // Each query on a fresh mapping of the file, as a run maps its input:
    // its pages are in the page cache but not yet mapped in.
    let time = |query: &dyn Fn(*const u8) -> i64| -> Result<(f64, usize, usize)> {
        let input = Input::file(file)?;
        let data = input.part_bytes(0);
        let pages: Vec<*const u8> = data.iter().step_by(4096).map(|b| b as *const u8).collect();
        let start = Instant::now();
        let answered = pages.iter().filter(|&&p| query(p) >= 0).count();
        let ns = start.elapsed().as_secs_f64() * 1e9 / pages.len().max(1) as f64;
        Ok((ns, answered, pages.len()))
    };
    let (mempolicy, ok_m, pages) = time(&get_mempolicy)?;
    let (move_pages, ok_p, _) = time(&move_pages)?;
    println!(
        "\npage node query on a fresh mapping of the text, per page over {pages} pages: \
         get_mempolicy {mempolicy:.0} ns ({ok_m} answered), move_pages {move_pages:.0} ns \
         ({ok_p} answered; the others not mapped in yet)"
    );
    Ok(())
}

/// The node of the page at `p` as the runtime asks it (`get_mempolicy`),
/// or -1.
fn get_mempolicy(p: *const u8) -> i64 {
    ember::plumbing::page_node(p).map_or(-1, |n| n as i64)
}

/// The node of the page at `p` by `move_pages` with no target, or a
/// negative errno (`-ENOENT` for a page not mapped in yet).
fn move_pages(p: *const u8) -> i64 {
    let mut pages = [p as *mut libc::c_void];
    let mut status: [libc::c_int; 1] = [-1];
    // SAFETY: one page pointer in, one status out, both arrays of length 1
    // as passed; null nodes means "query only": no page moves.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_int,
            1 as libc::c_ulong,
            pages.as_mut_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if rc == 0 {
        status[0].into()
    } else {
        -1
    }
}
