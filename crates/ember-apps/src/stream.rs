//! The built-in jobs in the streaming contract ([`ember::stream`]): what
//! `ember stream map|combine|reduce JOB` runs, by name.
//!
//! - `wordcount`: `word<TAB>count`, the lines of `ember wordcount -o -`.
//! - `inverted-index`: `word<TAB>doc,doc,...`, the names of the documents
//!   a word occurs in, sorted by their bytes, each escaped as a byte string
//!   with its commas written `\x2c`. A map process reads one document: its
//!   name is `--doc NAME`, else the environment's
//!   `mapreduce_map_input_file` (which Hadoop Streaming sets to the file of
//!   the map task's split), else `-`.

use ember::stream::{escape, unescape, Folding, Registry, StreamJob, Text};
use ember::{Bytes, Combiner, Emit, Job, MapResult, Records, Split};

use crate::wordcount::{for_each_word, is_separator, WordCount};

/// The environment variable Hadoop Streaming names a map task's input
/// file in.
pub const HADOOP_INPUT_FILE: &str = "mapreduce_map_input_file";

/// The built-in jobs, by name.
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register(
        "wordcount",
        "word<TAB>count: words are runs of ASCII letters, lower-cased",
        |args| {
            no_arguments(args)?;
            Ok(Box::new(Folding(WordCount::new())) as Box<dyn StreamJob>)
        },
    );
    registry.register(
        "inverted-index",
        "word<TAB>doc,doc,...: map takes --doc NAME (else $mapreduce_map_input_file)",
        |args| Ok(Box::new(Folding(DocumentWords::from_args(args)?)) as Box<dyn StreamJob>),
    );
    registry
}

fn no_arguments(args: &[String]) -> Result<(), String> {
    match args.first() {
        Some(a) => Err(format!("takes no arguments, got '{a}'")),
        None => Ok(()),
    }
}

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
    fn from_args(args: &[String]) -> Result<Self, String> {
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

    fn error(name: &str, args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        match registry().job(name, &args) {
            Ok(_) => panic!("{name} {args:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_job_takes_only_the_arguments_it_knows() {
        let registry = registry();
        assert!(registry.job("wordcount", &[]).is_ok());
        let e = error("wordcount", &["--doc"]);
        assert!(e.contains("wordcount: takes no arguments"), "{e}");
        assert!(registry
            .job("inverted-index", &["--doc".into(), "a".into()])
            .is_ok());
        let e = error("inverted-index", &["--docs"]);
        assert!(e.contains("expected [--doc NAME]"), "{e}");
        let e = error("sort", &[]);
        assert!(
            e.contains("unknown job 'sort' (known: inverted-index, wordcount)"),
            "{e}"
        );
    }
}
