//! The inverted index in the streaming contract: `word<TAB>doc,doc,...`.

use std::io::{BufRead, Write};

use ember::isolate::FIRST_LINE_ENV;
use ember::stream::{escape, unescape, BinaryJob, Encoded, Folding, Record, StreamJob, Text};
use ember::{
    Bytes, Combiner, Emit, Error, Input, Job, MapResult, Records, Result, RunOptions, Runtime,
    Split, Stats,
};

use crate::inverted_index::{InvertedIndex, LineNumbers};
use crate::wordcount::{for_each_word, is_separator};

use super::HADOOP_INPUT_FILE;

/// The words of one named document, for an inverted index built by an
/// engine's shuffle: map emits each distinct word with the document's
/// name, combine and reduce merge name lists.
#[derive(Debug, Clone)]
pub struct DocumentWords {
    doc: Bytes,
}

impl DocumentWords {
    /// The job for the document `doc`.
    pub fn new(doc: &[u8]) -> Self {
        DocumentWords {
            doc: Bytes::new(doc),
        }
    }

    /// From `--doc NAME`, or the environment (see the module's notes).
    pub(super) fn from_args(args: &[String]) -> Result<Self, String> {
        match args {
            [] => Ok(Self::new(
                std::env::var(HADOOP_INPUT_FILE)
                    .as_deref()
                    .unwrap_or("-")
                    .as_bytes(),
            )),
            [flag, name] if flag == "--doc" => Ok(Self::new(name.as_bytes())),
            _ => Err(format!("expected [--doc NAME], got '{}'", args.join(" "))),
        }
    }
}

/// The names of the documents a word occurs in: sorted, without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocNames(Vec<Bytes>);

impl DocNames {
    /// The names, sorted.
    pub fn names(&self) -> &[Bytes] {
        &self.0
    }
}

impl Text for DocNames {
    fn write_text(&self, out: &mut Vec<u8>) {
        for (i, name) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            escape(name.as_bytes(), b",", out);
        }
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        let mut names = text
            .split(|&b| b == b',')
            .map(|name| unescape(name).map(|n| Bytes::new(&n)))
            .collect::<Option<Vec<_>>>()?;
        names.sort();
        names.dedup();
        Some(DocNames(names))
    }
}

/// Gives each word its document's name; merges name lists.
#[derive(Debug, Clone, Default)]
pub struct InDocument {
    doc: Option<Bytes>,
}

impl Combiner<()> for InDocument {
    type State = DocNames;
    type Reduced<'a> = DocNames;

    fn init(&self, (): ()) -> DocNames {
        DocNames(self.doc.iter().cloned().collect())
    }
    fn add(&self, _names: &mut DocNames, (): ()) {}
    /// Both lists are sorted: one linear merge, so a word in every one of
    /// many documents costs no sort per merged line.
    fn merge(&self, names: &mut DocNames, other: DocNames) {
        let mine = std::mem::take(&mut names.0);
        let mut merged = Vec::with_capacity(mine.len() + other.0.len());
        let (mut a, mut b) = (mine.into_iter().peekable(), other.0.into_iter().peekable());
        while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
            match x.cmp(y) {
                std::cmp::Ordering::Less => merged.extend(a.next()),
                std::cmp::Ordering::Greater => merged.extend(b.next()),
                std::cmp::Ordering::Equal => {
                    merged.extend(a.next());
                    b.next();
                }
            }
        }
        merged.extend(a.chain(b));
        names.0 = merged;
    }
    fn finish<O>(&self, names: DocNames, reduce: impl FnOnce(DocNames) -> O) -> O {
        reduce(names)
    }
}

impl Job for DocumentWords {
    type Key = Bytes;
    type Value = ();
    type Combiner = InDocument;
    type Out = DocNames;

    fn records(&self) -> Records {
        Records::Separator(is_separator)
    }
    fn combiner(&self) -> InDocument {
        InDocument {
            doc: Some(self.doc.clone()),
        }
    }
    fn map<E: Emit<Bytes, ()>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for_each_word(split.data, |w| emit.emit(w, ()));
        Ok(())
    }
    fn reduce(&self, _word: &Bytes, docs: DocNames) -> DocNames {
        docs
    }
}

/// The inverted index whose documents are lines, `word<TAB>id,id,...`
/// with the ids of [`crate::inverted_index::Docs::Lines`]: a line's index
/// over all the input's files. A map numbers its input's lines from
/// [`FIRST_LINE_ENV`] (0 if unset), which an isolated run
/// ([`ember::isolate::run`]) sets to its split's first line; its input
/// must be in memory (a split of a file, not a stream).
#[derive(Debug, Clone, Copy, Default)]
pub struct LineDocuments;

impl StreamJob for LineDocuments {
    fn numbers_lines(&self) -> bool {
        true
    }

    /// Line ids as their bytes, not in text.
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
        with_line_ids(runtime, input, opts, |job| {
            Folding(job).map(runtime, input, opts, out)
        })
    }

    fn combine(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        Folding(InvertedIndex::merging()).combine(name, input, out)
    }

    fn reduce(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        Folding(InvertedIndex::merging()).reduce(name, input, out)
    }
}

impl BinaryJob for LineDocuments {
    fn map_records(
        &self,
        runtime: &Runtime,
        input: &Input<'_>,
        opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats> {
        with_line_ids(runtime, input, opts, |job| {
            Encoded::new(job).map_records(runtime, input, opts, out)
        })
    }

    fn reduce_records(
        &self,
        name: &str,
        input: &mut dyn Iterator<Item = Result<Record<'_>>>,
        out: &mut dyn Write,
    ) -> Result<()> {
        Encoded::new(InvertedIndex::merging()).reduce_records(name, input, out)
    }
}

/// `f` of the inverted index of `input`'s lines, numbered from
/// [`FIRST_LINE_ENV`] (0 if unset).
fn with_line_ids(
    runtime: &Runtime,
    input: &Input<'_>,
    opts: &RunOptions,
    f: impl FnOnce(InvertedIndex<'_>) -> Result<Stats>,
) -> Result<Stats> {
    let first = match std::env::var(FIRST_LINE_ENV) {
        Ok(n) => n
            .parse()
            .map_err(|_| Error::Config(format!("{FIRST_LINE_ENV}: '{n}' is not a line number")))?,
        Err(_) => 0,
    };
    let (numbers, _) = LineNumbers::build(runtime, input, opts)?;
    f(InvertedIndex::lines(numbers.starting_at(first)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_names_escape_their_commas_and_read_back_sorted() {
        let names = DocNames(vec![Bytes::new(b"a,b"), Bytes::new(b"c\td")]);
        let mut text = Vec::new();
        names.write_text(&mut text);
        assert_eq!(text, b"a\\x2cb,c\\td");
        assert_eq!(DocNames::read_text(&text), Some(names));
        assert_eq!(
            DocNames::read_text(b"z,a,z").unwrap().names(),
            [Bytes::new(b"a"), Bytes::new(b"z")]
        );
    }

    #[test]
    fn merging_name_lists_keeps_them_sorted_without_repeats() {
        let names = |v: &[&str]| DocNames(v.iter().map(|n| Bytes::new(n.as_bytes())).collect());
        let mut a = names(&["a", "c", "e"]);
        InDocument::default().merge(&mut a, names(&["b", "c", "f", "g"]));
        assert_eq!(a, names(&["a", "b", "c", "e", "f", "g"]));
        InDocument::default().merge(&mut a, names(&[]));
        assert_eq!(a, names(&["a", "b", "c", "e", "f", "g"]));
    }
}
