//! The worker pool: threads created once per [`Runtime`](crate::Runtime) and
//! reused by every phase of every job (Phoenix Rebirth's persistent pool).
//!
//! Built on a rayon `ThreadPool`: `broadcast` runs one closure per worker
//! (the map phase, where each worker owns a container and pulls splits from
//! an atomic counter), and `install` runs rayon's work-stealing parallel
//! iterators and sorts on the same threads (reduce and merge). No phase
//! creates a thread.
//!
//! On a machine of several NUMA nodes (`topology`), workers are placed
//! node by node, each knows its node, and each is bound to its node's CPUs
//! (or pinned to one of them with `pin(true)`), so that the map phase can
//! give it the splits whose memory is on its node (`schedule::tasks`). On
//! one node, what follows holds.
//!
//! Workers are left to the OS scheduler unless the runtime is built with
//! [`RuntimeBuilder::pin(true)`](crate::RuntimeBuilder::pin). Pinned, worker
//! `i` is bound to the `i`-th CPU the process may run on (Linux), when
//! there are two or more workers and no more workers than such CPUs.
//!
//! Unpinned is the default because pinning cannot know what else runs:
//! every pinned pool takes the *first* CPUs of the allowed set, so two
//! runtimes in one process, or two ember processes, with fewer workers
//! than CPUs stack on the same cores while the rest idle, and a pinned
//! worker cannot move off a core that other work is using. Telling whether
//! another pool already pinned there is not reliably possible (other
//! processes' affinities are not ours to read race-free), and pinning only
//! when the workers exactly fill the allowed set would still pin by
//! default (the default worker count is that set's size).
//!
//! Pinned and unpinned runs of PCA, k-means and matrix multiply,
//! alternated (docs/measurements.md, "Experiments measured and not kept"):
//! on CPUs shared with other compute-bound work unpinned was as fast or
//! faster; on near-exclusive CPUs, and for two concurrent processes, the
//! two were within noise.
//! Pinning is for a machine or cpuset given to one runtime: restrict the
//! process (`taskset`, a cgroup cpuset) to the CPUs it should use and pin
//! within them.

pub(crate) mod topology;

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use crate::error::{Error, Result};
#[cfg(test)]
use topology::allowed_cpus;
use topology::bind_to;
pub(crate) use topology::place_pages;
pub use topology::{page_node, Topology};

/// How the map phase hands out splits on a machine of several nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[non_exhaustive]
pub enum Locality {
    /// One queue of splits per node, each split on the queue of the node
    /// that holds its data; a worker takes from its node's queue first and
    /// steals from the others, nearest first, when it runs dry.
    #[default]
    Aware,
    /// One queue for all workers, whatever node holds the data (the
    /// schedule of a one-node machine), for comparison.
    Blind,
}

/// The runtime's threads.
pub(crate) struct Pool {
    inner: rayon::ThreadPool,
    topology: Topology,
    /// The node of each worker, by worker index.
    nodes: Vec<usize>,
    locality: Locality,
    /// The thread that is the one worker, for a pool on the calling thread
    /// ([`Pool::on_caller`]): no other thread may use it.
    caller: Option<std::thread::ThreadId>,
}

impl Pool {
    /// Starts `threads` worker threads on one node of the allowed CPUs,
    /// pinned as [`Pool::on`] says (for tests of the one-node pool).
    #[cfg(test)]
    pub(crate) fn new(threads: usize, pin: bool) -> Result<Pool> {
        let one = Topology::new(vec![allowed_cpus()]).or_else(|_| Topology::new(vec![vec![0]]))?;
        Pool::on(threads, pin, one, Locality::Aware)
    }

