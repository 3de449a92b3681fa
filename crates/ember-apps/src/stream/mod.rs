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
//! - `string-match [WORD...]`: `word<TAB>lines`, how many lines of the
//!   keys file are each target word (default: the words `ember gen
//!   string-match` plants).
//! - `kmeans --means FILE`: one k-means iteration over points given as
//!   text lines, `cluster<TAB>x,y,...` (see [`kmeans`]).
//!
//! Histogram, linear regression and sort read binary records, which a
//! line-based engine cannot split, so they are not streaming jobs.

mod inverted_index;
pub mod kmeans;
mod string_match;

pub use inverted_index::{DocNames, DocumentWords, InDocument};
pub use kmeans::Round;
pub use string_match::TargetLines;

use ember::stream::{Folding, Registry, StreamJob};

use crate::wordcount::WordCount;

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
    registry.register(
        "string-match",
        "word<TAB>lines: how many lines are each target word (args: the words)",
        |args| Ok(Box::new(Folding(TargetLines::from_args(args)?)) as Box<dyn StreamJob>),
    );
    registry.register(
        "kmeans",
        "cluster<TAB>x,y,...: one k-means iteration over text points (map and reduce take --means FILE)",
        |args| Ok(Box::new(Folding(Round::from_args(args)?)) as Box<dyn StreamJob>),
    );
    registry
}

fn no_arguments(args: &[String]) -> Result<(), String> {
    match args.first() {
        Some(a) => Err(format!("takes no arguments, got '{a}'")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            e.contains(
                "unknown job 'sort' (known: inverted-index, kmeans, string-match, wordcount)"
            ),
            "{e}"
        );
    }
}
