//! Inverted index: for every word, the sorted list of the documents it
//! occurs in.
//!
//! **Documents** are either the input's files ([`Docs::Files`]: document id
//! = the file's index in the input, which the CLI orders by path) or the
//! lines of the input ([`Docs::Lines`]: document id = the line's index,
//! 0-based, counted across the input's files in order). Ids are `u32`: an
//! input with more than 2^32 documents is rejected as
//! [`Error::InvalidInput`].
//!
//! **Words** are those of word count ([`for_each_word`]): maximal runs of
//! ASCII letters, lower-cased.
//!
//! **Line ids without a sequential pass.** A split knows its byte offset,
//! not its line number. Before the index job, a map-only ember job counts
//! the newlines of every [`LINE_BLOCK`]-byte block of the input (in
//! parallel, on the same runtime); the prefix sums give the line number at
//! every block start, and a split's first line number is the one of its
//! block plus the newlines between the block start and the split (fewer
//! than [`LINE_BLOCK`] bytes to scan). So ids are dense and do not depend
//! on the split size or the thread count.
//!
//! **Postings without duplicates.** A word repeated in one document must
//! not repeat its id: the [`Postings`] combiner drops a value equal to the
//! last one it kept for the key. Within one worker a document's words arrive
//! together (a split is mapped by one worker, in order), so a repeat is
//! always adjacent and the check is one compare on the entry the insert has
//! already found: no per-document set. Ids a document split across workers
//! (files mode) leaves twice are removed by `reduce`, which sorts and
//! dedups.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use ember::plumbing::Values;
use ember::spill::{decode_len, encode_len, Codec, Encode};
use ember::stream::Text;
use ember::{
    Bytes, Combiner, Emit, Error, Input, Job, KeepAll, Key, MapOnlyJob, MapResult, Records, Result,
    RunOptions, Runtime, Split, Stats,
};
use hashbrown::hash_table::{Entry, HashTable};

use crate::decimal::push_after;
use crate::text::{write_text, TextSpec};
use crate::wordcount::{for_each_batch, for_each_line_batch, for_each_word, is_separator};

/// A document id: a file index or a line index.
pub type DocId = u32;

/// Bytes per block of the line-numbering pass.
pub const LINE_BLOCK: usize = 16 << 10;

/// What a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Docs {
    /// Each input file (part) is one document; its id is its index.
    Files,
    /// Each line is one document; its id is its 0-based line index over the
    /// whole input (files in order; a last line without a newline counts).
    Lines,
}

/// Keeps a key's document ids, dropping an id equal to the last one kept
/// (a word repeated within a document). `reduce` receives the ids of every
/// worker, in schedule order: it sorts and dedups them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Postings;

/// The state [`Postings`] keeps per key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostingList {
    /// The last id added, kept beside the list, in the hash table entry
    /// the insert has already loaded: checking it costs no access to the
    /// list's heap buffer, which is a cache miss for all but the frequent
    /// words (profiling showed that load as a large share of the run's
    /// time; `ember-bench inverted-index` measures the run).
    last: DocId,
    /// The ids, in the order they were added.
    ids: Vec<DocId>,
}

impl PostingList {
    /// The ids, in the order they were added.
    pub fn into_ids(self) -> Vec<DocId> {
        self.ids
    }
}

/// A list's bytes (what it spills and what an isolated run's records
/// carry): its length, then each id as the LEB128 varint of its zigzagged
/// difference from the id before (0 before the first). The ids of a
/// worker's list rise, most by a little: a line of a common word a few
/// lines after the last takes one byte, not four.
impl Encode for PostingList {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_len(self.ids.len(), out);
        out.reserve(self.ids.len());
        let mut before = 0;
        for &id in &self.ids {
            encode_len(zigzag(id.wrapping_sub(before)) as usize, out);
            before = id;
        }
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        let n = decode_len(input)?;
        // Every id takes at least a byte: a damaged length cannot make
        // this allocate more than the bytes left.
        let mut ids = Vec::with_capacity(n.min(input.len()));
        let mut before: DocId = 0;
        for _ in 0..n {
            let step = u32::try_from(decode_len(input)?).ok()?;
            before = before.wrapping_add(unzigzag(step));
            ids.push(before);
        }
        Some(PostingList {
            last: *ids.last()?,
            ids,
        })
    }
}

