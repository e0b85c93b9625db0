//! Replays every kept fuzz input through its target: the seeds our encoders make, the corpus the fuzzer
//! grew (`fuzz/corpus/<target>/`) and every input that once crashed a target (`fuzz/regressions/<target>/`,
//! named after what it found). A target panics when the code under test breaks one of its rules.

use std::path::Path;

#[test]
fn every_seed_passes_its_target() {
    let seeds = rsm_fuzz::seeds::all();
    for (name, f) in rsm_fuzz::TARGETS {
        let mine: Vec<_> = seeds.iter().filter(|(t, _)| t == name).collect();
        assert!(!mine.is_empty(), "target {name} has no seed");
        for (_, bytes) in mine {
            f(bytes);
        }
    }
}

#[test]
fn every_kept_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut total = 0;
    for (name, f) in rsm_fuzz::TARGETS {
        let mut here = 0;
        for dir in ["corpus", "regressions"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir).join(name)) else { continue };
            for e in entries {
                let path = e.unwrap().path();
                let bytes = std::fs::read(&path).unwrap();
                let run = std::panic::catch_unwind(|| f(&bytes));
                assert!(run.is_ok(), "{} fails target {name} again", path.display());
                here += 1;
            }
        }
        assert!(here > 0, "target {name} has no kept input under fuzz/corpus/{name}");
        total += here;
    }
    println!("{total} kept inputs replayed");
}
