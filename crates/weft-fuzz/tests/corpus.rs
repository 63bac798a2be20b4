//! Replays every file of every fuzz corpus (`fuzz/corpus/<target>/`) through its target's
//! body in a plain `cargo test` (no nightly toolchain needed), and checks that the seed
//! inputs made by the encoders are checked in. `WEFT_FUZZ_WRITE_SEEDS=1` writes missing or
//! changed seeds instead (then commit them).

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

use std::path::PathBuf;
use weft_fuzz::{seeds, TARGETS};

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

#[test]
fn seeds_are_checked_in() {
    let write = std::env::var_os("WEFT_FUZZ_WRITE_SEEDS").is_some();
    let mut missing = Vec::new();
    for (target, name, bytes) in seeds() {
        assert!(
            TARGETS.iter().any(|t| t.name == target),
            "seed for unknown target {target}"
        );
        let path = corpus_dir(target).join(&name);
        if std::fs::read(&path).ok().as_deref() == Some(&bytes[..]) {
            continue;
        }
        if write {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        } else {
            missing.push(path.display().to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "seeds missing or stale (run with WEFT_FUZZ_WRITE_SEEDS=1 and commit): {missing:#?}"
    );
}

#[test]
fn every_corpus_file_replays_through_its_decoder() {
    let mut total = 0;
    for t in TARGETS {
        let dir = corpus_dir(t.name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus of {} at {}: {e}", t.name, dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "the corpus of {} is empty", t.name);
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            let outcome = std::panic::catch_unwind(|| (t.run)(&bytes));
            assert!(
                outcome.is_ok(),
                "{}: {} broke the decoder",
                t.name,
                f.display()
            );
            total += 1;
        }
    }
    println!(
        "replayed {total} corpus files through {} targets",
        TARGETS.len()
    );
}
