//! A points file: the runtime's sums equal the sequential ones, or both
//! refuse the file with the same error.
#![no_main]

use ember_apps::linear_regression;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((rt, opts, file)) = ember_fuzz::setup(data) else {
        return;
    };
    let parallel = linear_regression::run(rt, file, &opts).map(|(sums, _)| sums);
    match (parallel, linear_regression::sequential(file)) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b);
            let _ = a.fit();
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("runtime {a:?} but sequential {b:?}"),
    }
});
