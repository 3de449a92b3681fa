//! The three roles of a job in the streaming contract, for any job whose
//! key, combiner state and output have a [`Text`] form.

use std::collections::btree_map::{BTreeMap, Entry};
use std::io::{BufRead, Write};
use std::ops::Range;
use std::path::PathBuf;

use super::partial::Partial;
use super::record::{push_record, Record};
use super::text::Text;
use crate::combine::Combiner;
use crate::error::{Error, Result};
use crate::input::Input;
use crate::job::{Job, Records, StateOf};
use crate::options::RunOptions;
use crate::runtime::Runtime;
use crate::spill::Encode;
use crate::stats::Stats;

/// How a map process takes its standard input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MapInput {
    /// Records (lines, words) streamed in chunks, mapped while later
    /// chunks are read: any amount of input in bounded memory.
    #[default]
    Streamed,
    /// One whole object (an image, a block of binary records), read into
    /// memory before `map` sees it: a job whose input cannot be cut at an
    /// arbitrary record boundary, or that needs random access to all of
    /// it.
    Whole,
}

impl MapInput {
    /// The input a map process over `reader` (named `name` in errors)
    /// hands its job: a stream, or every byte of the reader in memory.
    pub fn input(
        self,
        name: &str,
        mut reader: impl std::io::Read + Send + 'static,
    ) -> Result<Input<'static>> {
        match self {
            MapInput::Streamed => Ok(Input::reader(name, reader)),
            MapInput::Whole => {
                let mut data = Vec::new();
                reader
                    .read_to_end(&mut data)
                    .map_err(|e| Error::io(name, e))?;
                Ok(Input::owned(name, data))
            }
        }
    }
}

/// Whether lines must come sorted by key: what reduce reads, or what
/// combine reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    /// Any order (combine).
    Any,
    /// Sorted by the key's text, byte by byte (reduce): a key that sorts
    /// before the line before's is an error.
    Sorted,
}

/// Reads `key<TAB>value` lines from `input` (named `name` in errors) and
/// calls `f(key, value, new_key)` for each, where `new_key` says the
/// key's text differs from the line before's. A line with no tab, a key
/// or value that does not read, or (with [`KeyOrder::Sorted`]) a key out
/// of order is an error naming the line. For a [`StreamJob`] whose
/// combine or reduce is not a [`Folding`] one.
pub fn read_lines<K: Text, V: Text>(
    name: &str,
    input: &mut dyn BufRead,
    order: KeyOrder,
    f: impl FnMut(K, V, bool) -> Result<()>,
) -> Result<()> {
    Lines::new(name, input, order).each(f)
}

