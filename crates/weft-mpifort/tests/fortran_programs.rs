//! Fortran programs (`itest/fortran/`) built with the `mpifort` of a `weft install` prefix and
//! run by `weft run` at 1, 2, 3, 4 and 7 ranks; each checks its results and exits non-zero
//! (through MPI_Abort) on the first wrong one:
//! - `p2p_mpi.f90` (`use mpi`): blocking, nonblocking, persistent, probe, the wait/test
//!   families (1-based indices), sendrecv, status fields, MPI_ANY_SOURCE, zero-length and
//!   odd sizes, truncation reported through MPI_ERRORS_RETURN, strings out of MPI, info
//!   keys and values (blanks, a missing key, MPI_INFO_GET_STRING's lengths), MPI_SIZEOF, an
//!   f90 type as a constructor's old type, a generalized request with Fortran procedures;
//! - `coll_mpi.f90` (`use mpi`): blocking and nonblocking collectives with v-forms,
//!   MPI_IN_PLACE, predefined and user operations (non-commutative, and the datatype the
//!   operation sees), communicators and groups, attribute keyvals with Fortran copy and
//!   delete procedures (and MPI_COMM_NULL_COPY_FN), a Fortran error handler;
//! - `types_rma_io.f90` (`include 'mpif.h'`) with `c_side.c` (weft's mpicc): vector and
//!   struct types (MPI_BOTTOM with absolute addresses), window fence put/get, lock and
//!   accumulate, win_allocate, file write_at_all / read_at_all and a view, and the C side's
//!   c2f/f2c handle and status conversions, MPI_F_STATUS_IGNORE, and attributes set in one
//!   language and read in the other;
//! - `f08.f90` (`use mpi_f08`): handle types, TYPE(MPI_Status), optional ierror, p2p,
//!   collectives with a user operation, a derived type, Status_f2f08/f082f;
//! - `ring.f` (fixed-form FORTRAN 77 with mpif.h, compiled by `mpif77`).
//!
//! gfortran is required: without it the tests fail (CI installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `<target>/<profile>` of this test binary.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Builds weft (with the Fortran bindings embedded), libmpi_abi and libshmem into this test's
/// target directory, and installs them under a prefix of this process.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let gf = Command::new("gfortran").arg("--version").output();
        assert!(
            gf.is_ok_and(|o| o.status.success()),
            "gfortran is not installed: the Fortran bindings cannot be built or tested (apt-get install gfortran)"
        );
        let profile = profile_dir();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "-p", "weft-cli", "-p", "weft-mpi", "-p", "weft-shmem"]);
        if profile.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let st = cmd
            .env("CARGO_TARGET_DIR", profile.parent().unwrap())
            .current_dir(repo_root())
            .status()
            .unwrap();
        assert!(st.success(), "cargo build failed");
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let p = tmp.join(format!("fortran-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        let out = Command::new(profile.join("weft"))
            .arg("install")
            .arg("--prefix")
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "weft install failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for f in [
            "bin/mpifort",
            "bin/mpif90",
            "bin/mpif77",
            "include/mpif.h",
            "include/mpi.mod",
            "include/mpi_f08.mod",
            "lib/libmpifort_abi.so",
            "lib/libmpifort_abi.a",
        ] {
            assert!(p.join(f).exists(), "{f} missing from the prefix");
        }
        p
    })
}

/// Compiles `sources` (under itest/fortran; `.c` ones with mpicc) into a program of its own.
fn build(name: &str, compiler: &str, sources: &[&str], flags: &[&str]) -> PathBuf {
    let p = prefix();
    let dir = p.join(format!("build-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut objs = Vec::new();
    for s in sources.iter().filter(|s| s.ends_with(".c")) {
        let o = dir.join(s.replace(".c", ".o"));
        let out = Command::new(p.join("bin/mpicc"))
            .args(["-Wall", "-Werror", "-c"])
            .arg(repo_root().join("itest/fortran").join(s))
            .arg("-o")
            .arg(&o)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mpicc {s}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        objs.push(o);
    }
    let exe = dir.join(name);
    // Modules the program defines are written to its build directory (-J).
    let out = Command::new(p.join("bin").join(compiler))
        .args(["-O1", "-fcheck=bounds"])
        .args(flags)
        .arg("-J")
        .arg(&dir)
        .args(
            sources
                .iter()
                .filter(|s| !s.ends_with(".c"))
                .map(|s| repo_root().join("itest/fortran").join(s)),
        )
        .args(&objs)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{compiler} {sources:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `program` with `weft run` at 1, 2, 3, 4 and 7 ranks (600 s each at most) in a
/// directory of its own; every job must exit 0 and rank 0 report `<name>: ok at N ranks`.
fn run_all(name: &str, program: &Path) {
    let wd = program.parent().unwrap().join("run");
    std::fs::create_dir_all(&wd).unwrap();
    for n in [1, 2, 3, 4, 7] {
        let out = Command::new(prefix().join("bin/weft"))
            // A hang catcher: lock-step ranks take minutes on a busy 2-core machine.
            .args(["run", "--timeout", "600", "-n", &n.to_string()])
            .arg(program)
            .current_dir(&wd)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("{name}: ok at {n} ranks")),
            "{name} at {n} ranks: {}\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let left: Vec<_> = std::fs::read_dir(&wd).unwrap().flatten().collect();
    assert!(left.is_empty(), "{name} left files behind: {left:?}");
}

#[test]
fn point_to_point_with_use_mpi() {
    let p = build(
        "p2p_mpi",
        "mpifort",
        &["p2p_mpi.f90"],
        &["-Wall", "-Werror"],
    );
    run_all("p2p_mpi", &p);
}

#[test]
fn collectives_and_user_ops_with_use_mpi() {
    let p = build(
        "coll_mpi",
        "mpif90",
        &["coll_mpi.f90"],
        &["-Wall", "-Werror"],
    );
    run_all("coll_mpi", &p);
}

#[test]
fn types_rma_io_and_c_conversions_with_mpif_h() {
    let p = build(
        "types_rma_io",
        "mpifort",
        &["types_rma_io.f90", "c_side.c"],
        &[],
    );
    run_all("types_rma_io", &p);
}

#[test]
fn mpi_f08() {
    let p = build("f08", "mpifort", &["f08.f90"], &["-Wall", "-Werror"]);
    run_all("f08", &p);
}

#[test]
fn fixed_form_fortran_77() {
    let p = build("ring", "mpif77", &["ring.f"], &[]);
    run_all("ring", &p);
}

#[test]
fn static_link() {
    let p = build("ring-static", "mpif77", &["ring.f"], &["-static"]);
    run_all("ring", &p);
}

/// `mpifort -show` names the compiler, the include directory (mpif.h, the modules) and both
/// libraries, in link order; `-c` leaves the libraries out.
#[test]
fn show_tells_what_it_links() {
    let p = prefix();
    let show = |args: &[&str]| {
        let out = Command::new(p.join("bin/mpifort"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let s = show(&["-show", "x.f90", "-o", "x"]);
    let inc = format!("-I{}", p.join("include").display());
    assert!(s.starts_with("gfortran ") && s.contains(&inc), "{s}");
    let (f, m) = (
        s.find("-lmpifort_abi").unwrap(),
        s.find("-lmpi_abi").unwrap(),
    );
    assert!(f < m, "libmpifort_abi must come before libmpi_abi: {s}");
    let c = show(&["-show", "-c", "x.f90"]);
    assert!(!c.contains("-lmpi"), "{c}");
    assert!(show(&["-showme:link"]).contains("-lmpifort_abi"));
}
