//! The parts of the `ember` command that read untrusted text, as a library
//! so that the fuzz targets (`fuzz/`) and tests reach them: byte sizes given
//! on the command line ([`size`]) and the stats and trace files that
//! `ember report` reads ([`report`]). The command itself is `src/main.rs`.

#![deny(missing_docs)]

pub mod report;
pub mod size;
