//! A BMP file: the runtime's histogram equals the sequential one, or both
//! refuse the file with the same error.
#![no_main]

use ember_apps::histogram;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((rt, opts, file)) = ember_fuzz::setup(data) else {
        return;
    };
    let parallel = histogram::run(rt, file, &opts).map(|(counts, _)| counts);
    let plain = histogram::sequential(file);
    match (parallel, plain) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("runtime {:?} but sequential {:?}", a.is_ok(), b.is_ok()),
    }
});