/// The difference `step` (taken modulo 2^32) with its sign in the lowest
/// bit: small differences either way are small numbers.
fn zigzag(step: DocId) -> u32 {
    let step = step as i32;
    ((step << 1) ^ (step >> 31)) as u32
}

/// The difference (modulo 2^32) that [`zigzag`] made `n` of.
fn unzigzag(n: u32) -> DocId {
    (n >> 1) ^ (n & 1).wrapping_neg()
}

/// The ids' text, `id,id,...` (the streaming contract's form of a list),
/// for an inverted index of lines run isolated
/// ([`crate::stream::LineDocuments`]).
impl Text for PostingList {
    fn write_text(&self, out: &mut Vec<u8>) {
        self.ids.write_text(out);
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        let ids = Vec::<DocId>::read_text(text)?;
        Some(PostingList {
            last: *ids.last()?,
            ids,
        })
    }
}

/// Ids a new list has room for: 24 bytes, what the smallest block of
/// common allocators (glibc: 32-byte chunks) holds anyway; it spares the
/// first two reallocations of every list (half the words of a Zipf text
/// never need more room in a worker).
const FIRST_CAPACITY: usize = 6;

impl Combiner<DocId> for Postings {
    type State = PostingList;
    type Reduced<'a> = PostingList;
    // A posting list keeps one id per document: it grows with the values.
    const FOLDS: bool = false;
    #[inline(always)]
    fn init(&self, id: DocId) -> PostingList {
        let mut ids = Vec::with_capacity(FIRST_CAPACITY);
        ids.push(id);
        PostingList { last: id, ids }
    }
    #[inline(always)]
    fn add(&self, list: &mut PostingList, id: DocId) {
        if list.last != id {
            list.last = id;
            list.ids.push(id);
        }
    }
    fn merge(&self, list: &mut PostingList, other: PostingList) {
        // `last` is only a hint to `add`, which no longer runs.
        KeepAll.merge(&mut list.ids, other.ids);
    }
    fn finish<O>(&self, list: PostingList, reduce: impl FnOnce(PostingList) -> O) -> O {
        reduce(list)
    }
    /// A key's ids held together (the intern and append containers), in
    /// one vector of the run's length: folding them one at a time grows
    /// the list from [`FIRST_CAPACITY`] by reallocation. Drops an id equal
    /// to the one before it, as `add` does.
    fn finish_values<O>(
        &self,
        mut values: Values<'_, DocId>,
        reduce: impl FnOnce(PostingList) -> O,
    ) -> O {
        // Copied whole (a `collect` would move them one at a time).
        let mut ids = values.as_mut_slice().to_vec();
        ids.dedup();
        let last = *ids.last().expect("a key has at least one value");
        reduce(PostingList { last, ids })
    }
}

/// Checks that `n` documents can be numbered with [`DocId`]s.
pub fn check_doc_count(n: u64) -> Result<()> {
    let max = DocId::MAX as u64 + 1;
    if n > max {
        return Err(Error::InvalidInput(format!(
            "{n} documents, but document ids are 32-bit: at most {max} documents \
             (files or lines) per index"
        )));
    }
    Ok(())
}

/// The line number at the start of every [`LINE_BLOCK`] of every input
/// part, so that any line's number is found by scanning less than one
/// block.
#[derive(Debug)]
pub struct LineNumbers<'a> {
    /// The parts' bytes.
    parts: Vec<&'a [u8]>,
    /// `first[p][b]`: the number of the first line starting at or after
    /// byte `b * LINE_BLOCK` of part `p`, counted over the whole input.
    first: Vec<Vec<u64>>,
    /// Lines in the whole input.
    lines: u64,
}

/// Counts the newlines of every block (the numbering pass's map).
struct CountNewlines;

