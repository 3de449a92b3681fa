//! Two `Runtime`s in one process, running jobs at the same time from two
//! threads (every workload, and the failing runs between them), give the
//! sequential oracles' results.

use crate::workloads;

use std::sync::Barrier;

use ember::Runtime;
use workloads::{quiet_planned_panics, round, Fixtures, RUNS_PER_ROUND};

const ROUNDS: usize = 30;

#[test]
fn two_runtimes_running_at_once_from_two_threads_give_exact_results() {
    quiet_planned_panics();
    let fixtures = Fixtures::new("concurrent-runtimes");
    let start = Barrier::new(2);
    let runs: usize = std::thread::scope(|s| {
        let threads = [2, 3].map(|n| {
            let (fixtures, start) = (&fixtures, &start);
            s.spawn(move || {
                // Both start together (nothing before this can panic and
                // leave the other thread waiting).
                start.wait();
                let rt = Runtime::builder().threads(n).build().unwrap();
                (0..ROUNDS).map(|_| round(&rt, fixtures)).sum::<usize>()
            })
        });
        threads.map(|t| t.join().unwrap()).iter().sum()
    });
    assert_eq!(runs, 2 * ROUNDS * RUNS_PER_ROUND);
}
