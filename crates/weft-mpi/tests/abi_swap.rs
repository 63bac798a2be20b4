//! Checks against another implementation of the MPI 5.0 standard ABI (PyPI's `mpich`,
//! `pip install mpich`, which ships `mpicc_abi`, `mpi_abi.h` and `libmpi_abi.so.1`):
//! every constant of our `mpi.h` has the value MPICH's ABI header gives it, and programs
//! compiled with MPICH's `mpicc_abi` run on weft when the loader finds our library first.
//! They need that package, so they are ignored by default (CI runs them:
//! `scripts/ci-mpi-extras.sh` installs it into a venv and sets MPICH_ABI_PREFIX):
//! `cargo test -p weft-mpi --test abi_swap -- --include-ignored` (MPICH_ABI_PREFIX says
//! where it is; by default the directory above the `mpicc_abi` on PATH). Without it they
//! fail, saying so; they never skip.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use weft_launch::{run_job, JobSpec, OutputMode};

/// PyPI mpich's install prefix, checked to hold `bin/mpicc_abi` and `include/mpi_abi.h`.
fn mpich_prefix() -> PathBuf {
    let p = find_mpich_prefix();
    for f in ["bin/mpicc_abi", "include/mpi_abi.h"] {
        assert!(
            p.join(f).is_file(),
            "no {} (MPICH_ABI_PREFIX or the mpicc_abi on PATH): pip install mpich",
            p.join(f).display()
        );
    }
    p
}

fn find_mpich_prefix() -> PathBuf {
    if let Some(p) = std::env::var_os("MPICH_ABI_PREFIX") {
        return PathBuf::from(p);
    }
    let out = Command::new("sh")
        .args(["-c", "command -v mpicc_abi"])
        .output()
        .unwrap();
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        !path.is_empty(),
        "mpicc_abi not on PATH and MPICH_ABI_PREFIX not set: pip install mpich"
    );
    // pyenv shims hide the real location: ask the wrapper itself.
    let show = Command::new(&path).arg("-show").output().unwrap();
    let line = String::from_utf8_lossy(&show.stdout).to_string();
    let inc = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("-I"))
        .expect("mpicc_abi -show names its include directory");
    Path::new(inc).parent().unwrap().to_path_buf()
}

fn install_prefix() -> PathBuf {
    common::install("abi-prefix")
}

/// Names our header defines as macros or enumerators.
fn our_constants() -> Vec<String> {
    let h = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/mpi.h"))
        .unwrap();
    let mut names = Vec::new();
    for raw in h.split(['\n', ',', '{']) {
        let t = raw.trim();
        let name = if let Some(rest) = t.strip_prefix("#define ") {
            rest.split_whitespace().next().unwrap_or("")
        } else if t.starts_with("MPI_") && t.contains('=') {
            t.split('=').next().unwrap().trim()
        } else {
            ""
        };
        if name.starts_with("MPI_") && !name.contains('(') && !name.ends_with("VERSION") {
            names.push(name.to_string());
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
#[ignore = "needs PyPI mpich (pip install mpich)"]
fn constants_match_mpich_abi_header() {
    let mpich = mpich_prefix();
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("abi-consts-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("mpich")).unwrap();
    std::fs::copy(mpich.join("include/mpi_abi.h"), dir.join("mpich/mpi.h")).unwrap();
    let names = our_constants();
    assert!(names.len() > 250, "{} constants", names.len());
    let mut c = String::from(
        "#include <mpi.h>\n#include <stdio.h>\n#include <stdint.h>\nint main(void) {\n",
    );
    for n in &names {
        c.push_str(&format!(
            "  printf(\"{n} %lld\\n\", (long long)(intptr_t)({n}));\n"
        ));
    }
    c.push_str("  printf(\"status %zu\\n\", sizeof(MPI_Status));\n  return 0;\n}\n");
    std::fs::write(dir.join("dump.c"), c).unwrap();
    let run = |inc: &Path, exe: &str| {
        let st = Command::new("cc")
            .arg(format!("-I{}", inc.display()))
            .arg(dir.join("dump.c"))
            .arg("-o")
            .arg(dir.join(exe))
            .status()
            .unwrap();
        assert!(st.success(), "compiling against {}", inc.display());
        Command::new(dir.join(exe)).output().unwrap().stdout
    };
    let ours = run(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("include"),
        "ours",
    );
    let theirs = run(&dir.join("mpich"), "theirs");
    let (a, b) = (
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs),
    );
    for (x, y) in a.lines().zip(b.lines()) {
        assert_eq!(x, y, "our value vs MPICH's ABI header");
    }
    assert_eq!(a.lines().count(), b.lines().count());
}

/// Programs compiled by MPICH's `mpicc_abi` (linked to MPICH's libmpi_abi.so.1, RUNPATH
/// to MPICH's lib) run on weft when LD_LIBRARY_PATH puts our lib first. `env` checks that
/// the library answering is weft's (`MPI_Get_library_version` starts with "weft"), so a
/// run that silently used MPICH's library (each rank a singleton) cannot pass.
#[test]
#[ignore = "needs PyPI mpich (pip install mpich)"]
fn mpich_abi_binaries_run_on_weft() {
    let mpich = mpich_prefix();
    let ours = install_prefix();
    for name in ["env", "p2p", "coll", "errors"] {
        let exe = ours.join(format!("mpich-abi-{name}"));
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../itest/c/{name}.c"));
        let st = Command::new(mpich.join("bin/mpicc_abi"))
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .status()
            .unwrap();
        assert!(st.success(), "mpicc_abi {name}.c");
        let mut spec = JobSpec::new(3, &exe);
        spec.output = OutputMode::Capture;
        spec.timeout = Some(common::JOB_TIMEOUT);
        spec.env = vec![(
            "LD_LIBRARY_PATH".into(),
            ours.join("lib").display().to_string(),
        )];
        let out = run_job(&spec).unwrap();
        assert_eq!(
            out.exit_code,
            0,
            "{name} built by MPICH, run on weft:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
