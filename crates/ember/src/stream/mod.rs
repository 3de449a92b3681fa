//! The streaming contract: jobs as the mapper, combiner and reducer of an
//! engine that moves `key<TAB>value` lines (Hadoop Streaming, Spark's
//! `pipe`, a shell pipeline).
//!
//! - **map**: the input on standard input; out, one line per distinct key
//!   with the key's partial aggregate (its combiner's state over all of
//!   this process's input, not one line per record), in the order of the
//!   key's text.
//! - **combine**: partial lines in any order; out, one line per key.
//! - **reduce**: partial lines sorted by key (byte order of the key's text,
//!   as Hadoop's shuffle and `LC_ALL=C sort` sort them); out, one
//!   `key<TAB>output` line per key.
//!
//! Keys and values are written in their [`Text`] form: byte strings as they
//! are, with tabs, newlines, backslashes and bytes that are not UTF-8
//! escaped (the table in [`escape`]'s module), so every line is valid UTF-8
//! and the escaping reverses exactly.
//!
//! A program names its jobs in a [`Registry`] and calls [`main`]; the
//! `ember` command's `ember stream` runs the built-in jobs this way.
//!
//! ```
//! use ember::stream::{Folding, StreamJob};
//! use ember::{Bytes, Emit, Input, Job, MapResult, RunOptions, Runtime, Split, Sum};
//!
//! struct Lines;
//! impl Job for Lines {
//!     type Key = Bytes;
//!     type Value = u64;
//!     type Combiner = Sum;
//!     type Out = u64;
//!     fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
//!         for line in split.data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
//!             emit.emit(line, 1);
//!         }
//!         Ok(())
//!     }
//!     fn reduce(&self, _line: &Bytes, n: u64) -> u64 {
//!         n
//!     }
//! }
//!
//! let rt = Runtime::builder().threads(2).build()?;
//! let job = Folding(Lines);
//! let opts = RunOptions::default();
//! let (mut a, mut b, mut out) = (Vec::new(), Vec::new(), Vec::new());
//! job.map(&rt, &Input::bytes(b"x\ny\nx\n"), &opts, &mut a)?;
//! job.map(&rt, &Input::bytes(b"y\tz\n"), &opts, &mut b)?;
//! assert_eq!(a, b"x\t2\ny\t1\n");
//! assert_eq!(b, b"y\\tz\t1\n");
//! let shuffled = [a, b].concat(); // in key order, as a shuffle would sort them
//! let mut sorted: Vec<&[u8]> = shuffled.split_inclusive(|&b| b == b'\n').collect();
//! sorted.sort();
//! job.reduce("shuffle", &mut &sorted.concat()[..], &mut out)?;
//! assert_eq!(out, b"x\t2\ny\t1\ny\\tz\t1\n");
//! # Ok::<(), ember::Error>(())
//! ```

mod contract;
mod partial;
mod record;
mod registry;
mod text;

pub use contract::{read_lines, BinaryJob, Encoded, Folding, KeyOrder, MapInput, StreamJob};
pub use record::{push_record, records, Form, Record, Records};
pub use registry::{main, run, Factory, Registry, Role};
pub use text::{escape, unescape, Text};
