//! `ember inverted-index` and `ember gen docs`.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use clap::Args as ClapArgs;
use ember::{Bytes, Input, Runtime};
use ember_apps::inverted_index::{self, build_each, DocId, Docs, IndexWriter, Streamed};
use ember_apps::stream::DocNames;
use ember_cli::{inputs, output};

use crate::common::{write_output, RunArgs};
use crate::isolated::{self, IsolateArgs, Isolated};
use crate::lines;
use crate::text::TextArgs;

/// `ember inverted-index`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Input files, folders (read recursively, leaving out names that
    /// start with `.` or `_`) or quoted glob patterns such as 'docs/*.txt'
    /// (`-` reads standard input). Files are ordered by path: a file's
    /// document id is its index in that order.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Documents are lines (id: 0-based line index over all the files, in
    /// path order) instead of files.
    #[arg(long)]
    lines: bool,
    /// Write every `word<TAB>id,id,...`, sorted by word, to this file (`-`:
    /// standard output).
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// Write the documents as `id<TAB>path` lines to this file.
    #[arg(long, value_name = "PATH", conflicts_with = "lines")]
    doc_list: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    isolate: IsolateArgs,
}

/// `ember gen docs`.
#[derive(ClapArgs)]
#[command(mut_arg("out", |a| a.help("Output folder (created; documents are doc-NNNNNN.txt)")))]
#[command(mut_arg("size", |a| a.help("Total size of the documents, e.g. 256MiB (exact)")))]
pub(crate) struct DocsArgs {
    /// Number of documents (files).
    #[arg(long, default_value_t = 1000)]
    files: usize,
    #[command(flatten)]
    text: TextArgs,
}

/// Every file named by `paths` (folders walked), sorted by path, each
/// once; `-` alone is standard input.
fn document_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    if paths == [Path::new("-")] {
        return Ok(paths.to_vec());
    }
    Ok(inverted_index::document_paths(paths)?)
}

/// Runs `ember inverted-index`.
pub(crate) fn run(a: Args) -> Result<()> {
    let paths = document_paths(&a.paths)?;
    let (built, run) = match a.isolate.isolate {
        true => build_isolated(&a, &paths)?,
        false => (build_in_threads(&a, &paths)?, a.run.clone()),
    };
    write_output(a.doc_list.as_deref(), |w| {
        for (id, p) in paths.iter().enumerate() {
            writeln!(w, "{id}\t{}", p.display())?;
        }
        Ok(())
    })?;
    let numbering = built.numbering.as_ref().map_or(0.0, |s| s.total_secs);
    eprintln!(
        "# {} {}, {} distinct words, {} postings, {:.1} MB in {:.3} s",
        built.documents,
        if a.lines { "lines" } else { "files" },
        built.words,
        built.postings,
        built.stats.input_bytes as f64 / 1e6,
        built.stats.total_secs + numbering,
    );
    if let Some(s) = &built.numbering {
        if run.stats {
            eprintln!("line numbering pass: {:.3} s", s.total_secs);
        }
    }
    run.report(&built.stats)
}

/// Builds the index on this process's threads, writing it as
/// [`write_streamed`] does.
fn build_in_threads(a: &Args, paths: &[PathBuf]) -> Result<Streamed> {
    // In memory (standard input read whole, compressed files decoded):
    // numbering lines takes a first pass over the input before the index
    // job's. Documents that are files may stream.
    let input = if paths.len() == 1 && paths[0] == Path::new("-") {
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut data)
            .context("cannot read standard input")?;
        ember::Input::owned("<stdin>", data)
    } else if a.lines {
        ember::Input::in_memory(paths)?
    } else {
        ember::Input::open(paths, ember::tune::Ingest::Mmap)?
    };
    let rt = a.run.runtime()?;
    let docs = if a.lines { Docs::Lines } else { Docs::Files };
    write_streamed(a, &rt, &input, docs)
}

/// Builds the index with a streaming job, every split in a worker
/// process: for files, `inverted-index`, whose documents are named by
/// their files (a name becomes the file's id); for lines,
/// `inverted-index-lines`, whose ids are the thread mode's (the run gives
/// each split its first line's id). Returns it with the run's options for
/// reporting it.
fn build_isolated(a: &Args, paths: &[PathBuf]) -> Result<(Streamed, RunArgs)> {
    if a.lines {
        let job = "inverted-index-lines";
        let iso = isolated::run_binary::<Bytes, Vec<DocId>>(&a.run, &a.isolate, job, &[], paths)?;
        let documents = iso.lines.context("the isolated run did not number lines")?;
        return write_isolated(a, iso, documents, |ids, doc_ids| {
            doc_ids.extend(ids);
            Ok(())
        });
    }
    let iso = isolated::run::<Bytes, DocNames>(&a.run, &a.isolate, "inverted-index", &[], paths)?;
    // Standard input, the one document, is named by its shared memory.
    let stdin = paths == [Path::new("-")];
    let ids: HashMap<&[u8], DocId> = paths
        .iter()
        .enumerate()
        .map(|(id, p)| (p.as_os_str().as_bytes(), id as DocId))
        .collect();
    write_isolated(a, iso, paths.len() as u64, |names, doc_ids| {
        for name in names.names() {
            let id = ids.get(name.as_bytes()).or(stdin.then_some(&0));
            let id = id.ok_or_else(|| {
                let name = String::from_utf8_lossy(name.as_bytes());
                anyhow!("the isolated run named an unknown document '{name}'")
            })?;
            doc_ids.push(*id);
        }
        Ok(())
    })
}

