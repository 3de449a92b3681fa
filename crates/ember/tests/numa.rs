//! NUMA-aware scheduling on simulated topologies (several nodes over this
//! machine's CPUs): every split runs once, local splits before stolen ones,
//! stealing when a node's queue runs dry, and outputs equal to a one-node
//! run's. The tests marked `ignore` need a kernel with two or more NUMA
//! nodes: `scripts/test-numa-vm.sh` boots one and runs them there.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use ember::plumbing::page_node;
use ember::tune::{Locality, Topology};
use ember::{Emit, Input, Job, KeyHint, MapResult, Records, RunOptions, Runtime, Split, Sum};
use proptest::prelude::*;

/// Counts 4-byte records by value modulo 1000, and notes each split's offset; a split
/// whose first record is [`SLOW`] sleeps before it maps.
#[derive(Default)]
struct Offsets {
    seen: Mutex<Vec<u64>>,
}

const SLOW: u32 = u32::MAX;

impl Job for Offsets {
    type Key = u32;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Fixed(4)
    }

    /// Dense keys: the array container, no sample, so each split is mapped
    /// by the map phase alone.
    fn keys(&self) -> KeyHint {
        KeyHint::Dense(1000)
    }

    fn map<E: Emit<u32, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        self.seen.lock().unwrap().push(split.offset);
        let mut records = split.data.chunks_exact(4);
        if records.clone().next() == Some(&SLOW.to_le_bytes()[..]) {
            std::thread::sleep(Duration::from_millis(20));
        }
        for r in &mut records {
            emit.emit(u32::from_le_bytes(r.try_into().unwrap()) % 1000, 1);
        }
        Ok(())
    }

    fn reduce(&self, _key: &u32, n: u64) -> u64 {
        n
    }
}

fn records(n: u32, value: impl Fn(u32) -> u32) -> Vec<u8> {
    (0..n).flat_map(|i| value(i).to_le_bytes()).collect()
}

fn runtime(nodes: usize, threads: usize, locality: Locality) -> Runtime {
    Runtime::builder()
        .threads(threads)
        .topology(Topology::simulated(nodes))
        .locality(locality)
        .build()
        .unwrap()
}

/// The sequential answer of [`Offsets`].
fn oracle(data: &[u8]) -> Vec<(u32, u64)> {
    let mut counts = BTreeMap::new();
    for r in data.chunks_exact(4) {
        *counts
            .entry(u32::from_le_bytes(r.try_into().unwrap()) % 1000)
            .or_insert(0) += 1;
    }
    counts.into_iter().collect()
}

/// Runs [`Offsets`] and checks that every split ran exactly once, the output
/// is the oracle's, and the per-node tallies add up.
fn check_run(rt: &Runtime, data: &[u8], split: usize) -> ember::Stats {
    let job = Offsets::default();
    let opts = RunOptions::default().split_size(split);
    let out = rt.run_with(&job, &Input::bytes(data), &opts).unwrap();
    assert_eq!(out.pairs, oracle(data));
    let mut seen = job.seen.into_inner().unwrap();
    seen.sort_unstable();
    let distinct = {
        let mut d = seen.clone();
        d.dedup();
        d.len()
    };
    assert_eq!(distinct, seen.len(), "a split ran twice");
    let stats = out.stats;
    assert_eq!(seen.len(), stats.splits, "splits run");
    if rt.topology().nodes() > 1 {
        assert_eq!(stats.nodes.len(), rt.topology().nodes());
        let tasks: u64 = stats.nodes.iter().map(|n| n.tasks).sum();
        let here: u64 = stats.nodes.iter().map(|n| n.splits_here).sum();
        assert_eq!((tasks, here), (seen.len() as u64, seen.len() as u64));
        for n in &stats.nodes {
            assert!(n.stolen <= n.tasks && n.data_local <= n.tasks);
        }
    } else {
        assert!(stats.nodes.is_empty());
    }
    stats
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_split_runs_once_with_the_one_node_output(
        nodes in 1usize..5,
        threads in 1usize..5,
        records_n in 0u32..40_000,
        split in 1usize..64 << 10,
        aware in any::<bool>(),
    ) {
        let locality = if aware { Locality::Aware } else { Locality::Blind };
        let rt = runtime(nodes, threads, locality);
        let data = records(records_n, |i| i.wrapping_mul(2_654_435_761));
        let stats = check_run(&rt, &data, split);
        if aware {
            // Splits taken from a worker's own queue are on its node.
            for n in &stats.nodes {
                prop_assert_eq!(n.local(), n.data_local);
            }
        }
    }
}

