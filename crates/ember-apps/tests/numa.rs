//! Every workload gives its sequential oracle's answer whatever the NUMA
//! topology: one node, and 2 and 4 simulated nodes over this machine's
//! CPUs, splits scheduled aware of locality or blind, for several worker
//! counts. The `ignore`d test runs them on the machine's own topology,
//! for a kernel with several nodes (`scripts/test-numa-vm.sh`).

// The workloads only, not the failing runs the soak tests share.
#[allow(dead_code)]
mod workloads;

use ember::tune::{Locality, Topology};
use ember::Runtime;
use workloads::{run_and_check, Fixtures, Workload};

fn check_all(topology: Topology, threads: usize, locality: Locality, f: &Fixtures) {
    let rt = Runtime::builder()
        .threads(threads)
        .topology(topology)
        .locality(locality)
        .build()
        .unwrap();
    for w in Workload::ALL {
        run_and_check(&rt, f, w);
    }
}

#[test]
fn every_workload_is_unchanged_on_simulated_nodes() {
    let f = Fixtures::new("numa-simulated");
    for nodes in [1, 2, 4] {
        for threads in [1, 2, 3, 4] {
            for locality in [Locality::Aware, Locality::Blind] {
                check_all(Topology::simulated(nodes), threads, locality, &f);
            }
        }
    }
}

#[test]
#[ignore = "needs two or more NUMA nodes: scripts/test-numa-vm.sh"]
fn every_workload_is_unchanged_on_the_machines_nodes() {
    let t = Topology::detect();
    assert!(t.is_detected() && t.nodes() >= 2, "{t:?}");
    let f = Fixtures::new("numa-real");
    let cpus: usize = (0..t.nodes()).map(|n| t.cpus(n).len()).sum();
    for threads in [t.nodes(), cpus, cpus + 1] {
        for locality in [Locality::Aware, Locality::Blind] {
            check_all(t.clone(), threads, locality, &f);
        }
    }
}
