//! Who maps which split: one shared counter on one node, one queue per
//! node on several (Phoenix Rebirth III-A).
//!
//! On one node (or with [`Locality::Blind`]) a worker takes the next split
//! index with one relaxed `fetch_add`, as it always has: nothing of what
//! follows is paid.
//!
//! On several nodes, each split goes on the queue of the node that holds
//! its first page (the kernel's answer on a detected topology; else its
//! place among the phase's splits, one block of splits per node). A worker takes
//! from its own node's queue until it is empty, then steals from the other
//! nodes' queues, nearest first. Every queue is filled before the workers
//! start and none is refilled, so a worker that stole once never sees its
//! own queue non-empty again: it takes all the local splits it will get
//! before any stolen one. The queues are crossbeam's `Injector`s (FIFO, so
//! the small splits cut for the end of the phase stay at the end).
//!
//! Each worker counts, in its own cache-padded cell, the splits it took,
//! those it stole and those whose data was on its node; `node_stats` sums
//! them per node for [`Stats::nodes`](crate::Stats::nodes).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use crossbeam_deque::{Injector, Steal};
use crossbeam_utils::CachePadded;

use crate::pool::{Locality, Pool};
use crate::stats::NodeStats;

/// The split dispenser of one map phase.
pub(crate) struct Tasks {
    queue: Queue,
    /// Per worker (several nodes only), the node it is on and its counts.
    workers: Vec<CachePadded<Counts>>,
    /// The node holding each split's data (several nodes only).
    split_node: Vec<usize>,
    /// Nodes of the topology (0 on one node: nothing is tallied).
    nodes: usize,
}

enum Queue {
    /// Split indices `0..n`, the next one in `next` (relaxed: it only has
    /// to give each index to one worker; the end of the phase orders the
    /// workers' results).
    Shared { next: AtomicUsize, n: usize },
    /// One queue per node, and each node's steal order.
    Nodes {
        queues: Vec<Injector<usize>>,
        steal: Vec<Vec<usize>>,
    },
}

/// A worker's node and tallies. Each is written by its worker only
/// (relaxed), and read after the phase's join.
#[derive(Default)]
struct Counts {
    node: usize,
    taken: AtomicU64,
    stolen: AtomicU64,
    data_local: AtomicU64,
}

impl Tasks {
    /// Splits `0..n`, handed out by one counter.
    pub(crate) fn shared(n: usize) -> Tasks {
        Tasks {
            queue: Queue::Shared {
                next: AtomicUsize::new(0),
                n,
            },
            workers: Vec::new(),
            split_node: Vec::new(),
            nodes: 0,
        }
    }

    /// Splits `0..n` for `pool`'s workers; `first_byte(i)` is the address of
    /// split `i`'s first byte (asked only on several nodes). Where the
    /// kernel cannot say which node holds a split (a given topology, a page
    /// it does not place), its node is its place among the `n`: one block
    /// of consecutive splits per node, as a file written in order or a
    /// chunk buffer's stripes (`ingest::Stripes`) are placed.
    pub(crate) fn new(pool: &Pool, n: usize, first_byte: &dyn Fn(usize) -> *const u8) -> Tasks {
        let topology = pool.topology();
        let nodes = topology.nodes();
        if nodes == 1 {
            return Tasks::shared(n);
        }
        let guess = |i: usize| i * nodes / n.max(1);
        let split_node: Vec<usize> = (0..n)
            .map(|i| topology.node_of(first_byte(i)).unwrap_or_else(|| guess(i)))
            .collect();
        let workers = pool.worker_nodes().iter().map(|&node| {
            let counts = Counts {
                node,
                ..Counts::default()
            };
            CachePadded::new(counts)
        });
        let queue = match pool.locality() {
            Locality::Blind => Queue::Shared {
                next: AtomicUsize::new(0),
                n,
            },
            Locality::Aware => {
                let queues: Vec<Injector<usize>> = (0..nodes).map(|_| Injector::new()).collect();
                for (i, &node) in split_node.iter().enumerate() {
                    queues[node].push(i);
                }
                let steal = (0..nodes).map(|a| topology.steal_order(a)).collect();
                Queue::Nodes { queues, steal }
            }
        };
        Tasks {
            queue,
            workers: workers.collect(),
            split_node,
            nodes,
        }
    }

    /// The next split for worker `w`, or `None` when every split is taken.
    pub(crate) fn take(&self, w: usize) -> Option<usize> {
        let (i, stolen) = match &self.queue {
            Queue::Shared { next, n } => {
                let i = next.fetch_add(1, Relaxed);
                ((i < *n).then_some(i)?, false)
            }
            Queue::Nodes { queues, steal } => {
                let own = self.workers[w].node;
                match pop(&queues[own]) {
                    Some(i) => (i, false),
                    None => (steal[own].iter().find_map(|&b| pop(&queues[b]))?, true),
                }
            }
        };
        if let Some(c) = self.workers.get(w) {
            c.taken.fetch_add(1, Relaxed);
            c.stolen.fetch_add(stolen as u64, Relaxed);
            c.data_local
                .fetch_add((self.split_node[i] == c.node) as u64, Relaxed);
        }
        Some(i)
    }

    /// True while splits remain to be taken (a hint: another worker may
    /// take the last one at any moment).
    pub(crate) fn remain(&self) -> bool {
        match &self.queue {
            Queue::Shared { next, n } => next.load(Relaxed) < *n,
            Queue::Nodes { queues, .. } => queues.iter().any(|q| !q.is_empty()),
        }
    }

