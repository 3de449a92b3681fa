//! The runtime's integration tests, as one test binary: each file of this
//! folder is a module (the tests of one part of the runtime). One binary
//! compiles the runtime's code for each test job once, where a binary per
//! file compiled it again in every file. The isolation tests (their own
//! harness, which re-runs the binary as a worker), the memcheck test (run
//! alone under valgrind) and the NUMA tests (run by name in the NUMA
//! guests) stay binaries of their own beside this folder.

#[path = "../support/modes.rs"]
mod modes;
#[path = "../support/tally.rs"]
mod tally;

mod cancel;
mod compressed;
mod custom_records;
mod input_changed;
mod input_panics;
mod multi_reader;
mod partitioned;
mod pipeline;
mod placed;
mod plain_keys;
mod runtime;
mod sort_records;
mod stream;
mod trace;
mod user_functions;

/// The harness's name of the test `name` in the module `module` (its
/// `module_path!()`): the path without the crate's name, which is what
/// `--exact` matches when a test runs this binary again for itself alone.
fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}
