//! Compressed input files (gzip, zstd, bzip2, xz), told by
//! their first bytes, give exactly what the plain files give: every
//! member or frame in turn, a word across two members one word, mixed
//! with plain files in order, on any thread count, split and chunk size.
//! A truncated or corrupt file fails the run naming the file and the
//! compressed byte reached, and the runtime runs its next job; a file that
//! changed fails it with `Error::InputChanged`; a small file that decodes
//! to far more than the memory limit streams within it. Large zstd and
//! bzip2 files, decoded in pieces, do the same.

use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};

use ember::{Bytes, Emit, Error, Input, Job, MapResult, Records, RunOptions, Runtime, Split, Sum};
use proptest::prelude::*;

use crate::placed::Placed;

/// The formats ember decodes, and plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Plain,
    Gzip,
    Zstd,
    Bzip2,
    Xz,
}

const FORMATS: [Format; 4] = [Format::Gzip, Format::Zstd, Format::Bzip2, Format::Xz];

impl Format {
    /// `text` encoded as one member, frame or stream (with a checksum of
    /// the content, so that every corruption is seen).
    fn member(self, text: &[u8]) -> Vec<u8> {
        match self {
            Format::Plain => text.to_vec(),
            Format::Gzip => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(text).unwrap();
                e.finish().unwrap()
            }
            Format::Zstd => {
                let mut e = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
                e.include_checksum(true).unwrap();
                e.write_all(text).unwrap();
                e.finish().unwrap()
            }
            Format::Bzip2 => {
                let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
                e.write_all(text).unwrap();
                e.finish().unwrap()
            }
            Format::Xz => {
                let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
                e.write_all(text).unwrap();
                e.finish().unwrap()
            }
        }
    }

    /// `text` cut at `cuts` (offsets, any order, clamped), each piece a
    /// member, frame or stream of its own, concatenated.
    fn members(self, text: &[u8], cuts: &[usize]) -> Vec<u8> {
        let mut at: Vec<usize> = cuts.iter().map(|&c| c.min(text.len())).collect();
        at.extend([0, text.len()]);
        at.sort_unstable();
        at.windows(2)
            .flat_map(|w| self.member(&text[w[0]..w[1]]))
            .collect()
    }
}

/// Counts each byte value: cheap per byte, for large inputs.
struct ByteCount;

impl Job for ByteCount {
    type Key = u8;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Fixed(1)
    }
    fn map<E: Emit<u8, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let mut counts = [0u64; 256];
        for &b in split.data {
            counts[b as usize] += 1;
        }
        for (b, &n) in counts.iter().enumerate().filter(|(_, &n)| n > 0) {
            emit.emit(b as u8, n);
        }
        Ok(())
    }
    fn reduce(&self, _key: &u8, n: u64) -> u64 {
        n
    }
}

/// Writes `files` into `dir` as `name{i}`; returns the paths, in order.
fn write(dir: &Path, name: &str, files: &[Vec<u8>]) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = (0..files.len())
        .map(|i| dir.join(format!("{name}{i}")))
        .collect();
    for (p, data) in paths.iter().zip(files) {
        std::fs::write(p, data).unwrap();
    }
    paths
}

/// The words of `text` with their parts and offsets, from the plain
/// files memory-mapped.
fn mapped(rt: &Runtime, dir: &Path, texts: &[Vec<u8>]) -> Vec<(Bytes, u64)> {
    let plain = write(dir, "plain", texts);
    let input = Input::files(&plain).unwrap();
    assert!(input.is_mapped());
    rt.run(&Placed, &input).unwrap().pairs
}

/// The keys of a [`Placed`] output, as text.
fn keys(pairs: &[(Bytes, u64)]) -> Vec<String> {
    pairs
        .iter()
        .map(|(k, _)| String::from_utf8_lossy(k.as_bytes()).into_owned())
        .collect()
}

