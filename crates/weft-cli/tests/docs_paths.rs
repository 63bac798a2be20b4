//! The READMEs and ARCHITECTURE.md work from a fresh clone: every repository path they name
//! (`crates/...`, `scripts/...`, `bench/...`, `itest/...`, `docs/...`, `tuning/...`) exists,
//! and none names a folder of a development machine (`/work/`, `/home/`, `../shared/`).
//! Their commands are run by scripts/newcomer.sh (the top-level README's blocks, read from
//! README.md) and .ci/run (the MPI test command). (docs/bench holds dated measurement records
//! and is not checked here.)

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The documents checked: README.md, ARCHITECTURE.md, every crate's README, docs/plan.
fn documents() -> Vec<PathBuf> {
    let r = root();
    let mut docs = vec![
        r.join("README.md"),
        r.join("ARCHITECTURE.md"),
        r.join("docs/plan/README.md"),
    ];
    for e in std::fs::read_dir(r.join("crates")).unwrap().flatten() {
        let readme = e.path().join("README.md");
        if readme.exists() {
            docs.push(readme);
        }
    }
    docs
}

/// Words of `text` that look like repository paths, trimmed of punctuation.
fn repo_paths(text: &str) -> Vec<String> {
    const TOPS: [&str; 6] = [
        "crates/", "scripts/", "bench/", "itest/", "docs/", "tuning/",
    ];
    text.split(|c: char| c.is_whitespace() || "`()[]<>,;\"'|".contains(c))
        .map(|w| w.trim_end_matches(['.', ':', '*']))
        .filter(|w| TOPS.iter().any(|t| w.starts_with(t)))
        // Placeholders and globs name no one file.
        .filter(|w| !w.contains(['{', '$', '*']) && !w.contains("NAME") && !w.contains("<"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_path_the_docs_name_is_in_the_repository() {
    let r = root();
    let mut missing = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap();
        for p in repo_paths(&text) {
            // Relative to the repository, or (in a crate's README) to the crate.
            if !r.join(&p).exists() && !dir.join(&p).exists() {
                missing.push(format!(
                    "{}: {p}",
                    doc.strip_prefix(&r).unwrap_or(&doc).display()
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths named but not in the repository:\n{}",
        missing.join("\n")
    );
}

#[test]
fn no_document_names_a_development_machine() {
    let r = root();
    let mut found = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (i, line) in text.lines().enumerate() {
            for bad in ["/work/", "/home/", "../shared/", "shared/design"] {
                if line.contains(bad) {
                    let shown = doc.strip_prefix(&r).unwrap_or(Path::new("?")).display();
                    found.push(format!("{shown}:{}: {line}", i + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "development-machine paths:\n{}",
        found.join("\n")
    );
}

#[test]
fn scripts_the_docs_run_read_nothing_outside_the_repository() {
    let r = root();
    let mut found = Vec::new();
    for dir in ["bench", "scripts"] {
        for e in std::fs::read_dir(r.join(dir)).unwrap().flatten() {
            let p = e.path();
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            for (i, line) in text.lines().enumerate() {
                if line.contains("/work/")
                    || line.contains("../shared")
                    || line.contains("shared/design")
                {
                    found.push(format!("{}:{}: {line}", p.display(), i + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