/// Writes an isolated run's index of `documents` documents to
/// `--output`, if given: each word's document ids are what `ids_of` adds
/// for its output, sorted.
fn write_isolated<V>(
    a: &Args,
    iso: Isolated<Bytes, V>,
    documents: u64,
    mut ids_of: impl FnMut(&V, &mut Vec<DocId>) -> Result<()>,
) -> Result<(Streamed, RunArgs)> {
    let mut sink = a.output.as_deref().map(output::create).transpose()?;
    let mut lines = sink.as_mut().map(IndexWriter::new);
    let (mut postings, mut doc_ids) = (0, Vec::new());
    for (word, out) in &iso.pairs {
        doc_ids.clear();
        ids_of(out, &mut doc_ids)?;
        doc_ids.sort_unstable();
        postings += doc_ids.len() as u64;
        if let (Some(w), Some(path)) = (&mut lines, &a.output) {
            w.write(word, &doc_ids)
                .with_context(|| format!("cannot write '{}'", path.display()))?;
        }
    }
    drop(lines);
    if let Some(sink) = sink {
        sink.finish()?;
    }
    let built = Streamed {
        words: iso.pairs.len() as u64,
        postings,
        documents,
        stats: iso.stats,
        numbering: None,
    };
    Ok((built, iso.run))
}

/// Builds the index and writes it to `--output`, if given, word by word
/// as the run hands it over, formatted on every worker ([`lines`]): a run
/// that spills never holds the index in memory. The file appears only once
/// whole (see [`output`]).
fn write_streamed(a: &Args, rt: &Runtime, input: &Input<'_>, docs: Docs) -> Result<Streamed> {
    let Some(path) = a.output.as_deref() else {
        return Ok(build_streamed(a, rt, input, docs, |_, _| Ok(()))?);
    };
    let mut sink = output::create(path)?;
    // The index's text is about as long as its input.
    let expected = input.len();
    let built = lines::scoped(&mut sink, rt.threads(), expected, IndexLines, |lines| {
        let built = build_streamed(a, rt, input, docs, |word, ids| {
            let bytes = word.as_bytes().len() + 8 * ids.len();
            lines.push((word, ids), bytes).map_err(ember::Error::Output)
        })?;
        lines.finish().map_err(ember::Error::Output)?;
        Ok(built)
    })
    .map_err(|e| match e {
        ember::Error::Output(e) => {
            anyhow::Error::new(e).context(format!("cannot write '{}'", path.display()))
        }
        e => e.into(),
    })?;
    sink.finish()?;
    Ok(built)
}

/// The index's lines: a word, then its ids. The ids of a line a few lines
/// ahead are prefetched: the reduce wrote each list long before, so the
/// first load of each missed the cache.
struct IndexLines;

impl lines::Format<(Bytes, Vec<DocId>)> for IndexLines {
    fn format(&self, (word, ids): (Bytes, Vec<DocId>), text: &mut Vec<u8>) {
        inverted_index::push_line(&word, &ids, text)
    }

    #[inline(always)]
    fn prefetch(&self, (_, ids): &(Bytes, Vec<DocId>)) {
        ember::plumbing::prefetch(ids.as_ptr());
    }
}

/// Builds the index in this process's threads, handing each word and its
/// document ids to `each` in word order.
fn build_streamed(
    a: &Args,
    rt: &Runtime,
    input: &Input<'_>,
    docs: Docs,
    each: impl FnMut(Bytes, Vec<DocId>) -> ember::Result<()>,
) -> ember::Result<Streamed> {
    a.run.with_progress(|o| {
        // The index is all the run keeps of the input: a mapped file's
        // pages go as they are indexed.
        let o = &o.clone().release_mapped(true);
        build_each(rt, input, docs, o, each)
    })
}

/// Runs `ember gen docs`.
pub(crate) fn gen(a: DocsArgs) -> Result<()> {
    inputs::write_docs(&a.text.spec()?, a.files, &a.text.out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_walked_sorted_and_empty_ones_rejected() {
        let dir = std::env::temp_dir().join(format!("ember-cli-ii-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join("empty")).unwrap();
        for f in ["b.txt", "a.txt", "sub/c.txt"] {
            std::fs::write(dir.join(f), "x\n").unwrap();
        }
        let got = document_paths(&[dir.join("sub"), dir.join("b.txt"), dir.join("a.txt")]).unwrap();
        let want = vec![dir.join("a.txt"), dir.join("b.txt"), dir.join("sub/c.txt")];
        assert_eq!(got, want);
        let err = document_paths(&[dir.join("empty")])
            .unwrap_err()
            .to_string();
        let want = format!(
            "'{}': the folder holds no files",
            dir.join("empty").display()
        );
        assert!(err.contains(&want), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