fn format() -> impl Strategy<Value = Format> {
    prop_oneof![
        Just(Format::Plain),
        Just(Format::Gzip),
        Just(Format::Zstd),
        Just(Format::Bzip2),
        Just(Format::Xz),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// Files of any formats, each cut into members at random, give what
    /// the plain files give.
    #[test]
    fn compressed_files_give_what_the_plain_files_give(
        files in proptest::collection::vec(
            ("[ab \n]{0,400}", format(), proptest::collection::vec(0usize..400, 0..4)),
            1..5,
        ),
        threads in 1usize..4,
        split in 1usize..64,
        chunk in prop_oneof![Just(1usize), 2usize..100, Just(1 << 20)],
    ) {
        let texts: Vec<Vec<u8>> = files.iter().map(|(t, ..)| t.clone().into_bytes()).collect();
        let encoded: Vec<Vec<u8>> = files
            .iter()
            .map(|(t, f, cuts)| f.members(t.as_bytes(), cuts))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let want = mapped(&rt, dir.path(), &texts);
        let paths = write(dir.path(), "enc", &encoded);
        let input = Input::files(&paths).unwrap();
        let compressed = files.iter().any(|(_, f, _)| *f != Format::Plain);
        prop_assert_eq!(input.is_streamed(), compressed);
        let opts = RunOptions::default().split_size(split).chunk_size(chunk);
        let got = rt.run_with(&Placed, &input, &opts).unwrap();
        prop_assert_eq!(&got.pairs, &want);
        let total: usize = texts.iter().map(Vec::len).sum();
        prop_assert_eq!(got.stats.input_bytes, total as u64);
    }
}

/// A word cut between two members (or frames, or streams), with empty
/// members around, is one word: the decoded bytes are contiguous.
#[test]
fn a_word_across_members_is_one_word() {
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    for f in FORMATS {
        let parts: [&[u8]; 5] = [b"", b"one tw", b"", b"o three\n", b""];
        let file: Vec<u8> = parts.iter().flat_map(|p| f.member(p)).collect();
        let path = dir.path().join(format!("{f:?}"));
        std::fs::write(&path, file).unwrap();
        let out = rt.run(&Placed, &Input::file(&path).unwrap()).unwrap();
        assert_eq!(
            keys(&out.pairs),
            ["0:0:one", "0:4:two", "0:8:three"],
            "{f:?}"
        );
    }
}

/// Every format, compressed and plain files mixed, in one input: in
/// order, as the plain files mapped, streamed with plain reads too.
#[test]
fn mixed_files_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let texts: Vec<Vec<u8>> = (0..12)
        .map(|i| format!("file{i} a b\nc{i}\n").repeat(i * 50).into_bytes())
        .collect();
    let order = [Format::Plain, Format::Gzip, Format::Zstd];
    let formats = order.iter().chain(&FORMATS).chain(&[Format::Plain; 5]);
    let encoded: Vec<Vec<u8>> = texts
        .iter()
        .zip(formats)
        .map(|(t, f)| f.members(t, &[t.len() / 3]))
        .collect();
    let paths = write(dir.path(), "enc", &encoded);
    for threads in [1, 2, 4] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let want = mapped(&rt, dir.path(), &texts);
        for how in [ember::tune::Ingest::Mmap, ember::tune::Ingest::Chunked] {
            let input = Input::open(&paths, how).unwrap();
            let opts = RunOptions::default().chunk_size(4096).split_size(500);
            let got = rt.run_with(&Placed, &input, &opts).unwrap();
            assert!(got.pairs == want, "{threads} threads, {how:?}");
        }
    }
}

/// A truncated or corrupt file of every format fails the run with an
/// error naming it and the compressed byte reached; the runtime's next
/// run works.
#[test]
fn truncated_and_corrupt_files_name_the_file_and_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let text: Vec<u8> = (0..4000)
        .flat_map(|i| format!("w{} ", i * 7919 % 1000).into_bytes())
        .collect();
    let rt = Runtime::builder().threads(2).build().unwrap();
    for f in FORMATS {
        let good = f.members(&text, &[text.len() / 2]);
        let truncated = good[..good.len() * 2 / 3].to_vec();
        let mut corrupt = good.clone();
        for b in &mut corrupt[good.len() / 4..good.len() / 4 + 8] {
            *b ^= 0x55;
        }
        for (how, bytes) in [("truncated", truncated), ("corrupt", corrupt)] {
            let path = dir.path().join(format!("{how}.{f:?}"));
            std::fs::write(&path, &bytes).unwrap();
            let err = rt.run(&Placed, &Input::file(&path).unwrap()).unwrap_err();
            let Error::Io { path: named, .. } = &err else {
                panic!("{how} {f:?}: {err}");
            };
            assert_eq!(named, &path, "{how} {f:?}");
            let msg = err.to_string();
            let at = msg
                .split("near compressed byte ")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or_else(|| panic!("{how} {f:?}: no offset in {msg}"));
            assert!(at <= bytes.len(), "{how} {f:?}: {msg}");
            assert!(msg.contains("corrupt or truncated"), "{how} {f:?}: {msg}");
            // The runtime is fine after.
            let out = rt.run(&Placed, &Input::bytes(b"x y")).unwrap();
            assert_eq!(out.pairs.len(), 2);
        }
    }
}

