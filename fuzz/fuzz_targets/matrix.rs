//! A matrix file: a parsed matrix re-encodes to the same bytes, and a
//! refused one is refused with an error that names the file; PCA on the
//! runtime equals the sequential PCA, or both refuse the matrix. The header
//! parser never over-allocates.
#![no_main]

use ember_apps::matrix::{encode, Matrix};
use ember_apps::pca;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((rt, opts, file)) = ember_fuzz::setup(data) else {
        return;
    };
    let m = match Matrix::parse(file, "fuzz.mat") {
        Ok(m) => m,
        Err(e) => {
            let e = e.to_string();
            assert!(e.starts_with("invalid input: fuzz.mat: "), "{e}");
            return;
        }
    };
    assert_eq!(encode(m.rows, m.cols, &m.values()), file);
    match (pca::run(rt, &m, &opts), pca::sequential(&m)) {
        (Ok((a, _)), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("runtime {:?} but sequential {:?}", a.is_ok(), b.is_ok()),
    }
});