    /// The tallies per node (empty on one node), to add to a run's stats
    /// once the phase has ended.
    pub(crate) fn node_stats(&self) -> Vec<NodeStats> {
        let mut out = vec![NodeStats::default(); self.nodes];
        for c in &self.workers {
            let s = &mut out[c.node];
            s.tasks += c.taken.load(Relaxed);
            s.stolen += c.stolen.load(Relaxed);
            s.data_local += c.data_local.load(Relaxed);
        }
        for &node in &self.split_node {
            out[node].splits_here += 1;
        }
        out
    }
}

/// Takes one index from `queue`, retrying while other workers contend.
fn pop(queue: &Injector<usize>) -> Option<usize> {
    loop {
        match queue.steal() {
            Steal::Success(i) => return Some(i),
            Steal::Empty => return None,
            Steal::Retry => {}
        }
    }
}

/// Adds one phase's per-node tallies to a run's.
pub(crate) fn add_nodes(total: &mut Vec<NodeStats>, phase: Vec<NodeStats>) {
    if total.len() < phase.len() {
        total.resize(phase.len(), NodeStats::default());
    }
    for (t, p) in total.iter_mut().zip(phase) {
        t.tasks += p.tasks;
        t.stolen += p.stolen;
        t.data_local += p.data_local;
        t.splits_here += p.splits_here;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Topology;

    fn pool(nodes: usize, threads: usize, locality: Locality) -> Pool {
        let t = Topology::new(vec![vec![0]; nodes]).unwrap();
        Pool::on(threads, false, t, locality).unwrap()
    }

    /// Takes every split as worker `w` would, one at a time, workers in
    /// turn; returns per worker the `(split, stolen)` sequence.
    fn drain(tasks: &Tasks, threads: usize) -> Vec<Vec<(usize, bool)>> {
        let mut seen = vec![Vec::new(); threads];
        let mut live = threads;
        while live > 0 {
            live = 0;
            let stolen = |w: usize| tasks.workers.get(w).map_or(0, |c| c.stolen.load(Relaxed));
            for (w, s) in seen.iter_mut().enumerate() {
                let before = stolen(w);
                if let Some(i) = tasks.take(w) {
                    s.push((i, stolen(w) > before));
                    live += 1;
                }
            }
        }
        seen
    }

    #[test]
    fn every_split_is_taken_once_and_local_ones_first() {
        for (nodes, threads, n) in [(2, 2, 10), (2, 3, 7), (4, 4, 33), (4, 2, 9), (3, 6, 1)] {
            let p = pool(nodes, threads, Locality::Aware);
            let tasks = Tasks::new(&p, n, &|_| std::ptr::null());
            let seen = drain(&tasks, threads);
            let mut all: Vec<usize> = seen.iter().flatten().map(|t| t.0).collect();
            all.sort_unstable();
            assert_eq!(
                all,
                (0..n).collect::<Vec<_>>(),
                "{nodes} nodes {threads} workers"
            );
            for (w, s) in seen.iter().enumerate() {
                let first_stolen = s.iter().position(|t| t.1).unwrap_or(s.len());
                assert!(s[first_stolen..].iter().all(|t| t.1), "worker {w}: {s:?}");
                let node = p.worker_nodes()[w];
                assert!(s[..first_stolen]
                    .iter()
                    .all(|t| tasks.split_node[t.0] == node));
            }
            let stats = tasks.node_stats();
            assert_eq!(stats.iter().map(|s| s.tasks).sum::<u64>(), n as u64);
            assert_eq!(stats.iter().map(|s| s.splits_here).sum::<u64>(), n as u64);
            for s in &stats {
                assert_eq!(s.tasks - s.stolen, s.data_local);
            }
            assert!(!tasks.remain());
        }
    }

    #[test]
    fn a_node_without_workers_is_stolen_from_nearest_first() {
        // Three nodes, two workers: node 2 has no worker.
        let p = pool(3, 2, Locality::Aware);
        let tasks = Tasks::new(&p, 9, &|_| std::ptr::null());
        let seen = drain(&tasks, 2);
        assert_eq!(seen[0][..3], [(0, false), (1, false), (2, false)]);
        assert_eq!(seen[1][..3], [(3, false), (4, false), (5, false)]);
        // Worker 0 (node 0) steals from node 1 first, then node 2.
        let stats = tasks.node_stats();
        assert_eq!(stats[2].tasks, 0);
        assert_eq!(stats[0].stolen + stats[1].stolen, 3);
    }

    #[test]
    fn blind_takes_in_order_and_still_counts_locality() {
        let p = pool(2, 2, Locality::Blind);
        let tasks = Tasks::new(&p, 4, &|_| std::ptr::null());
        let seen = drain(&tasks, 2);
        assert_eq!(seen[0], [(0, false), (2, false)]);
        let stats = tasks.node_stats();
        // Splits 0 and 1 are on node 0, 2 and 3 on node 1: each worker
        // took one of its node's.
        assert_eq!((stats[0].data_local, stats[1].data_local), (1, 1));
        assert_eq!((stats[0].splits_here, stats[1].splits_here), (2, 2));
    }

    #[test]
    fn one_node_counts_nothing() {
        let p = pool(1, 2, Locality::Aware);
        let tasks = Tasks::new(&p, 3, &|_| unreachable!());
        assert_eq!(drain(&tasks, 2).concat().len(), 3);
        assert!(tasks.node_stats().is_empty());
    }
}