/// About 6 MiB of words that compress about threefold: large enough
/// that its zstd frames and its bzip2 blocks are cut into pieces, which
/// decode on several threads at once.
fn large_text() -> Vec<u8> {
    (0..800_000u64)
        .flat_map(|i| format!("w{}\n", i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 46).into_bytes())
        .collect()
}

/// A zstd file of many frames and a bzip2 file of many blocks, decoded
/// in pieces, give what the plain file gives on any thread count; cut
/// short or corrupt in the middle they fail naming the file, and a file
/// cut after it was opened is `Error::InputChanged`.
#[test]
fn large_files_decode_in_pieces() {
    let dir = tempfile::tempdir().unwrap();
    let text = large_text();
    let frames: Vec<usize> = (1..20).map(|i| i * text.len() / 20).collect();
    let files = [
        ("zst", Format::Zstd.members(&text, &frames)),
        ("bz2", Format::Bzip2.member(&text)),
    ];
    for (name, good) in &files {
        let path = dir.path().join(format!("large.{name}"));
        std::fs::write(&path, good).unwrap();
        for threads in [1, 2, 3] {
            let rt = Runtime::builder().threads(threads).build().unwrap();
            let want = mapped(&rt, dir.path(), std::slice::from_ref(&text));
            let got = rt.run(&Placed, &Input::file(&path).unwrap()).unwrap();
            assert!(got.pairs == want, "{name}, {threads} threads");
        }
        let rt = Runtime::builder().threads(2).build().unwrap();
        let mut corrupt = good.clone();
        corrupt[good.len() / 2] ^= 0x10;
        let truncated = good[..good.len() / 2].to_vec();
        for (how, bytes) in [("corrupt", corrupt), ("truncated", truncated)] {
            std::fs::write(&path, &bytes).unwrap();
            let err = rt.run(&Placed, &Input::file(&path).unwrap()).unwrap_err();
            let msg = err.to_string();
            assert!(
                matches!(&err, Error::Io { path: p, .. } if *p == path),
                "{name} {how}: {msg}"
            );
            assert!(msg.contains("near compressed byte"), "{name} {how}: {msg}");
        }
        std::fs::write(&path, good).unwrap();
        let input = Input::file(&path).unwrap();
        let now = Change::Cut.apply(&path, good.len() as u64);
        match rt.run(&Placed, &input).unwrap_err() {
            Error::InputChanged { was, now: n, .. } => {
                assert_eq!((was, n), (good.len() as u64, now))
            }
            other => panic!("{name}: {other}"),
        }
    }
}

/// How a test changes a file after it was opened.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// Cut to half its length.
    Cut,
    /// Three bytes appended.
    Grow,
    /// Rewritten in place: the same length, a later modification time.
    Touch,
}

impl Change {
    /// Changes the file at `path`, of `len` bytes; returns its new length.
    fn apply(self, path: &Path, len: u64) -> u64 {
        let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        match self {
            Change::Cut => file.set_len(len / 2).unwrap(),
            Change::Grow => file.write_all(b"abc").unwrap(),
            Change::Touch => {
                let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
                file.set_modified(later).unwrap();
            }
        }
        file.metadata().unwrap().len()
    }
}

