//! Writing a generated input to a file, with a progress bar: for `ember
//! gen` (any path, `-` for standard output) and for the benchmarks' cached
//! inputs.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::common::{cache_dir, cached, write_output};
use crate::progress::bar as progress;

/// A generator: writes to the writer, reporting bytes written so far.
pub(crate) type Writer<'a> = &'a dyn Fn(&mut dyn Write, &mut dyn FnMut(u64)) -> io::Result<()>;

/// Runs `write` into `w` under a progress bar of `size` bytes.
fn with_progress(w: &mut dyn Write, size: u64, what: &str, write: Writer<'_>) -> Result<()> {
    let bar = progress(size, what);
    write(w, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    Ok(())
}

/// Writes a generated input to `out` (`-`: standard output).
pub(crate) fn write_file(out: &Path, size: u64, what: &str, write: Writer<'_>) -> Result<()> {
    write_output(Some(out), |w| with_progress(w, size, what, write))
}

/// Generates an input into the cache folder once, as `name`, and returns
/// its path.
pub(crate) fn cached_file(name: &str, size: u64, what: &str, write: Writer<'_>) -> Result<PathBuf> {
    let path = cache_dir()?.join(name);
    cached(&path, |w| {
        with_progress(w, size, &format!("{what} (cached for next time)"), write)
    })?;
    Ok(path)
}
