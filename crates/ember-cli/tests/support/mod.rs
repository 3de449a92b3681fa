//! What the CLI tests share: the binary under test, and a folder's names.

use std::path::Path;
use std::process::Command;

/// The `ember` binary built for these tests.
pub fn ember() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ember"))
}

/// The names in `dir`, sorted.
// Each test file compiles this module on its own; not all of them use it.
#[allow(dead_code)]
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