impl MapOnlyJob for CountNewlines {
    /// (part, block index).
    type Key = (usize, usize);
    type Value = u64;

    fn records(&self) -> Records {
        Records::Fixed(LINE_BLOCK)
    }

    fn map(&self, split: Split<'_>, out: &mut Vec<((usize, usize), u64)>) -> MapResult {
        let first = split.offset as usize / LINE_BLOCK;
        for (i, block) in split.data.chunks(LINE_BLOCK).enumerate() {
            out.push(((split.part, first + i), count_newlines(block)));
        }
        Ok(())
    }

    fn sort_output(&self) -> bool {
        false
    }
}

/// The `\n` bytes in `data`, counted with `memchr`'s vector search
/// (a plain `filter().count()` compiles, without a target CPU, to a much
/// slower loop; docs/measurements.md, "Inverted index").
fn count_newlines(data: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', data).count() as u64
}

/// Lines in one part: its newlines, plus a last line without one.
fn lines_in(part: &[u8], newlines: u64) -> u64 {
    newlines + u64::from(part.last().is_some_and(|&b| b != b'\n'))
}

impl<'a> LineNumbers<'a> {
    /// Numbers the lines of `input` with a map-only run on `rt`; returns the
    /// numbering and that run's stats. Fails if there are more lines than
    /// [`DocId`]s, or if `input` is streamed: the numbering and the index
    /// job both read the input, and a split's line number is found by
    /// scanning the input's bytes, so line documents need the input in
    /// memory (memory-mapped). Documents that are files stream fine.
    pub fn build(rt: &Runtime, input: &'a Input<'_>, opts: &RunOptions) -> Result<(Self, Stats)> {
        if input.is_streamed() {
            return Err(Error::Config(format!(
                "an inverted index of lines needs its input in memory (it is read twice): \
                 '{}' is streamed; memory-map it (Ingest::Mmap) or index files instead",
                input.part_name(0).display()
            )));
        }
        let parts: Vec<&'a [u8]> = (0..input.parts()).map(|p| input.part_bytes(p)).collect();
        let counts = rt.run_map_only(&CountNewlines, input, opts)?;
        let mut first: Vec<Vec<u64>> = parts
            .iter()
            .map(|p| vec![0; p.len().div_ceil(LINE_BLOCK)])
            .collect();
        for ((p, b), n) in counts.pairs {
            first[p][b] = n;
        }
        let mut lines = 0;
        for (blocks, part) in first.iter_mut().zip(&parts) {
            let mut newlines = 0;
            for b in blocks.iter_mut() {
                let n = *b;
                *b = lines + newlines;
                newlines += n;
            }
            lines += lines_in(part, newlines);
        }
        check_doc_count(lines)?;
        Ok((
            LineNumbers {
                parts,
                first,
                lines,
            },
            counts.stats,
        ))
    }

    /// Lines in the whole input.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The numbering with `first` lines before the input's first (the
    /// input is a part of a larger one). Fails if the last line's id does
    /// not fit a [`DocId`].
    pub fn starting_at(mut self, first: u64) -> Result<Self> {
        for block in self.first.iter_mut().flatten() {
            *block += first;
        }
        self.lines += first;
        check_doc_count(self.lines)?;
        Ok(self)
    }

    /// The number of the line starting at byte `offset` of part `part`.
    fn line_at(&self, part: usize, offset: usize) -> u64 {
        let block = offset / LINE_BLOCK;
        let from = block * LINE_BLOCK;
        self.first[part][block] + count_newlines(&self.parts[part][from..offset])
    }
}

/// The inverted index job.
#[derive(Debug)]
pub struct InvertedIndex<'a> {
    /// `None`: documents are files; else the line numbering.
    lines: Option<LineNumbers<'a>>,
}

impl<'a> InvertedIndex<'a> {
    /// Documents are the input's files (parts). Fails if there are more
    /// files than [`DocId`]s.
    pub fn files(input: &Input<'_>) -> Result<Self> {
        check_doc_count(input.parts() as u64)?;
        Ok(InvertedIndex { lines: None })
    }