    /// Starts `threads` worker threads placed on `topology`'s nodes node by
    /// node (worker `i` on the `i`-th CPU of the nodes' CPUs in node order,
    /// wrapping around). On one node they are pinned to that CPU if `pin`,
    /// there are two or more workers and no more of them than CPUs, else
    /// left free (see the module docs). On several nodes each worker is
    /// bound to its node's CPUs, or pinned to its CPU if `pin` and the
    /// workers do not outnumber the CPUs.
    pub(crate) fn on(
        threads: usize,
        pin: bool,
        topology: Topology,
        locality: Locality,
    ) -> Result<Pool> {
        let slots = topology.slots();
        let nodes: Vec<usize> = (0..threads).map(|i| slots[i % slots.len()].0).collect();
        let pinned = pin && threads <= slots.len() && (threads > 1 || topology.nodes() > 1);
        let bind: Option<Vec<Vec<usize>>> = match (pinned, topology.nodes() > 1) {
            (true, _) => Some((0..threads).map(|i| vec![slots[i].1]).collect()),
            (false, true) => Some(nodes.iter().map(|&n| topology.cpus(n).to_vec()).collect()),
            // One worker has nothing to share a CPU with: it stays free.
            (false, false) => None,
        };
        let mut builder = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("ember-worker-{i}"));
        if let Some(bind) = bind {
            builder = builder.start_handler(move |i| bind_to(&bind[i]));
        }
        let inner = builder
            .build()
            .map_err(|e| Error::Config(format!("cannot start {threads} worker threads: {e}")))?;
        Ok(Pool {
            inner,
            topology,
            nodes,
            locality,
            caller: None,
        })
    }

    /// One worker, which is the calling thread (rayon's
    /// `use_current_thread`): no thread is started, and the caller, never
    /// bound or pinned, runs every phase itself. Fails if the calling
    /// thread is already a worker of a pool (one such pool per thread).
    pub(crate) fn on_caller(topology: Topology, locality: Locality) -> Result<Pool> {
        let inner = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .use_current_thread()
            .build()
            .map_err(|e| Error::Config(format!("cannot run on the calling thread: {e}")))?;
        let node = topology.slots()[0].0;
        Ok(Pool {
            inner,
            topology,
            nodes: vec![node],
            locality,
            caller: Some(std::thread::current().id()),
        })
    }

    /// Refuses a pool on the calling thread to any other thread: a job
    /// handed to it from there would wait for a worker that never takes it.
    fn check_thread(&self) {
        if let Some(caller) = self.caller {
            assert!(
                std::thread::current().id() == caller,
                "a runtime built on the calling thread runs only on that thread"
            );
        }
    }

    /// The nodes the workers are placed on.
    pub(crate) fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The node of each worker, by worker index.
    pub(crate) fn worker_nodes(&self) -> &[usize] {
        &self.nodes
    }

    /// How the map phase hands out splits.
    pub(crate) fn locality(&self) -> Locality {
        self.locality
    }

    /// Number of workers.
    pub(crate) fn threads(&self) -> usize {
        self.inner.current_num_threads()
    }

    /// The calling thread's worker index, if it is one of this pool's
    /// workers (not another pool's: their indices mean nothing here).
    pub(crate) fn current_index(&self) -> Option<usize> {
        self.inner.current_thread_index()
    }

    /// Runs `f(worker_index)` once on every worker and returns the results in
    /// worker order.
    pub(crate) fn broadcast<R: Send>(&self, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
        let made = Slots::new(self.threads());
        self.broadcast_dyn(&|w| made.put(w, f(w)));
        made.into_vec()
    }

    /// [`Pool::broadcast`]'s work, compiled once: the generic callers
    /// only wrap their closure (rayon's broadcast machinery is otherwise
    /// instantiated anew for every closure of every job). A panic on a
    /// worker is resumed here once every worker has returned.
    fn broadcast_dyn(&self, f: &(dyn Fn(usize) + Sync)) {
        self.check_thread();
        self.inner.broadcast(|ctx| f(ctx.index()));
    }

    /// Runs `task(i, item)` for every item, on the workers, each worker
    /// taking the next index as it finishes one (dynamic, in index
    /// order); returns the results in index order. For tasks of
    /// substance (a reduce partition, a sorted run): each costs an
    /// atomic increment and a lock.
    pub(crate) fn map_each<I: Send, T: Send>(
        &self,
        items: Vec<I>,
        task: impl Fn(usize, I) -> T + Sync,
    ) -> Vec<T> {
        let n = items.len();
        let items = Slots::of(items);
        let made = Slots::new(n);
        self.each_dyn(n, &|i| made.put(i, task(i, items.take(i))));
        made.into_vec()
    }

    /// Runs `task(i)` for every `i` in `0..n` on the workers, each taking
    /// the next index from a shared counter: [`Pool::map_each`]'s work,
    /// compiled once.
    fn each_dyn(&self, n: usize, task: &(dyn Fn(usize) + Sync)) {
        if n == 0 {
            return;
        }
        let next = AtomicUsize::new(0);
        // Relaxed: the counter only hands out distinct indices; what a
        // task wrote is read after the broadcast has joined every worker.
        self.broadcast_dyn(&|_| loop {
            let i = next.fetch_add(1, Relaxed);
            if i >= n {
                break;
            }
            task(i);
        });
    }

    /// Runs `task(i)` for every `i` in `0..n` on the workers, at most
    /// `window` tasks ahead of the one handed over, and calls `hand(i,
    /// result)` on the calling thread in index order: the results are
    /// made in parallel and used in order, with at most `window` of them
    /// held at once. A pool on the calling thread (or a call from one of
    /// the workers) runs each task on the calling thread before handing it
    /// over. Stops at the first error `hand` returns, once the tasks
    /// started have ended; a task's panic is resumed on the calling thread.
    pub(crate) fn ordered<T: Send, E>(
        &self,
        n: usize,
        window: usize,
        task: impl Fn(usize) -> T + Sync,
        mut hand: impl FnMut(usize, T) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let made = Slots::new(n);
        let mut failed = None;
        self.ordered_dyn(
            n,
            window,
            &|i| made.put(i, task(i)),
            &mut |i| match hand(i, made.take(i)) {
                Ok(()) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            },
        );
        failed.map_or(Ok(()), Err)
    }

    /// [`Pool::ordered`]'s schedule, compiled once: `task(i)` leaves its
    /// result where `hand(i)` finds it; `hand` returns false to stop.
    fn ordered_dyn(
        &self,
        n: usize,
        window: usize,
        task: &(dyn Fn(usize) + Sync),
        hand: &mut dyn FnMut(usize) -> bool,
    ) {
        self.check_thread();
        if self.caller.is_some() || self.current_index().is_some() {
            // No worker is free to take a task while this thread waits.
            for i in 0..n {
                task(i);
                if !hand(i) {
                    return;
                }
            }
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        self.inner.in_place_scope(|scope| {
            let spawn = |i: usize| {
                let tx = tx.clone();
                scope.spawn(move |_| {
                    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task(i)));
                    // The receiver is gone only once `hand` stopped.
                    let _ = tx.send((i, made));
                });
            };
            (0..n.min(window)).for_each(spawn);
            let mut done = vec![false; n];
            for next in 0..n {
                while !done[next] {
                    let (i, made) = rx.recv().expect("every task sends its result");
                    match made {
                        Ok(()) => done[i] = true,
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
                if !hand(next) {
                    return;
                }
                if next + window < n {
                    spawn(next + window);
                }
            }
        })
    }

    /// Runs `f` inside the pool, so rayon's parallel iterators in it use the
    /// pool's workers.
    pub(crate) fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let mut f = Some(f);
        let mut made = None;
        self.install_dyn(&mut || made = f.take().map(|f| f()));
        made.expect("install runs its closure")
    }

    /// [`Pool::install`]'s work, compiled once.
    fn install_dyn(&self, f: &mut (dyn FnMut() + Send)) {
        self.check_thread();
        self.inner.install(f)
    }
}

