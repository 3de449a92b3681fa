//! Chunked ingest gives the same results as memory-mapped input, for any
//! chunk size, many small files, standard input; keeps input memory bounded;
//! and fails cleanly on a read error.

use std::io::Read;
use std::path::{Path, PathBuf};

use ember::{Ingest, Input, RunOptions, Runtime};
use ember_apps::text::{text, TextSpec};
use ember_apps::wordcount::{sequential, WordCount};
use proptest::prelude::*;

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ember-ingest-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn counts(
    rt: &Runtime,
    input: &Input<'_>,
    chunk: usize,
    buffers: usize,
) -> (Vec<(Vec<u8>, u64)>, ember::Stats) {
    let opts = RunOptions {
        chunk_size: Some(chunk),
        chunk_buffers: Some(buffers),
        ..Default::default()
    };
    let out = rt.run_with(&WordCount::new(), input, &opts).unwrap();
    let pairs = out
        .pairs
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v))
        .collect();
    (pairs, out.stats)
}

fn corpus(size: u64, seed: u64) -> Vec<u8> {
    text(&TextSpec {
        size,
        vocab: 20_000,
        zipf: 1.0,
        seed,
    })
}

#[test]
fn chunked_equals_mmap_for_every_chunk_size() {
    let dir = tempdir("sizes");
    let file = dir.join("corpus.txt");
    let data = corpus(3 << 20, 11);
    std::fs::write(&file, &data).unwrap();
    let want = sequential(&[&data]);
    for threads in [1, 2, 7] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let mapped = Input::open([&file], Ingest::Mmap).unwrap();
        assert!(mapped.is_mapped());
        assert_eq!(counts(&rt, &mapped, 1, 1).0, want);
        for (chunk, buffers) in [(4 << 10, 2), (100_003, 3), (1 << 20, 2), (64 << 20, 2)] {
            let streamed = Input::open([&file], Ingest::Chunked).unwrap();
            let (got, stats) = counts(&rt, &streamed, chunk, buffers);
            assert_eq!(got, want, "threads {threads} chunk {chunk}");
            assert_eq!(stats.ingest, "chunked");
            assert_eq!(stats.input_bytes, data.len() as u64);
            assert_eq!(
                stats.chunks.iter().map(|c| c.bytes).sum::<u64>(),
                data.len() as u64
            );
        }
    }
}

#[test]
fn many_small_files_are_batched_and_counted_once() {
    let dir = tempdir("small");
    let mut paths = Vec::new();
    let mut all = Vec::new();
    for i in 0..1000 {
        let data = corpus(3000 + i * 7, i);
        let p = dir.join(format!("f{i:04}.txt"));
        std::fs::write(&p, &data).unwrap();
        paths.push(p);
        all.push(data);
    }
    let refs: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
    let want = sequential(&refs);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let (got, _) = counts(&rt, &Input::open(&paths, Ingest::Mmap).unwrap(), 1, 1);
    assert_eq!(got, want);
    let (got, stats) = counts(
        &rt,
        &Input::open(&paths, Ingest::Chunked).unwrap(),
        256 << 10,
        2,
    );
    assert_eq!(got, want);
    // ~3.5 MB in 256 KiB chunks: files were batched, not one chunk each.
    assert!(stats.chunks.len() < 30, "{} chunks", stats.chunks.len());
}

#[test]
fn standard_input_equals_the_file() {
    let data = corpus(1 << 20, 5);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let want = counts(&rt, &Input::bytes(&data), 1, 1).0;
    let piped = Input::reader("<stdin>", std::io::Cursor::new(data.clone()));
    assert_eq!(counts(&rt, &piped, 64 << 10, 2).0, want);
    // A stream is read once.
    let opts = RunOptions::default();
    let e = rt.run_with(&WordCount::new(), &piped, &opts).err().unwrap();
    assert!(e.to_string().contains("already read"), "{e}");
}

/// Reads its bytes, then fails, as a disk or a truncated network file would.
struct FailsAfter {
    data: std::io::Cursor<Vec<u8>>,
}

impl Read for FailsAfter {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.data.read(buf)? {
            0 => Err(std::io::Error::other("device went away")),
            n => Ok(n),
        }
    }
}

#[test]
fn a_read_error_midway_is_an_error_not_a_short_result() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let input = Input::reader(
        "/data/big.txt",
        FailsAfter {
            data: std::io::Cursor::new(corpus(1 << 20, 6)),
        },
    );
    let opts = RunOptions {
        chunk_size: Some(64 << 10),
        ..Default::default()
    };
    let e = rt.run_with(&WordCount::new(), &input, &opts).err().unwrap();
    assert_eq!(
        e.to_string(),
        "cannot read '/data/big.txt': device went away"
    );
    // The runtime (and its ingest thread) still work.
    let data = corpus(100_000, 7);
    let again = Input::reader("again", std::io::Cursor::new(data.clone()));
    assert_eq!(counts(&rt, &again, 4096, 2).0, sequential(&[&data]));
}

#[test]
fn input_memory_stays_bounded_by_the_buffers() {
    let dir = tempdir("bounded");
    let file = dir.join("big.txt");
    let data = corpus(24 << 20, 8);
    std::fs::write(&file, &data).unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let (chunk, buffers) = (256 << 10, 2);
    let (got, stats) = counts(
        &rt,
        &Input::open([&file], Ingest::Chunked).unwrap(),
        chunk,
        buffers,
    );
    assert_eq!(got, sequential(&[&data]));
    assert!(stats.chunks.len() > 50);
    // Never more than the buffers (each at most a chunk plus a carried
    // record), on an input ~50x their size.
    assert!(
        stats.peak_chunk_bytes <= (buffers * (chunk + 64)) as u64,
        "peak {} bytes",
        stats.peak_chunk_bytes
    );
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Words straddling chunk boundaries are never split or lost.
    #[test]
    fn random_chunk_sizes_never_split_a_word(
        parts in proptest::collection::vec("[a-c ]{0,300}", 1..4),
        chunk in 1usize..200,
        buffers in 1usize..4,
    ) {
        let dir = tempdir("prop");
        let paths: Vec<PathBuf> = parts.iter().enumerate().map(|(i, p)| write(&dir, &format!("p{i}"), p.as_bytes())).collect();
        let refs: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
        let rt = Runtime::builder().threads(2).build().unwrap();
        let (got, _) = counts(&rt, &Input::open(&paths, Ingest::Chunked).unwrap(), chunk, buffers);
        prop_assert_eq!(got, sequential(&refs));
    }
}
