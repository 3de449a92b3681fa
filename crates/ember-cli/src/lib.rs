//! The parts of the `ember` command that other programs reach, as a
//! library: the stats and trace files that `ember report` reads
//! ([`report`]: untrusted input, for the fuzz targets in `fuzz/` and the
//! tests), and what the command shares with the benchmark harness
//! `ember-bench` (`crates/ember-bench`): the workloads' generated and
//! cached inputs ([`inputs`]), output files that appear whole and the
//! signals that clean up after a run ([`output`]), and arguments both take
//! ([`args`]). The command itself is `src/main.rs`; its byte sizes are
//! parsed by ember's own [`parse_size`](ember::tune::parse_size).

#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod args;
pub mod inputs;
pub mod output;
pub mod report;