/// A job as the streaming contract runs it: `map` over an input, `combine`
/// and `reduce` over `key<TAB>value` lines. [`Folding`] makes one of any
/// [`Job`] whose key, combiner state and output are [`Text`].
pub trait StreamJob: Send + Sync {
    /// How `map` takes its input: streamed (the default), or whole.
    fn map_input(&self) -> MapInput {
        MapInput::Streamed
    }
    /// The job's records, which tell an isolated run
    /// ([`crate::isolate::run`]) where a split of a file may end:
    /// [`Records::Fixed`] at a multiple of the record size, anything else
    /// after a newline (the default, [`Records::Lines`]). A job whose map
    /// takes its input whole ([`MapInput::Whole`]) gets a block of whole
    /// records if they are [`Records::Fixed`], else each file as one
    /// split.
    fn records(&self) -> Records {
        Records::Lines
    }
    /// Whether a map worker of an isolated run ([`crate::isolate::run`])
    /// needs the index of its split's first line over all the run's files
    /// (0-based, the files in order, a last line without a newline
    /// counted), which it finds in [`crate::isolate::FIRST_LINE_ENV`]: a
    /// job whose records are numbered lines. Default: no (numbering costs
    /// the parent a pass over the input).
    fn numbers_lines(&self) -> bool {
        false
    }
    /// Whether the map's output is the job's output, as a job with no
    /// reducers in Hadoop or SMR: every key's map line is its final line
    /// (what `reduce` would write for it), and the map outputs of the
    /// splits of a file, in the file's order, follow each other in key
    /// order (a job over the rows of one file, keyed by row). An isolated
    /// run ([`crate::isolate::run`]) then skips the reduce and writes the
    /// map outputs in split order. Default: no.
    fn map_only(&self) -> bool {
        false
    }
    /// The job in binary form, if it has one: an isolated run
    /// ([`crate::isolate::Workers::run`]) asked for
    /// [`Form::Binary`](super::Form::Binary) passes its pairs through its
    /// channels and to its caller as [`Record`]s rather than lines.
    /// Default: none.
    fn binary(&self) -> Option<&dyn BinaryJob> {
        None
    }
    /// Maps `input` on `runtime` with `opts` and writes the partial
    /// aggregates: one `key<TAB>state` line per distinct key, in the
    /// order of the keys' text (the order reduce reads).
    fn map(
        &self,
        runtime: &Runtime,
        input: &Input<'_>,
        opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats>;
    /// Folds `key<TAB>state` lines, in any order, into one line per key, in
    /// the order of the keys' text. `name` names the input in errors.
    fn combine(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()>;
    /// Folds `key<TAB>state` lines sorted by key (byte order of the key's
    /// text, as Hadoop and `LC_ALL=C sort` sort them) and writes each key's
    /// `key<TAB>output` line. Over the lines of a range of keys it must
    /// write what it writes for those keys over all lines: an isolated run
    /// ([`crate::isolate::run`]) reduces key ranges in separate processes
    /// and writes their outputs one after the other, as Hadoop's several
    /// reducers do.
    fn reduce(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()>;
}

/// A job's map and reduce in binary form ([`StreamJob::binary`]): the
/// pairs its text form writes as lines, written as [`Record`]s (the key's
/// text, the value's [`Encode`] bytes), in the same order.
pub trait BinaryJob: Send + Sync {
    /// As [`StreamJob::map`], writing a record where that writes a line.
    fn map_records(
        &self,
        runtime: &Runtime,
        input: &Input<'_>,
        opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats>;
    /// As [`StreamJob::reduce`], over records sorted by the key's text
    /// (as its lines are), writing a record where that writes a line.
    /// `name` names the input in errors.
    fn reduce_records(
        &self,
        name: &str,
        input: &mut dyn Iterator<Item = Result<Record<'_>>>,
        out: &mut dyn Write,
    ) -> Result<()>;
}

/// A [`Job`] in the streaming contract: its map output is its combiner's
/// states, combine merges states, reduce merges them and calls the job's
/// `reduce`.
#[derive(Debug)]
pub struct Folding<J>(pub J);

impl<J> StreamJob for Folding<J>
where
    J: Job + Send,
    J::Key: Text,
    StateOf<J>: Text,
    J::Out: Text,
{
    fn records(&self) -> Records {
        self.0.records()
    }

    fn map(
        &self,
        runtime: &Runtime,
        input: &Input<'_>,
        opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats> {
        map_sorted(&self.0, runtime, (input, opts), push_line, out)
    }

    fn combine(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        let combiner = self.0.combiner();
        let mut states: BTreeMap<J::Key, StateOf<J>> = BTreeMap::new();
        Lines::new(name, input, KeyOrder::Any).each(|key: J::Key, state, _| {
            match states.entry(key) {
                Entry::Occupied(mut into) => combiner.merge(into.get_mut(), state),
                Entry::Vacant(slot) => drop(slot.insert(state)),
            }
            Ok(())
        })?;
        write_sorted(states.iter(), push_line, out)
    }

    fn reduce(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        let mut line = Vec::new();
        let each = |f: &mut dyn FnMut(Option<J::Key>, StateOf<J>) -> Result<()>| {
            let mut lines = Lines::new(name, input, KeyOrder::Sorted);
            lines.each(|key, state, new_key| f(new_key.then_some(key), state))
        };
        fold_sorted(&self.0, each, |key, value| {
            write_line(&mut line, key, &value, out)
        })
    }
}

/// Maps `input` with `job` on `runtime` into one state per key, and
/// writes each pair with `push` (as [`write_sorted`]), in the order of
/// the keys' text.
fn map_sorted<J>(
    job: &J,
    runtime: &Runtime,
    (input, opts): (&Input<'_>, &RunOptions),
    push: impl Fn(&mut Vec<u8>, &J::Key, &StateOf<J>) -> Range<usize>,
    out: &mut dyn Write,
) -> Result<Stats>
where
    J: Job + Send,
    J::Key: Text,
{
    let partials = runtime.run_with(&Partial(job), input, opts)?;
    write_sorted(partials.pairs.iter().map(|(k, s)| (k, s)), push, out)?;
    Ok(partials.stats)
}

/// Folds the states of a sorted stream into one per key, and calls
/// `write` with each key and its reduced output, in order. `each` feeds
/// the stream to its argument: a state, with its key where it is the
/// first of the key (a new key's text differs from the one before's).
fn fold_sorted<J: Job>(
    job: &J,
    each: impl FnOnce(&mut dyn FnMut(Option<J::Key>, StateOf<J>) -> Result<()>) -> Result<()>,
    mut write: impl FnMut(&J::Key, J::Out) -> Result<()>,
) -> Result<()> {
    let combiner = job.combiner();
    let mut finish = |key: J::Key, state| {
        let value = combiner.finish(state, |r| job.reduce(&key, r));
        write(&key, value)
    };
    let mut group: Option<(J::Key, StateOf<J>)> = None;
    each(&mut |key, state| {
        group = match (group.take(), key) {
            (Some((k, mut s)), None) => {
                combiner.merge(&mut s, state);
                Some((k, s))
            }
            (Some((k, s)), Some(key)) => {
                finish(k, s)?;
                Some((key, state))
            }
            (None, Some(key)) => Some((key, state)),
            (None, None) => unreachable!("the first state of a stream starts a key"),
        };
        Ok(())
    })?;
    match group {
        Some((k, s)) => finish(k, s),
        None => Ok(()),
    }
}

/// A [`Folding`] job whose combiner state and output are also [`Encode`]:
/// it has a binary form ([`StreamJob::binary`]), its states and outputs
/// passed as their bytes.
#[derive(Debug)]
pub struct Encoded<J>(pub Folding<J>);

impl<J> Encoded<J> {
    /// `job` in the streaming contract, with a binary form.
    pub fn new(job: J) -> Self {
        Encoded(Folding(job))
    }
}

impl<J> StreamJob for Encoded<J>
where
    J: Job + Send,
    J::Key: Text,
    StateOf<J>: Text + Encode,
    J::Out: Text + Encode,
{
    fn records(&self) -> Records {
        self.0.records()
    }

    fn binary(&self) -> Option<&dyn BinaryJob> {
        Some(self)
    }

    fn map(
        &self,
        runtime: &Runtime,
        input: &Input<'_>,
        opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats> {
        self.0.map(runtime, input, opts, out)
    }

    fn combine(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        self.0.combine(name, input, out)
    }

    fn reduce(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        self.0.reduce(name, input, out)
    }
}

impl<J> BinaryJob for Encoded<J>
where
    J: Job + Send,
    J::Key: Text,
    StateOf<J>: Text + Encode,
    J::Out: Text + Encode,
{
    fn map_records(
        &self,
        runtime: &Runtime,
        input: &Input<'_>,
        opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats> {
        map_sorted(&self.0 .0, runtime, (input, opts), push_record, out)
    }

    fn reduce_records(
        &self,
        name: &str,
        input: &mut dyn Iterator<Item = Result<Record<'_>>>,
        out: &mut dyn Write,
    ) -> Result<()> {
        let mut record = Vec::new();
        let each = |f: &mut dyn FnMut(Option<J::Key>, StateOf<J>) -> Result<()>| {
            let mut keys = KeyTexts::new(KeyOrder::Sorted);
            for (number, r) in input.enumerate() {
                let r = r?;
                let bad = |what: &str| {
                    Error::InvalidInput(format!("{name}, record {}: {what}", number + 1))
                };
                let key = match keys.next(r.key).map_err(bad)? {
                    true => Some(J::Key::read_text(r.key).ok_or_else(|| bad("bad key"))?),
                    false => None,
                };
                let mut value = r.value;
                let state = StateOf::<J>::decode(&mut value)
                    .filter(|_| value.is_empty())
                    .ok_or_else(|| bad("bad value"))?;
                f(key, state)?;
            }
            Ok(())
        };
        fold_sorted(&self.0 .0, each, |key, value| {
            record.clear();
            push_record(&mut record, key, &value);
            out.write_all(&record).map_err(|e| Error::io("<output>", e))
        })
    }
}

/// Writes each of `pairs` (in key order) with `push`, which appends a
/// pair (a line or a record) to a buffer and returns where its key's text
/// lies there, in the order of the keys' text, the order reduce reads.
/// That is the key order unless keys have escaped bytes (a backslash sorts
/// before letters) or the job orders its keys itself: a first pass over
/// the keys' texts finds out, and pairs already in order are written as
/// they come, with no buffer of the whole output.
fn write_sorted<'p, K: Text + 'p, V: 'p>(
    pairs: impl Iterator<Item = (&'p K, &'p V)> + Clone,
    push: impl Fn(&mut Vec<u8>, &K, &V) -> Range<usize>,
    out: &mut dyn Write,
) -> Result<()> {
    let write = |out: &mut dyn Write, bytes: &[u8]| {
        out.write_all(bytes).map_err(|e| Error::io("<output>", e))
    };
    if in_text_order(pairs.clone().map(|(k, _)| k)) {
        let mut bytes = Vec::with_capacity(WRITE_CHUNK);
        for (key, value) in pairs {
            push(&mut bytes, key, value);
            if bytes.len() >= WRITE_CHUNK {
                write(out, &bytes)?;
                bytes.clear();
            }
        }
        return write(out, &bytes);
    }
    let mut bytes = Vec::new();
    let mut written = Vec::new(); // (start, its key's text, end)
    for (key, value) in pairs {
        let start = bytes.len();
        let key_text = push(&mut bytes, key, value);
        written.push((start, key_text, bytes.len()));
    }
    written.sort_unstable_by(|a, b| bytes[a.1.clone()].cmp(&bytes[b.1.clone()]));
    for (start, _, end) in written {
        write(out, &bytes[start..end])?;
    }
    Ok(())
}

/// Bytes of pairs [`write_sorted`] gathers before it writes them.
const WRITE_CHUNK: usize = 64 << 10;

/// Whether no key's text sorts before the one before's.
fn in_text_order<'k, K: Text + 'k>(keys: impl Iterator<Item = &'k K>) -> bool {
    let (mut last, mut text) = (Vec::new(), Vec::new());
    for (i, key) in keys.enumerate() {
        text.clear();
        key.write_text(&mut text);
        if i > 0 && text < last {
            return false;
        }
        std::mem::swap(&mut last, &mut text);
    }
    true
}

/// Writes `key<TAB>value<LF>` through the reused buffer `line`.
fn write_line<K: Text, V: Text>(
    line: &mut Vec<u8>,
    key: &K,
    value: &V,
    out: &mut dyn Write,
) -> Result<()> {
    line.clear();
    push_line(line, key, value);
    out.write_all(line).map_err(|e| Error::io("<output>", e))
}

/// Appends `key<TAB>value<LF>` to `text`; returns where the key's text
/// lies in it.
fn push_line<K: Text, V: Text>(text: &mut Vec<u8>, key: &K, value: &V) -> Range<usize> {
    let start = text.len();
    key.write_text(text);
    let key_end = text.len();
    text.push(b'\t');
    value.write_text(text);
    text.push(b'\n');
    start..key_end
}

/// The keys' texts of a stream of pairs, one after the other: whether
/// each starts a key, and, in [`KeyOrder::Sorted`], that none sorts
/// before the one before.
struct KeyTexts {
    order: KeyOrder,
    /// The key before's text (reused: no allocation per key).
    last: Vec<u8>,
    started: bool,
}

impl KeyTexts {
    fn new(order: KeyOrder) -> Self {
        KeyTexts {
            order,
            last: Vec::new(),
            started: false,
        }
    }

    /// Whether `key`'s text differs from the key before's (the first key
    /// does); an error if it sorts before it where the order matters.
    fn next(&mut self, key: &[u8]) -> std::result::Result<bool, &'static str> {
        if self.started && self.last == key {
            return Ok(false);
        }
        if self.started && self.order == KeyOrder::Sorted && self.last.as_slice() > key {
            return Err("keys out of order: input to reduce must be sorted by key");
        }
        self.started = true;
        self.last.clear();
        self.last.extend_from_slice(key);
        Ok(true)
    }
}

/// `key<TAB>value` lines read one at a time, with their place for errors.
struct Lines<'a> {
    name: &'a str,
    input: &'a mut dyn BufRead,
    order: KeyOrder,
    offset: u64,
    number: u64,
}

impl<'a> Lines<'a> {
    fn new(name: &'a str, input: &'a mut dyn BufRead, order: KeyOrder) -> Self {
        Lines {
            name,
            input,
            order,
            offset: 0,
            number: 0,
        }
    }

    /// Calls `f(key, value, new_key)` for every line, where `new_key` says
    /// the key's text differs from the line before's. With
    /// [`KeyOrder::Sorted`], a key whose text sorts before the line
    /// before's is an error.
    fn each<K: Text, V: Text>(
        &mut self,
        mut f: impl FnMut(K, V, bool) -> Result<()>,
    ) -> Result<()> {
        let mut buf = Vec::new();
        let mut keys = KeyTexts::new(self.order);
        loop {
            buf.clear();
            let n = self
                .input
                .read_until(b'\n', &mut buf)
                .map_err(|e| Error::io(self.name, e))?;
            if n == 0 {
                return Ok(());
            }
            self.number += 1;
            let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
            let (key_text, key, value) = self.parse(text)?;
            let new_key = keys.next(key_text).map_err(|e| self.malformed(e))?;
            f(key, value, new_key)?;
            self.offset += n as u64;
        }
    }

    fn parse<'t, K: Text, V: Text>(&self, text: &'t [u8]) -> Result<(&'t [u8], K, V)> {
        let tab = memchr::memchr(b'\t', text)
            .ok_or_else(|| self.malformed("no tab between key and value"))?;
        let (key_text, value_text) = (&text[..tab], &text[tab + 1..]);
        let key = K::read_text(key_text).ok_or_else(|| self.malformed("bad key"))?;
        let value = V::read_text(value_text).ok_or_else(|| self.malformed("bad value"))?;
        Ok((key_text, key, value))
    }

    fn malformed(&self, what: &str) -> Error {
        Error::Malformed {
            path: PathBuf::from(self.name),
            offset: self.offset,
            message: format!("line {}: {what}", self.number),
        }
    }
}
