//! Naming input files: the files that a list of paths, folders and glob
//! patterns stands for, in a stable order ([`expand_paths`]).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The input files that `args` name, each once, in a stable order: the
/// arguments in the order given, and each argument's files sorted by path
/// (component by component). A file named twice is kept where it first
/// comes.
///
/// Each argument is one of:
///
/// - a **file** (or anything else that is not a folder, such as `-` or a
///   path that does not exist): kept as given, so that opening it says
///   what is wrong with it;
/// - a **folder**: every file under it, recursively. Names that start
///   with `.` or `_` are left out, files and folders alike, as Hadoop's
///   and Spark's input formats leave out `.crc` files and `_SUCCESS`
///   markers; so are symbolic links to folders (no cycles) and what is
///   neither a file nor a link to one (sockets, pipes). A folder that
///   holds no file is an error;
/// - a **glob pattern**, when no file or folder has that name and it holds
///   `*`, `?` or `[`: the paths it matches, as the shell would match them
///   (`*` and `?` match neither `/` nor a leading `.`; `**` matches any
///   number of folders), a matched folder standing for its files. A
///   pattern that gives no file is an error;
/// - a **URL** (`hdfs://...`, any `scheme://`): kept as given, for a
///   reader that knows its scheme.
///
/// An argument that gives no file is an [`Error::Io`] of kind
/// [`NotFound`](io::ErrorKind::NotFound) naming it.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// for f in ["b.txt", "a.txt", "sub/c.txt", "_SUCCESS"] {
///     let path = dir.path().join(f);
///     std::fs::create_dir_all(path.parent().unwrap())?;
///     std::fs::write(path, "text\n")?;
/// }
/// let d = dir.path();
/// assert_eq!(
///     ember::expand_paths(&[d.to_path_buf()])?,
///     [d.join("a.txt"), d.join("b.txt"), d.join("sub/c.txt")]
/// );
/// assert_eq!(
///     ember::expand_paths(&[d.join("b.txt"), d.join("*.txt")])?,
///     [d.join("b.txt"), d.join("a.txt")]
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn expand_paths<P: AsRef<Path>>(args: &[P]) -> Result<Vec<PathBuf>> {
    let mut seen = HashSet::new();
    let mut files = Vec::new();
    for arg in args {
        for file in expand(arg.as_ref())? {
            if seen.insert(file.clone()) {
                files.push(file);
            }
        }
    }
    Ok(files)
}

/// The files one argument names, sorted.
fn expand(arg: &Path) -> Result<Vec<PathBuf>> {
    match std::fs::metadata(arg) {
        Ok(meta) if meta.is_dir() => {
            let files = sorted(|files| walk(arg, files))?;
            match files.is_empty() {
                true => Err(not_found(
                    arg,
                    "the folder holds no files (names starting with '.' or '_' are left out)",
                )),
                false => Ok(files),
            }
        }
        Err(_) if is_pattern(arg) && !is_url(arg) => pattern(arg),
        _ => Ok(vec![arg.to_path_buf()]),
    }
}

/// The files a glob pattern matches (a matched folder's files too).
fn pattern(arg: &Path) -> Result<Vec<PathBuf>> {
    let text = arg
        .to_str()
        .ok_or_else(|| Error::InvalidInput(format!("pattern '{}' is not UTF-8", arg.display())))?;
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: true,
    };
    let matches = glob::glob_with(text, options)
        .map_err(|e| Error::InvalidInput(format!("bad pattern '{text}': {e}")))?;
    let files = sorted(|files| {
        for m in matches {
            let path = m.map_err(|e| Error::io(e.path(), clone_io(e.error())))?;
            match path.is_dir() {
                true => walk(&path, files)?,
                false => files.push(path),
            }
        }
        Ok(())
    })?;
    match files.is_empty() {
        true => Err(not_found(arg, "no file matches this pattern")),
        false => Ok(files),
    }
}

/// The files `fill` collects, sorted by path.
fn sorted(fill: impl FnOnce(&mut Vec<PathBuf>) -> Result<()>) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    fill(&mut files)?;
    files.sort();
    Ok(files)
}

/// Adds the files under `dir`, recursively, leaving out hidden names and
/// symbolic links to folders (see [`expand_paths`]).
fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if is_hidden(&entry.file_name()) {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if kind.is_dir() {
            walk(&path, files)?;
        } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
            files.push(path);
        }
    }
    Ok(())
}

/// Names a folder's walk leaves out: `.crc`, `.git`, `_SUCCESS`,
/// `_temporary`.
fn is_hidden(name: &OsStr) -> bool {
    matches!(name.as_bytes().first(), Some(b'.' | b'_'))
}

/// True when `arg` holds a glob wildcard: `*`, `?` or `[`.
fn is_pattern(arg: &Path) -> bool {
    arg.as_os_str()
        .as_bytes()
        .iter()
        .any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// True when `arg` starts with a URL scheme and `://`.
fn is_url(arg: &Path) -> bool {
    let bytes = arg.as_os_str().as_bytes();
    let scheme = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        .count();
    scheme > 0 && bytes[scheme..].starts_with(b"://")
}

/// A copy of an I/O error that is only lent (its kind and message).
fn clone_io(e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), e.to_string())
}

