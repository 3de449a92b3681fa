//! A records file: the runtime's sorted output equals the sequential sort,
//! or both refuse the file with the same error.
#![no_main]

use ember_apps::sort;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((rt, opts, file)) = ember_fuzz::setup(data) else {
        return;
    };
    let parallel = sort::sort_order(rt, file, &opts).and_then(|order| {
        let mut out = Vec::new();
        order
            .write(rt, file, &mut out)
            .map_err(|e| ember::Error::io("fuzz", e))?;
        Ok(out)
    });
    match (parallel, sort::sequential(file)) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("runtime {:?} but sequential {:?}", a.is_ok(), b.is_ok()),
    }
});
