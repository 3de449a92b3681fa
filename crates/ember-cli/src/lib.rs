//! The part of the `ember` command that reads untrusted files, as a library
//! so that the fuzz targets (`fuzz/`) and tests reach it: the stats and
//! trace files that `ember report` reads ([`report`]). The command itself
//! is `src/main.rs`; its byte sizes are parsed by ember's own
//! [`parse_size`](ember::tune::parse_size).

#![deny(missing_docs)]

pub mod report;