/// One result slot per task, filled by the workers and read once they
/// have all returned: what lets the pool's schedules be compiled once
/// for every result type. A slot is written once and taken once; its
/// lock is uncontended.
struct Slots<T>(Vec<Mutex<Option<T>>>);

impl<T> Slots<T> {
    /// `n` empty slots.
    fn new(n: usize) -> Self {
        Slots((0..n).map(|_| Mutex::new(None)).collect())
    }

    /// A full slot per item.
    fn of(items: Vec<T>) -> Self {
        Slots(items.into_iter().map(|t| Mutex::new(Some(t))).collect())
    }

    fn put(&self, i: usize, t: T) {
        *self.0[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(t);
    }

    fn take(&self, i: usize) -> T {
        let mut slot = self.0[i].lock().unwrap_or_else(|p| p.into_inner());
        slot.take()
            .expect("each slot is filled before it is taken, once")
    }

    fn into_vec(self) -> Vec<T> {
        self.0
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
            .map(|t| t.expect("every task filled its slot"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The allowed CPUs of every worker of `pool`, in worker order (a new
    /// thread starts with its creator's set: here, the test thread's).
    fn workers_cpus(pool: &Pool) -> Vec<Vec<usize>> {
        pool.broadcast(|_| allowed_cpus())
    }

    #[test]
    fn map_each_returns_every_result_in_item_order() {
        for threads in [1, 2, 3] {
            let pool = Pool::new(threads, false).unwrap();
            let items: Vec<String> = (0..100).map(|i| i.to_string()).collect();
            let got = pool.map_each(items, |i, s| (i, s.len()));
            let want: Vec<_> = (0..100).map(|i: usize| (i, i.to_string().len())).collect();
            assert_eq!(got, want);
            assert!(pool.map_each(Vec::<u8>::new(), |_, b| b).is_empty());
            // From one of the workers, as a phase inside a phase.
            let nested = pool.broadcast(|_| pool.map_each(vec![1, 2, 3], |_, x| x * 2));
            assert_eq!(nested, vec![vec![2, 4, 6]; threads]);
        }
    }

    #[test]
    fn a_panicking_task_is_resumed_and_the_pool_stays_usable() {
        let pool = Pool::new(2, false).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.map_each((0..10).collect(), |_, i: u32| {
                assert!(i != 7, "task seven");
                i
            })
        }));
        assert!(caught.is_err());
        assert_eq!(pool.map_each(vec![1, 2], |_, x: i32| -x), vec![-1, -2]);
        assert_eq!(pool.install(|| 41 + 1), 42);
    }

    #[test]
    fn ordered_hands_over_in_order_and_stops_at_the_first_error() {
        let pool = Pool::new(2, false).unwrap();
        let mut seen = Vec::new();
        let done: std::result::Result<(), String> = pool.ordered(
            50,
            3,
            |i| i * i,
            |i, sq| {
                seen.push((i, sq));
                Ok(())
            },
        );
        assert!(done.is_ok());
        assert_eq!(seen, (0..50).map(|i| (i, i * i)).collect::<Vec<_>>());
        let mut handed = 0;
        let stopped = pool.ordered(
            50,
            3,
            |i| i,
            |i, _| match i {
                9 => Err(format!("stop at {i}")),
                _ => {
                    handed += 1;
                    Ok(())
                }
            },
        );
        assert_eq!(stopped, Err("stop at 9".to_string()));
        assert_eq!(handed, 9);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn pinned_workers_each_own_one_allowed_cpu() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty(), "sched_getaffinity failed");
        if cpus.len() < 2 {
            return;
        }
        let pool = Pool::new(2, true).unwrap();
        assert_eq!(workers_cpus(&pool), vec![vec![cpus[0]], vec![cpus[1]]]);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn unpinned_workers_keep_the_whole_allowed_set() {
        let cpus = allowed_cpus();
        let pool = Pool::new(2, false).unwrap();
        assert_eq!(workers_cpus(&pool), vec![cpus.clone(), cpus]);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn one_worker_or_more_workers_than_cpus_are_never_pinned() {
        let cpus = allowed_cpus();
        for threads in [1, cpus.len() + 1] {
            let pool = Pool::new(threads, true).unwrap();
            assert_eq!(workers_cpus(&pool), vec![cpus.clone(); threads]);
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn runtimes_are_unpinned_unless_asked() {
        let cpus = allowed_cpus();
        let on = |rt: crate::Runtime| rt.install(|| rayon::broadcast(|_| allowed_cpus()));
        let rt = crate::Runtime::builder().threads(2).build().unwrap();
        assert_eq!(on(rt), vec![cpus.clone(), cpus.clone()]);
        if cpus.len() >= 2 {
            let rt = crate::Runtime::builder().threads(2).pin(true).build();
            assert_eq!(on(rt.unwrap()), vec![vec![cpus[0]], vec![cpus[1]]]);
        }
    }
}