    /// Documents are lines, numbered by `lines`.
    pub fn lines(lines: LineNumbers<'a>) -> Self {
        InvertedIndex { lines: Some(lines) }
    }

    /// The job for merging posting lists only (combine and reduce, which
    /// do not depend on what a document is): its map numbers documents
    /// as files.
    pub(crate) fn merging() -> Self {
        InvertedIndex { lines: None }
    }

    /// Documents in the input.
    pub fn documents(&self, input: &Input<'_>) -> u64 {
        self.lines
            .as_ref()
            .map_or(input.parts() as u64, LineNumbers::lines)
    }
}

impl Job for InvertedIndex<'_> {
    type Key = Bytes;
    type Value = DocId;
    type Combiner = Postings;
    type Out = Vec<DocId>;

    fn records(&self) -> Records {
        match self.lines {
            Some(_) => Records::Lines,
            None => Records::Separator(is_separator),
        }
    }

    fn map<E: Emit<Bytes, DocId>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let Some(numbers) = &self.lines else {
            let doc = split.part as DocId;
            for_each_batch(split.data, |words| emit.emit_probes(words, doc));
            return Ok(());
        };
        // Ids fit: `LineNumbers::build` checked the line count.
        let first = numbers.line_at(split.part, split.offset as usize) as DocId;
        for_each_line_batch(split.data, |words, line| {
            emit.emit_probes(words, first.wrapping_add(line as DocId))
        });
        Ok(())
    }

    /// Yes: partial posting lists may be joined in any order and at any
    /// time, because `reduce` sorts and dedups the ids (a document whose
    /// words a pipelined mapper handed off in two buffers leaves its id
    /// twice, as a document split across workers does). The bound on
    /// buffered bytes counts the buffers' tables, not the lists' heap
    /// memory; a buffer is handed off after at most 16 ids per key on
    /// average ([`ember::PipelineOptions`]), so its lists stay bounded too.
    fn pipelinable(&self) -> bool {
        true
    }

    /// Words and posting lists spill (a list as its ids).
    fn codec(&self) -> Option<Codec<Bytes, PostingList>> {
        Some(Codec::new())
    }

    fn reduce(&self, _word: &Bytes, list: PostingList) -> Vec<DocId> {
        // Sorted runs (a worker's ids, in its emission order), joined in
        // no guaranteed order: most often one run, already in order (a rare
        // word's), which the check finds without the sort's setup; else
        // the stable sort merges the runs rather than re-sorting.
        let mut ids = list.into_ids();
        if !ids.is_sorted() {
            ids.sort();
        }
        ids.dedup();
        ids
    }
}

/// An inverted index: `(word, sorted distinct document ids)`, by word.
pub type Index = Vec<(Bytes, Vec<DocId>)>;

/// The result of [`build`].
pub struct Built {
    /// The index.
    pub index: Index,
    /// Documents in the input.
    pub documents: u64,
    /// Stats of the index run.
    pub stats: Stats,
    /// Stats of the line-numbering run ([`Docs::Lines`] only).
    pub numbering: Option<Stats>,
}

/// Builds the inverted index of `input` on `rt`.
pub fn build(rt: &Runtime, input: &Input<'_>, docs: Docs, opts: &RunOptions) -> Result<Built> {
    let (job, numbering) = job_for(rt, input, docs, opts)?;
    let documents = job.documents(input);
    let out = rt.run_with(&job, input, opts)?;
    Ok(Built {
        index: out.pairs,
        documents,
        stats: out.stats,
        numbering,
    })
}

