//! A matrix file: PCA on the runtime equals the sequential PCA, or both
//! refuse the file; the header parser never over-allocates.
#![no_main]

use ember_apps::matrix::Matrix;
use ember_apps::pca;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((rt, opts, file)) = ember_fuzz::setup(data) else {
        return;
    };
    let Ok(m) = Matrix::parse(file, "fuzz") else {
        return;
    };
    match (pca::run(rt, &m, &opts), pca::sequential(&m)) {
        (Ok((a, _)), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("runtime {:?} but sequential {:?}", a.is_ok(), b.is_ok()),
    }
});