/// The error of an argument that gives no file.
fn not_found(arg: &Path, why: &str) -> Error {
    Error::io(arg, io::Error::new(io::ErrorKind::NotFound, why))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary folder holding `files` (each `x\n`; folders made as
    /// needed).
    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x\n").unwrap();
        }
        dir
    }

    /// `expand_paths` of `args`, each relative to `dir`, as paths
    /// relative to `dir`.
    fn expanded(dir: &Path, args: &[&str]) -> Result<Vec<String>> {
        let args: Vec<PathBuf> = args.iter().map(|a| dir.join(a)).collect();
        let files = expand_paths(&args)?;
        let relative = |f: PathBuf| f.strip_prefix(dir).unwrap().display().to_string();
        Ok(files.into_iter().map(relative).collect())
    }

    #[test]
    fn a_folder_gives_its_files_recursively_sorted_without_hidden_ones() {
        let dir = tree(&[
            "logs/b.txt",
            "logs/a.txt",
            "logs/sub/z/c.txt",
            "logs/sub/a.txt",
            "logs/.hidden",
            "logs/_SUCCESS",
            "logs/.git/config",
            "logs/_temporary/part-0",
        ]);
        let got = expanded(dir.path(), &["logs"]).unwrap();
        let want = [
            "logs/a.txt",
            "logs/b.txt",
            "logs/sub/a.txt",
            "logs/sub/z/c.txt",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn arguments_keep_their_order_and_a_file_named_twice_comes_once() {
        let dir = tree(&["d/b.txt", "d/a.txt", "c.txt", ".dot"]);
        let got = expanded(dir.path(), &["c.txt", "d", "d/a.txt", "c.txt", ".dot"]).unwrap();
        assert_eq!(got, ["c.txt", "d/a.txt", "d/b.txt", ".dot"]);
    }

    #[test]
    fn a_pattern_gives_its_matches_sorted_and_walks_matched_folders() {
        let dir = tree(&[
            "logs/2.gz",
            "logs/10.gz",
            "logs/1.gz",
            "logs/1.txt",
            "logs/.3.gz",
            "logs/_4.gz",
            "logs/x.gz/inner",
            "logs/x.gz/_inner",
        ]);
        let got = expanded(dir.path(), &["logs/*.gz"]).unwrap();
        assert_eq!(
            got,
            [
                "logs/1.gz",
                "logs/10.gz",
                "logs/2.gz",
                "logs/_4.gz",
                "logs/x.gz/inner"
            ]
        );
        let got = expanded(dir.path(), &["logs/?.txt", "logs/[12].gz", "**/inner"]).unwrap();
        assert_eq!(
            got,
            ["logs/1.txt", "logs/1.gz", "logs/2.gz", "logs/x.gz/inner"]
        );
    }

    #[test]
    fn an_existing_path_is_taken_literally_even_with_wildcards() {
        let dir = tree(&["a[1].txt", "a1.txt"]);
        assert_eq!(expanded(dir.path(), &["a[1].txt"]).unwrap(), ["a[1].txt"]);
    }

    #[test]
    fn what_gives_no_file_is_a_not_found_error_naming_it() {
        let dir = tree(&["logs/a.txt", "empty/_SUCCESS"]);
        std::fs::create_dir_all(dir.path().join("empty/sub")).unwrap();
        let cases = [
            ("logs/*.gz", "no file matches this pattern"),
            ("empty", "the folder holds no files"),
        ];
        for (arg, why) in cases {
            let err = expand_paths(&[dir.path().join(arg)]).unwrap_err();
            let Error::Io { path, source } = &err else {
                panic!("{err}")
            };
            assert_eq!(path, &dir.path().join(arg));
            assert_eq!(source.kind(), io::ErrorKind::NotFound);
            assert!(err.to_string().contains(why), "{err}");
        }
        let bad = expand_paths(&[dir.path().join("logs/[a")]).unwrap_err();
        assert!(matches!(bad, Error::InvalidInput(_)), "{bad}");
    }

    #[test]
    fn missing_files_standard_input_and_urls_are_kept_as_given() {
        let args = [
            "no/such/file",
            "-",
            "hdfs://nn:9000/logs/*.gz",
            "s3://b/[k]",
        ];
        let got = expand_paths(&args).unwrap();
        assert_eq!(got, args.map(PathBuf::from));
    }

    #[test]
    fn links_to_files_are_read_and_links_to_folders_are_not_walked() {
        let dir = tree(&["d/a.txt", "target.txt"]);
        let d = dir.path();
        std::os::unix::fs::symlink(d.join("target.txt"), d.join("d/link.txt")).unwrap();
        std::os::unix::fs::symlink(d, d.join("d/loop")).unwrap();
        assert_eq!(expanded(d, &["d"]).unwrap(), ["d/a.txt", "d/link.txt"]);
    }
}