/// The index job for `input` (for [`Docs::Lines`], after the
/// line-numbering run, whose stats come with it).
fn job_for<'a>(
    rt: &Runtime,
    input: &'a Input<'_>,
    docs: Docs,
    opts: &RunOptions,
) -> Result<(InvertedIndex<'a>, Option<Stats>)> {
    Ok(match docs {
        Docs::Files => (InvertedIndex::files(input)?, None),
        Docs::Lines => {
            // The index run reads the input again: the numbering keeps its
            // pages, unless the caller lets them go under a memory limit
            // (then the input stays out of the process's memory, and the
            // index run maps it again from the page cache).
            let release = opts.release_mapped && opts.memory_limit.is_some();
            let numbering = opts.clone().release_mapped(release);
            let (lines, stats) = LineNumbers::build(rt, input, &numbering)?;
            (InvertedIndex::lines(lines), Some(stats))
        }
    })
}

/// The result of [`build_each`]: the index's size and the runs' stats.
pub struct Streamed {
    /// Distinct words handed over.
    pub words: u64,
    /// Document ids handed over, over all words.
    pub postings: u64,
    /// Documents in the input.
    pub documents: u64,
    /// Stats of the index run.
    pub stats: Stats,
    /// Stats of the line-numbering run ([`Docs::Lines`] only).
    pub numbering: Option<Stats>,
}

/// Builds the inverted index of `input` on `rt` as [`build`] does, but
/// hands each word and its ids to `each`, in word order, instead of
/// collecting the index ([`Runtime::run_each`]): a run that spilled to
/// disk merges its runs a few key ranges at a time and hands each
/// range's words over in order, so the index is never all held in
/// memory. The first error
/// `each` returns stops the run.
pub fn build_each(
    rt: &Runtime,
    input: &Input<'_>,
    docs: Docs,
    opts: &RunOptions,
    mut each: impl FnMut(Bytes, Vec<DocId>) -> Result<()>,
) -> Result<Streamed> {
    let (job, numbering) = job_for(rt, input, docs, opts)?;
    let (mut words, mut postings) = (0, 0);
    let stats = rt.run_each(&job, input, opts, |word, ids| {
        words += 1;
        postings += ids.len() as u64;
        each(word, ids)
    })?;
    Ok(Streamed {
        words,
        postings,
        documents: job.documents(input),
        stats,
        numbering,
    })
}

/// The plain sequential inverted index, the correctness oracle and the
/// benchmark baseline, built differently from the job (so the oracle is
/// independent, and faster than per-word lists in one thread): every word
/// gets a dense number from one hash table (ember's key hashing) that also
/// keeps the last document the word was seen in; each new `(word number,
/// document)` is appended to one vector; a counting sort by word number
/// then lays the postings out word by word, already in document order
/// (documents are visited in id order); finally the words are sorted.
pub fn sequential(parts: &[&[u8]], docs: Docs) -> Result<Index> {
    let mut all = Numbered::default();
    for_each_posting(parts, docs, |word, doc| all.add(word, doc))?;
    let mut index = all.into_index();
    index.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(index)
}

/// [`sequential`] done the way ember's reduce does it, as a second
/// baseline: every `(word, document)` is first appended to one of a few
/// hundred buckets by the word's hash (one per MiB of input, at most
/// 1024), then each bucket is indexed as [`sequential`] indexes the whole
/// input. A bucket's table and counting sort fit in the caches, which the
/// whole input's do not (on the 256 MiB corpus: 943K words, 30.5M
/// postings). Tested against [`sequential`].
pub fn sequential_partitioned(parts: &[&[u8]], docs: Docs) -> Result<Index> {
    let bytes: usize = parts.iter().map(|p| p.len()).sum();
    let buckets = (bytes >> 20).max(1).next_power_of_two().min(1 << 10);
    let mut pairs: Vec<Vec<(Bytes, DocId)>> = (0..buckets).map(|_| Vec::new()).collect();
    for_each_posting(parts, docs, |word, doc| {
        let probe = Bytes::probe(word);
        // The hash's top bits: the tables below index by its low bits.
        let b = (Bytes::probe_hash(&probe) >> 54) as usize & (buckets - 1);
        pairs[b].push((Bytes::from_probe(&probe), doc));
    })?;
    let mut index = Index::new();
    for bucket in pairs {
        let mut postings = Numbered::default();
        for (word, doc) in bucket {
            postings.add(word.as_bytes(), doc);
        }
        index.extend(postings.into_index());
    }
    index.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(index)
}