/// A compressed file cut, grown or rewritten after it was opened fails
/// the run with `Error::InputChanged`, as a plain one does.
#[test]
fn a_compressed_file_that_changed_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let text = b"alpha beta gamma\n".repeat(2000);
    let rt = Runtime::builder().threads(2).build().unwrap();
    for f in FORMATS {
        let good = f.members(&text, &[]);
        let path = dir.path().join(format!("changed.{f:?}"));
        let len = good.len() as u64;
        for change in [Change::Cut, Change::Grow, Change::Touch] {
            std::fs::write(&path, &good).unwrap();
            let input = Input::file(&path).unwrap();
            let now_len = change.apply(&path, len);
            match rt.run(&Placed, &input).unwrap_err() {
                Error::InputChanged { path: p, was, now } => {
                    assert_eq!(
                        (p, was, now),
                        (path.clone(), len, now_len),
                        "{change:?} {f:?}"
                    )
                }
                other => panic!("{change:?} {f:?}: {other}"),
            }
        }
    }
}

/// A reader that gives at most `step` bytes per read, as a pipe may.
struct Trickle<R> {
    inner: R,
    step: usize,
}

impl<R: Read> Read for Trickle<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step);
        self.inner.read(&mut buf[..n])
    }
}

/// A reader of compressed bytes (standard input, say) is decoded, even
/// if its first bytes come one at a time; plain bytes, short ones too,
/// pass as they are; `Input::reader` never decodes.
#[test]
fn a_reader_is_decoded_if_compressed() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let text = b"one two\nthree two\n".repeat(100);
    let words = |input: &Input<'_>| keys(&rt.run(&Placed, input).unwrap().pairs);
    let want = words(&Input::bytes(&text));
    for f in FORMATS.iter().chain(&[Format::Plain]) {
        let inner = Cursor::new(f.members(&text, &[7, 500]));
        let input = Input::reader_decompressed("<stdin>", Trickle { inner, step: 1 }).unwrap();
        assert_eq!(words(&input), want, "{f:?}");
    }
    let short = Input::reader_decompressed("<stdin>", Cursor::new(b"ab".to_vec())).unwrap();
    assert_eq!(words(&short), ["0:0:ab"]);
    let gz = Format::Gzip.member(b"raw");
    let raw = Input::reader("<stdin>", Cursor::new(gz.clone()));
    let out = rt.run(&ByteCount, &raw).unwrap();
    assert_eq!(out.pairs.iter().map(|p| p.1).sum::<u64>(), gz.len() as u64);
}

/// Several readers, each decoded if compressed (the files of a remote
/// file system): every format and plain, in order, as the plain bytes.
#[test]
fn readers_are_decoded_each_by_its_own_bytes() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let texts: Vec<Vec<u8>> = (0..5)
        .map(|i| format!("r{i} one\ntwo{i}\n").repeat(50).into_bytes())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let want = mapped(&rt, dir.path(), &texts);
    let formats = FORMATS.iter().chain(&[Format::Plain]);
    let readers = texts.iter().zip(formats).enumerate().map(|(i, (t, f))| {
        let bytes = f.members(t, &[t.len() / 2]);
        let len = bytes.len() as u64;
        (format!("part{i}"), Cursor::new(bytes), Some(len))
    });
    let input = Input::readers_decompressed(readers).unwrap();
    assert_eq!(rt.run(&Placed, &input).unwrap().pairs, want);
}

/// 200 MiB of zeros gzipped to a couple of hundred KiB decode within a
/// 64 MiB memory limit: the decoder reads only a few blocks ahead, and
/// the chunks stay within their quarter of the limit.
#[test]
fn a_bomb_streams_within_the_memory_limit() {
    const MIB: usize = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.gz");
    let file = std::fs::File::create(&path).unwrap();
    let mut e = flate2::write::GzEncoder::new(file, flate2::Compression::best());
    let zeros = vec![0u8; MIB];
    for _ in 0..200 {
        e.write_all(&zeros).unwrap();
    }
    e.finish().unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < (MIB as u64) / 2, "{size} bytes");
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default().memory_limit(64 << 20);
    let out = rt
        .run_with(&ByteCount, &Input::file(&path).unwrap(), &opts)
        .unwrap();
    assert_eq!(out.pairs, [(0, 200 * MIB as u64)]);
    assert!(
        out.stats.chunks.len() >= 20,
        "{} chunks",
        out.stats.chunks.len()
    );
    assert!(
        out.stats.peak_chunk_bytes <= (16 * MIB) as u64,
        "{} bytes in chunks at the peak",
        out.stats.peak_chunk_bytes
    );
}
