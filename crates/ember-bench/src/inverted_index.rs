//! `ember-bench inverted-index`: ember vs the sequential inverted index, plain
//! (the baseline) and partitioned as ember's reduce is.

use std::cell::Cell;
use std::ffi::OsStr;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::tune::parse_size;
use ember::{Input, RunOptions, Runtime};
use ember_apps::inverted_index::{
    build, document_paths, sequential, sequential_partitioned, Docs, Index,
};
use ember_apps::text::TextSpec;
use ember_cli::inputs;

use crate::harness::{Contender, Role};
use crate::machine::all_threads;
use crate::roofline;
use crate::versus::{checked, ember_name, versus, warm};
use crate::BenchArgs;

/// `ember-bench inverted-index`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Corpus size (the WORKLOADS.md text shape: 1M-word vocabulary, Zipf
    /// 1.0, 8-16 words per line).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    /// Documents are this many files (the corpus cut at line boundaries)
    /// instead of the corpus's lines.
    #[arg(long)]
    files: Option<usize>,
    #[command(flatten)]
    bench: BenchArgs,
}

/// A sequential index of the parts.
type Sequential = fn(&[&[u8]], Docs) -> ember::Result<Index>;

/// Runs a sequential index once, input mapping included.
fn run_sequential(index: Sequential, paths: &[PathBuf], docs: Docs) -> Result<Index> {
    let input = Input::files(paths)?;
    let parts: Vec<&[u8]> = (0..input.parts()).map(|p| input.part_bytes(p)).collect();
    Ok(index(&parts, docs)?)
}

/// The files to index and what a document is in them.
fn corpus(a: &Args, spec: &TextSpec) -> Result<(Vec<PathBuf>, Docs)> {
    Ok(match a.files {
        None => (vec![inputs::text(spec).cached()?], Docs::Lines),
        Some(n) => (document_paths(&[inputs::docs(spec, n)?])?, Docs::Files),
    })
}

/// Runs `ember-bench inverted-index`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = TextSpec {
        size: a.size,
        ..TextSpec::default()
    };
    let (paths, docs) = corpus(&a, &spec)?;
    let bytes = warm(&paths)?;
    // The untimed first sequential run is the oracle.
    let want = run_sequential(sequential, &paths, docs)?;
    let documents = Cell::new(0);
    let baseline = |name: &'static str, index: Sequential| {
        let (want, paths) = (&want, &paths);
        Contender::new(name, move || {
            checked(want, name, || {
                Ok((run_sequential(index, paths, docs)?, None))
            })
        })
        .role(Role::Work(1))
    };
    let ember = |rt: &Runtime| {
        let mut numbering = None;
        let mut m = checked(&want, &ember_name(rt.threads()), || {
            let b = build(rt, &Input::files(&paths)?, docs, &RunOptions::default())?;
            documents.set(b.documents);
            numbering = b.numbering;
            Ok((b.index, Some(b.stats)))
        })?;
        m.note = numbering.map(|n| {
            format!(
                "line numbering pass (map-only run before the index): {:.3} s",
                n.total_secs
            )
        });
        Ok(m)
    };
    // Every word of the corpus, counted plainly: what the tokenizer limit
    // must find.
    let words = {
        let input = Input::files(&paths)?;
        let mut n = 0u64;
        for p in 0..input.parts() {
            ember_apps::wordcount::for_each_word(input.part_bytes(p), |_| n += 1);
        }
        n
    };
    let threads = all_threads(a.bench.threads);
    let mut more = vec![baseline("sequential, partitioned", sequential_partitioned)];
    more.extend(roofline::tokenizer(&paths, threads, words));
    more.extend(roofline::bandwidth(&paths, threads));
    let mut v = versus(
        a.bench,
        baseline("sequential (1 thread)", sequential),
        ember,
        more,
    )?;
    // The bench holds the oracle index beside every run's.
    let mut args = vec![OsStr::new("inverted-index")];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    if docs == Docs::Lines {
        args.push(OsStr::new("--lines"));
    }
    args.extend([OsStr::new("-o"), OsStr::new("-")]);
    v.measure_command(&args)?;
    let postings: usize = want.iter().map(|(_, ids)| ids.len()).sum();
    let shape = match docs {
        Docs::Lines => "lines".to_string(),
        Docs::Files => format!("{} files", paths.len()),
    };
    let mb = spec.size as f64 / 1e6;
    v.print(
        &format!(
            "inverted index, {mb:.1} MB, {} documents ({shape}), {} words, {postings} postings",
            documents.get(),
            want.len(),
        ),
        mb,
        "MB",
    );
    v.print_speedup("sequential baseline");
    v.print_roofline("inverted-index", bytes);
    v.ember_all().print_phases("");
    Ok(())
}