/// Calls `add(word, document)` for every word of every document, in
/// document order.
fn for_each_posting(parts: &[&[u8]], docs: Docs, mut add: impl FnMut(&[u8], DocId)) -> Result<()> {
    match docs {
        Docs::Files => {
            check_doc_count(parts.len() as u64)?;
            for (doc, data) in parts.iter().enumerate() {
                for_each_word(data, |w| add(w, doc as DocId));
            }
        }
        Docs::Lines => {
            let total = parts
                .iter()
                .map(|p| lines_in(p, count_newlines(p)))
                .sum::<u64>();
            check_doc_count(total)?;
            let mut doc: DocId = 0;
            for data in parts {
                for line in lines_of(data) {
                    for_each_word(line, |w| add(w, doc));
                    doc = doc.wrapping_add(1);
                }
            }
        }
    }
    Ok(())
}

/// Words numbered in a hash table, each with the last document it was seen
/// in, and the distinct `(word number, document)` postings in order.
#[derive(Default)]
struct Numbered {
    /// A word, its number, and the last document it was seen in.
    table: HashTable<(Bytes, u32, DocId)>,
    postings: Vec<(u32, DocId)>,
}

impl Numbered {
    /// Adds a word seen in `doc` (documents come in id order).
    fn add(&mut self, word: &[u8], doc: DocId) {
        let probe = Bytes::probe(word);
        let hash = Bytes::probe_hash(&probe);
        let next = self.table.len() as u32;
        match self
            .table
            .entry(hash, |e| e.0.matches(&probe), |e| e.0.hash_owned())
        {
            Entry::Occupied(mut o) => {
                let slot = o.get_mut();
                if slot.2 != doc {
                    slot.2 = doc;
                    self.postings.push((slot.1, doc));
                }
            }
            Entry::Vacant(v) => {
                v.insert((Bytes::from_probe(&probe), next, doc));
                self.postings.push((next, doc));
            }
        }
    }

    /// Every word with its documents, in no particular word order.
    fn into_index(self) -> Index {
        let Numbered { table, postings } = self;
        // Counting sort by word number: `start[w]..start[w + 1]` will hold
        // word w's documents.
        let mut start = vec![0usize; table.len() + 1];
        for &(w, _) in &postings {
            start[w as usize + 1] += 1;
        }
        for w in 0..table.len() {
            start[w + 1] += start[w];
        }
        let mut next = start.clone();
        let mut laid_out = vec![0; postings.len()];
        for (w, doc) in postings {
            laid_out[next[w as usize]] = doc;
            next[w as usize] += 1;
        }
        table
            .into_iter()
            .map(|(word, w, _)| {
                let w = w as usize;
                (word, laid_out[start[w]..start[w + 1]].to_vec())
            })
            .collect()
    }
}

/// The lines of `data`, each with its newline (the last one may lack it).
fn lines_of(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = data;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
        let (line, tail) = rest.split_at(end);
        rest = tail;
        Some(line)
    })
}

/// Writes the index as `word<TAB>id,id,...` lines.
pub fn write_index(index: &[(Bytes, Vec<DocId>)], out: &mut impl Write) -> io::Result<()> {
    let mut w = IndexWriter::new(out);
    for (word, ids) in index {
        w.write(word, ids)?;
    }
    Ok(())
}

/// Writes an index one `word<TAB>id,id,...` line at a time (the lines of
/// [`write_index`]), for an index handed over word by word
/// ([`build_each`]).
pub struct IndexWriter<W> {
    out: W,
    line: Vec<u8>,
}

impl<W: Write> IndexWriter<W> {
    /// A writer of lines to `out`.
    pub fn new(out: W) -> Self {
        IndexWriter {
            out,
            line: Vec::with_capacity(1 << 12),
        }
    }