#[test]
fn workers_steal_from_a_node_whose_splits_are_slow() {
    for nodes in [2, 4] {
        let rt = runtime(nodes, nodes, Locality::Aware);
        // Node 0's block of splits (the first) sleeps in every split.
        let n = 64 * 1024;
        let data = records(n, |i| if i < n / nodes as u32 { SLOW } else { i });
        let stats = check_run(&rt, &data, 4096);
        let stolen: u64 = stats.nodes[1..].iter().map(|s| s.stolen).sum();
        assert!(stolen > 0, "{nodes} nodes: {:?}", stats.nodes);
        assert_eq!(stats.nodes[0].stolen, 0, "node 0 never ran dry first");
    }
}

#[test]
fn an_even_input_runs_mostly_local() {
    let rt = runtime(2, 2, Locality::Aware);
    let data = records(256 * 1024, |i| i);
    let stats = check_run(&rt, &data, 16 << 10);
    // Each node holds half the splits; every local take is a hit.
    let half = stats.splits as u64 / 2;
    assert!(stats
        .nodes
        .iter()
        .all(|n| n.splits_here.abs_diff(half) <= 1));
    assert!(stats.nodes.iter().all(|n| n.data_local == n.local()));
}

#[test]
fn every_chunk_of_a_stream_is_spread_over_the_nodes() {
    for nodes in [2, 4] {
        let rt = runtime(nodes, nodes, Locality::Aware);
        let data = records(512 * 1024, |i| i);
        let job = Offsets::default();
        let opts = RunOptions::default()
            .chunk_size(256 << 10)
            .split_size(32 << 10);
        let input = Input::reader("stream", std::io::Cursor::new(data.clone()));
        let out = rt.run_with(&job, &input, &opts).unwrap();
        assert_eq!(out.pairs, oracle(&data));
        assert_eq!(out.stats.chunks.len(), 8);
        // Each chunk's splits in one block per node, as its buffer's
        // stripes are placed on a real machine.
        let here: Vec<u64> = out.stats.nodes.iter().map(|n| n.splits_here).collect();
        assert_eq!(here, vec![out.stats.splits as u64 / nodes as u64; nodes]);
        assert!(out.stats.nodes.iter().all(|n| n.data_local == n.local()));
    }
}

#[test]
fn one_node_reports_no_nodes() {
    for topology in [
        Topology::simulated(1),
        Topology::new(vec![vec![0]]).unwrap(),
    ] {
        let rt = Runtime::builder()
            .threads(2)
            .topology(topology)
            .build()
            .unwrap();
        let stats = check_run(&rt, &records(10_000, |i| i), 4096);
        assert!(stats.nodes.is_empty());
    }
}

#[test]
fn a_topology_without_cpus_is_an_error() {
    assert!(Topology::new(vec![]).is_err());
    assert!(Topology::new(vec![vec![0], vec![]]).is_err());
}

// --- On a kernel with two or more NUMA nodes (scripts/test-numa-vm.sh). ---

