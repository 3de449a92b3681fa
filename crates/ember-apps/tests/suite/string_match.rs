//! String match on ember equals the sequential match; bad target words give
//! clear errors.

use crate::grid;

use ember::{Error, Runtime};
use ember_apps::string_match::{self, KeysSpec, Targets, PLANTS_PER_WORD};

#[test]
fn ember_equals_sequential() {
    for (size, seed) in [(5_000, 1), (60_000, 2), (250_000, 3)] {
        let spec = KeysSpec {
            size,
            seed,
            plant: vec!["ferrari".into(), "whotheman".into()],
        };
        let data = string_match::keys(&spec).unwrap();
        // A planted word, a word of the file (matches by chance), a prefix
        // of a planted word, a word never there, and a repeated target.
        let first_line = data.split(|&b| b == b'\n').next().unwrap().to_vec();
        let words: Vec<Vec<u8>> = vec![
            b"ferrari".to_vec(),
            first_line,
            b"whothe".to_vec(),
            b"notthereatall".to_vec(),
            b"whotheman".to_vec(),
            b"ferrari".to_vec(),
        ];
        let targets = Targets::new(&words).unwrap();
        let want = string_match::sequential(&data, &targets);
        assert_eq!(want[0].len(), PLANTS_PER_WORD, "{size}");
        assert_eq!(want[4].len(), PLANTS_PER_WORD, "{size}");
        assert!(want[1].contains(&0));
        assert!(want[3].is_empty());
        assert_eq!(want[0], want[5]);
        for (t, offs) in want.iter().enumerate() {
            for &o in offs {
                let line = &data[o as usize..][..words[t].len() + 1];
                assert_eq!(&line[..words[t].len()], &words[t][..]);
                assert_eq!(line[words[t].len()], b'\n');
            }
        }
        grid::for_each_setting(|rt, opts, label| {
            let (got, stats) = string_match::run(rt, &data, &targets, opts).unwrap();
            assert_eq!(got, want, "{size} bytes, {label}");
            assert!(stats.reduce_skipped());
        });
    }
}

#[test]
fn last_line_without_newline_and_crlf_lines_match() {
    let data = b"ab\r\ncd\nab";
    let targets = Targets::new(&["ab", "cd"]).unwrap();
    let want = vec![vec![0, 7], vec![4]];
    assert_eq!(string_match::sequential(data, &targets), want);
    grid::for_each_setting(|rt, opts, label| {
        assert_eq!(
            string_match::run(rt, data, &targets, opts).unwrap().0,
            want,
            "{label}"
        );
    });
}

#[test]
fn bad_targets_are_rejected_with_a_clear_message() {
    let msg = |r: ember::Result<Targets>| {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
        e.to_string()
    };
    let e = msg(Targets::new(&["ok", ""]));
    assert!(e.contains("target word 2 is empty"), "{e}");
    let e = msg(Targets::new(&["a\nb"]));
    assert!(
        e.contains("target word 1 (\"a\\nb\") has a line break at byte 1"),
        "{e}"
    );
    let e = msg(Targets::new::<&str>(&[]));
    assert!(e.contains("no target words given"), "{e}");
    let bad_plant = KeysSpec {
        size: 100,
        seed: 1,
        plant: vec!["x\ry".into()],
    };
    let e = string_match::keys(&bad_plant).unwrap_err().to_string();
    assert!(e.contains("has a line break at byte 1"), "{e}");
    // Sanity: the runtime itself is fine with the same inputs.
    let rt = Runtime::builder().threads(2).build().unwrap();
    let t = Targets::new(&["x"]).unwrap();
    assert_eq!(
        string_match::run(&rt, b"x\ny\n", &t, &Default::default())
            .unwrap()
            .0,
        vec![vec![0]]
    );
}