    /// Writes the line of `word` and its `ids`.
    pub fn write(&mut self, word: &Bytes, ids: &[DocId]) -> io::Result<()> {
        self.line.clear();
        push_line(word, ids, &mut self.line);
        self.out.write_all(&self.line)
    }
}

/// Appends the line of `word` and its `ids`, `word<TAB>id,id,...` and a
/// newline: a line of [`write_index`].
pub fn push_line(word: &Bytes, ids: &[DocId], line: &mut Vec<u8>) {
    // An id's digits and comma, and the 16 bytes `push_after` stores.
    line.reserve(word.as_bytes().len() + ids.len() * 11 + 17);
    line.extend_from_slice(word.as_bytes());
    let mut sep = b'\t';
    for &id in ids {
        push_after(line, sep, id.into());
        sep = b',';
    }
    line.push(b'\n');
}

/// Every file named by `paths` (files, folders and glob patterns, as
/// [`ember::expand_paths`] reads them), each once, sorted by path: the
/// documents of a files-mode index, a file's id being its index here (as
/// `ember inverted-index` and the Python package number them).
pub fn document_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = ember::expand_paths(paths)?;
    files.sort();
    Ok(files)
}

/// The name of document `i` of `files` written by [`write_docs`]: zero
/// padded, so that path order is document order.
pub fn doc_name(i: usize, files: usize) -> String {
    let width = files.saturating_sub(1).to_string().len().max(6);
    format!("doc-{i:0width$}.txt")
}

/// Writes the text corpus of `spec` into `dir` as `files` documents of
/// about `spec.size / files` bytes each, cut at line boundaries (the same
/// bytes as `ember gen text`, in [`doc_name`] files). Files past the end of
/// the text, when there are more files than lines, are empty. Calls
/// `progress(bytes_written)` as it goes.
pub fn write_docs(
    spec: &TextSpec,
    files: usize,
    dir: &Path,
    progress: impl FnMut(u64),
) -> io::Result<()> {
    if files == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the number of documents must be at least 1",
        ));
    }
    std::fs::create_dir_all(dir)?;
    let mut w = DocWriter {
        dir: dir.to_path_buf(),
        files,
        size: spec.size,
        index: 0,
        written: 0,
        file: DocWriter::create(dir, 0, files)?,
    };
    write_text(spec, &mut w, progress)?;
    w.file.flush()?;
    for i in w.index + 1..files {
        DocWriter::create(dir, i, files)?;
    }
    Ok(())
}

/// Cuts a byte stream into documents at line boundaries.
struct DocWriter {
    dir: PathBuf,
    files: usize,
    /// Total bytes the stream will have.
    size: u64,
    /// The document being written.
    index: usize,
    /// Bytes written so far, over all documents.
    written: u64,
    file: BufWriter<File>,
}

impl DocWriter {
    fn create(dir: &Path, i: usize, files: usize) -> io::Result<BufWriter<File>> {
        Ok(BufWriter::with_capacity(
            1 << 16,
            File::create(dir.join(doc_name(i, files)))?,
        ))
    }
}

impl Write for DocWriter {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let len = buf.len();
        while self.index + 1 < self.files {
            // Document `index` ends with the first newline at or after its
            // share of the bytes.
            let end = (self.index as u64 + 1) * self.size / self.files as u64;
            let from = end.saturating_sub(self.written + 1).min(buf.len() as u64) as usize;
            let Some(nl) = memchr::memchr(b'\n', &buf[from..]) else {
                break;
            };
            let (doc, rest) = buf.split_at(from + nl + 1);
            self.file.write_all(doc)?;
            self.written += doc.len() as u64;
            self.file.flush()?;
            self.index += 1;
            self.file = DocWriter::create(&self.dir, self.index, self.files)?;
            buf = rest;
        }
        self.file.write_all(buf)?;
        self.written += buf.len() as u64;
        Ok(len)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_the_word_then_every_id_in_decimal() {
        let mut ids: Vec<DocId> = vec![0, 1, 9, 10, 99, 100, 65_535, DocId::MAX];
        ids.extend(
            (0..10)
                .map(|k| 10u32.pow(k) - 1)
                .chain((0..10).map(|k| 10u32.pow(k))),
        );
        ids.extend((0..2000u32).map(|i| i.wrapping_mul(2_654_435_761)));
        let mut line = b"before".to_vec();
        push_line(&Bytes::from("word"), &ids, &mut line);
        let digits: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
        let want = format!("beforeword\t{}\n", digits.join(","));
        assert_eq!(String::from_utf8(line).unwrap(), want);
    }

