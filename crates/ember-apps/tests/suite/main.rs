//! The workloads' integration tests, as one test binary: each file of
//! this folder is a module (the tests of one workload or one mode). One
//! binary compiles the runtime's code for each job once, where a binary
//! per file compiled it again in every file that runs that job. Tests
//! that read process-wide state (the process's threads, memory or open
//! files, a global allocator) and the NUMA tests the guest script runs by
//! name stay binaries of their own beside this folder.

#[path = "../grid/mod.rs"]
mod grid;
#[path = "../../../ember/tests/support/modes.rs"]
mod modes;
#[path = "../numeric/mod.rs"]
mod numeric;
#[path = "../workloads/mod.rs"]
mod workloads;

mod concurrent_runtimes;
mod external_sort;
mod histogram;
mod ingest;
mod inverted_index;
mod kmeans;
mod linear_regression;
mod matrix_multiply;
mod pca;
mod pipeline;
mod sort;
mod spill;
mod string_match;
mod untrusted_sizes;
mod wordcount;
