//! Build script of the weft command. Embeds the C headers of weft-mpi and weft-shmem (every
//! file under their `include/` directories), so `weft install` writes them from the binary
//! alone, without the source tree; and records what `weft --version` and `weft info` report
//! about the build: the commit (from git, "unknown" outside a git checkout), the compiler,
//! the profile, the target and the enabled features. Three facts from the environment cargo
//! gives build scripts and one git call do not need a crate.

#![allow(
    clippy::disallowed_methods,
    reason = "a build script's inputs are the variables cargo sets"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn headers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut table = String::from("/// (path under include/, bytes) of every installed header.\npub(crate) static HEADERS: &[(&str, &[u8])] = &[\n");
    for crate_dir in ["weft-mpi", "weft-shmem"] {
        let inc = root.join(crate_dir).join("include");
        let mut files = Vec::new();
        files_under(&inc, &mut files);
        for f in files {
            println!("cargo:rerun-if-changed={}", f.display());
            let rel = f
                .strip_prefix(&inc)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let abs = f.canonicalize().unwrap();
            writeln!(
                table,
                "    ({rel:?}, include_bytes!({:?})),",
                abs.display().to_string()
            )
            .unwrap();
        }
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("headers.rs");
    std::fs::write(out, table).unwrap();
}

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn main() {
    headers();
    let commit =
        output("git", &["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // Rebuild when HEAD moves: its file, and the branch file it points to.
    if let Some(dir) = output("git", &["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(branch) = output("git", &["symbolic-ref", "-q", "HEAD"]) {
            if let Some(common) = output("git", &["rev-parse", "--git-common-dir"]) {
                println!("cargo:rerun-if-changed={common}/{branch}");
                println!("cargo:rerun-if-changed={common}/packed-refs");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let compiler =
        output(&rustc, &["--version"]).unwrap_or_else(|| "rustc (version unknown)".into());
    let profile = std::env::var("PROFILE").unwrap_or_default();
    let opt = std::env::var("OPT_LEVEL").unwrap_or_default();
    let debug_assertions = std::env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_some();
    let target = std::env::var("TARGET").unwrap_or_default();
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_ascii_lowercase().replace('_', "-"))
        })
        .collect();
    features.sort();
    let features = if features.is_empty() {
        "none".to_owned()
    } else {
        features.join(",")
    };
    println!("cargo:rustc-env=BUILD_INFO_COMMIT={commit}");
    println!("cargo:rustc-env=BUILD_INFO_COMPILER={compiler}");
    println!(
        "cargo:rustc-env=BUILD_INFO_PROFILE={profile} (opt-level {opt}{})",
        if debug_assertions {
            ", debug assertions"
        } else {
            ""
        }
    );
    println!("cargo:rustc-env=BUILD_INFO_TARGET={target}");
    println!("cargo:rustc-env=BUILD_INFO_FEATURES={features}");
}