/// The CPUs the calling thread may run on.
fn bind(cpus: &[usize]) {
    // SAFETY: a zeroed CPU set with the given bits set, passed with its
    // size; sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

/// A file of `stripes` stripes of `stripe` bytes, stripe `s` written (so
/// its page-cache pages first touched) by a thread bound to node `s mod
/// nodes`: an interleaving the input's block order does not predict.
fn striped_file(t: &Topology, stripes: usize, stripe: usize) -> tempfile::NamedTempFile {
    use std::io::{Seek, SeekFrom, Write};
    let file = tempfile::NamedTempFile::new().unwrap();
    let len = (stripes * stripe) as u64;
    file.as_file().set_len(len).unwrap();
    std::thread::scope(|s| {
        for node in 0..t.nodes() {
            let mut f = file.reopen().unwrap();
            let cpus = t.cpus(node).to_vec();
            s.spawn(move || {
                bind(&cpus);
                for k in (node..stripes).step_by(t.nodes()) {
                    let data = records((stripe / 4) as u32, |i| i ^ k as u32);
                    f.seek(SeekFrom::Start((k * stripe) as u64)).unwrap();
                    f.write_all(&data).unwrap();
                }
            });
        }
    });
    file
}

#[test]
#[ignore = "needs two or more NUMA nodes: scripts/test-numa-vm.sh"]
fn real_nodes_are_read_from_sysfs() {
    let t = Topology::detect();
    println!("topology: {t:?}");
    assert!(t.is_detected() && t.nodes() >= 2, "{t:?}");
    for node in 0..t.nodes() {
        assert!(!t.cpus(node).is_empty());
        assert_eq!(t.distance(node, node), Some(10));
    }
}

/// Every split a worker took from its own node's queue had its data on
/// that node. (How many were stolen,
/// hence the hit rate, depends on timing: a guest's vCPU stalled by a busy
/// host has its node's splits stolen. The tests print it.)
fn assert_local_takes_hit(nodes: &[ember::stats::NodeStats]) {
    for n in nodes {
        assert_eq!(n.data_local, n.local(), "{nodes:?}");
    }
}

#[test]
#[ignore = "needs two or more NUMA nodes: scripts/test-numa-vm.sh"]
fn pages_placed_per_node_are_mapped_on_their_node() {
    let t = Topology::detect();
    assert!(t.nodes() >= 2, "{t:?}");
    let stripe = 1 << 20;
    let file = striped_file(&t, 8 * t.nodes(), stripe);
    let input = Input::file(file.path()).unwrap();
    let data = std::fs::read(file.path()).unwrap();
    let cpus: usize = (0..t.nodes()).map(|n| t.cpus(n).len()).sum();
    for locality in [Locality::Aware, Locality::Blind] {
        let rt = Runtime::builder()
            .threads(cpus)
            .locality(locality)
            .build()
            .unwrap();
        let opts = RunOptions::default().split_size(stripe);
        let out = rt.run_with(&Offsets::default(), &input, &opts).unwrap();
        assert_eq!(out.pairs, oracle(&data));
        let nodes = &out.stats.nodes;
        let hits: u64 = nodes.iter().map(|n| n.data_local).sum();
        let rate = hits as f64 / out.stats.splits as f64;
        println!("{locality:?}: hit rate {rate:.3}, nodes {nodes:?}");
        // The kernel says the stripes are spread over every node.
        for n in nodes {
            assert!(n.splits_here * 2 >= out.stats.splits as u64 / t.nodes() as u64);
        }
        // Aware, misses are only the splits stolen at the end of the
        // phase; blind, a split is local by chance (one in `nodes`).
        if locality == Locality::Aware {
            assert_local_takes_hit(nodes);
        }
    }
}

/// Notes, for each split of a stream, its offset and the node the kernel
/// says holds its first byte (the first page of a split is its chunk
/// buffer's, so this is where the reader placed it).
#[derive(Default)]
struct Placed {
    nodes: Mutex<Vec<(u64, usize)>>,
}

impl Job for Placed {
    type Key = u32;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Fixed(4)
    }

    fn keys(&self) -> KeyHint {
        KeyHint::Dense(1000)
    }

    fn map<E: Emit<u32, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let node = page_node(split.data.as_ptr()).expect("the kernel places every page");
        self.nodes.lock().unwrap().push((split.offset, node));
        for r in split.data.chunks_exact(4) {
            emit.emit(u32::from_le_bytes(r.try_into().unwrap()) % 1000, 1);
        }
        Ok(())
    }

    fn reduce(&self, _key: &u32, n: u64) -> u64 {
        n
    }
}

#[test]
#[ignore = "needs two or more NUMA nodes: scripts/test-numa-vm.sh"]
fn chunk_buffers_are_placed_stripe_by_stripe_across_the_nodes() {
    let t = Topology::detect();
    let ids: Vec<usize> = (0..t.nodes()).collect();
    assert!(t.is_detected() && t.nodes() >= 2, "{t:?}");
    let chunk = 16 << 20;
    let data = records((4 * chunk / 4) as u32, |i| i.wrapping_mul(2_654_435_761));
    let cpus: usize = ids.iter().map(|&n| t.cpus(n).len()).sum();
    for locality in [Locality::Aware, Locality::Blind] {
        let rt = Runtime::builder()
            .threads(cpus)
            .locality(locality)
            .build()
            .unwrap();
        let job = Placed::default();
        let opts = RunOptions::default()
            .chunk_size(chunk)
            .split_size(512 << 10);
        let input = Input::reader("stream", std::io::Cursor::new(data.clone()));
        let out = rt.run_with(&job, &input, &opts).unwrap();
        assert_eq!(out.pairs, oracle(&data));
        assert_eq!(out.stats.chunks.len(), 4);
        // In each chunk, the splits in input order sit on the nodes in
        // stripe order (kernel numbers: node i is the i-th here), every
        // node holding some: also the first split, whose page the
        // allocator may have handed back placed elsewhere (it is moved),
        // and in buffers reused while the kernel's NUMA balancing runs
        // (it leaves a range with a policy of its own alone).
        let mut placed = job.nodes.into_inner().unwrap();
        placed.sort_unstable();
        for (c, splits) in placed.chunks(chunk / (512 << 10)).enumerate() {
            let nodes: Vec<usize> = splits.iter().map(|s| s.1).collect();
            println!("{locality:?}: chunk {c}: nodes of its splits {nodes:?}");
            assert!(nodes.is_sorted(), "chunk {c}: {nodes:?}");
            let all = ids.iter().all(|n| nodes.contains(n));
            assert!(all, "chunk {c}: {nodes:?}");
        }
        let hits: u64 = out.stats.nodes.iter().map(|n| n.data_local).sum();
        let rate = hits as f64 / out.stats.splits as f64;
        println!(
            "{locality:?}: stream hit rate {rate:.3}, nodes {:?}",
            out.stats.nodes
        );
        if locality == Locality::Aware {
            assert_local_takes_hit(&out.stats.nodes);
        }
    }
}