    #[test]
    fn posting_lists_read_back_from_their_bytes_whatever_their_order() {
        for ids in [
            vec![0],
            vec![7, 8, 9, 4_000_000],
            vec![DocId::MAX, 0, DocId::MAX, 1, 5, 3],
        ] {
            let list = PostingList {
                last: *ids.last().unwrap(),
                ids,
            };
            let mut bytes = Vec::new();
            list.encode(&mut bytes);
            let mut input = &bytes[..];
            assert_eq!(PostingList::decode(&mut input), Some(list.clone()));
            assert!(input.is_empty());
            // Cut short anywhere, it does not read.
            for end in 0..bytes.len() {
                assert_eq!(PostingList::decode(&mut &bytes[..end]), None);
            }
        }
        // Rising ids a little apart take a byte each after the first.
        let list = Postings.init(1_000_000);
        let mut bytes = Vec::new();
        PostingList {
            ids: (1_000_000..1_000_100).collect(),
            ..list
        }
        .encode(&mut bytes);
        assert_eq!(bytes.len(), 1 + 3 + 99);
    }

    #[test]
    fn postings_drop_adjacent_repeats_only() {
        let mut list = Postings.init(3);
        for id in [3, 3, 5, 3, 5, 5] {
            Postings.add(&mut list, id);
        }
        Postings.merge(&mut list, Postings.init(9));
        assert_eq!(list.into_ids(), vec![3, 5, 3, 5, 9]);
    }

    #[test]
    fn reduce_gives_sorted_distinct_ids_whether_or_not_the_runs_were_in_order() {
        let job = InvertedIndex::merging();
        let word = Bytes::from("w");
        let reduce = |ids: &[DocId]| {
            let list = ids
                .iter()
                .skip(1)
                .fold(Postings.init(ids[0]), |mut l, &id| {
                    Postings.merge(&mut l, Postings.init(id));
                    l
                });
            job.reduce(&word, list)
        };
        // Runs out of order, repeats; in order with a repeat where two runs
        // meet; in order and distinct; one id.
        assert_eq!(reduce(&[7, 9, 1, 7, 2]), [1, 2, 7, 9]);
        assert_eq!(reduce(&[1, 3, 3, 8]), [1, 3, 8]);
        assert_eq!(reduce(&[2, 4, 8]), [2, 4, 8]);
        assert_eq!(reduce(&[5]), [5]);
    }

    #[test]
    fn lines_are_counted_with_an_unterminated_last_one() {
        assert_eq!(lines_in(b"", 0), 0);
        assert_eq!(lines_in(b"a\n", 1), 1);
        assert_eq!(lines_in(b"a\nb", 1), 2);
        assert_eq!(
            lines_of(b"a\n\nb").collect::<Vec<_>>(),
            [&b"a\n"[..], b"\n", b"b"]
        );
    }

    #[test]
    fn index_is_written_as_tab_and_commas() {
        let index = vec![
            (Bytes::from("ab"), vec![0, 7, 4_294_967_295]),
            (Bytes::from("c"), vec![10]),
        ];
        let mut out = Vec::new();
        write_index(&index, &mut out).unwrap();
        assert_eq!(out, b"ab\t0,7,4294967295\nc\t10\n");
    }

    #[test]
    fn too_many_documents_is_invalid_input() {
        assert!(check_doc_count(1 << 32).is_ok());
        let err = check_doc_count((1 << 32) + 1).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)));
        assert!(err.to_string().contains("4294967297 documents"), "{err}");
        assert!(err.to_string().contains("at most 4294967296"), "{err}");
    }
}
