//! mpi4py built for the standard ABI with our `mpicc` runs on weft
//! (`itest/python/mpi4py_smoke.py` at 2 and 3 ranks; each rank checks that the
//! libmpi_abi.so.1 it loaded is the one in this test's prefix). Building mpi4py takes
//! minutes, so this is ignored by default; CI runs it (`scripts/ci-mpi-extras.sh` builds
//! mpi4py and sets MPI4PY_PATH and MPI4PY_PYTHON). By hand:
//!
//!     MPI4PY_BUILD_MPIABI=1 MPICC=<prefix>/bin/mpicc pip install --no-binary mpi4py \
//!         --target /tmp/m4p mpi4py
//!     MPI4PY_PATH=/tmp/m4p cargo test -p weft-mpi --test mpi4py -- --include-ignored
//!
//! MPI4PY_PYTHON names the interpreter mpi4py was built for (default `python3`). Without
//! MPI4PY_PATH, or with one that holds no built mpi4py, the test fails; it never skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
#[ignore = "needs mpi4py built with our mpicc (MPI4PY_PATH)"]
fn mpi4py_runs_on_weft() {
    let m4p = PathBuf::from(std::env::var_os("MPI4PY_PATH").expect(
        "set MPI4PY_PATH to mpi4py built for the standard ABI with our mpicc \
         (scripts/ci-mpi-extras.sh builds it)",
    ));
    let built = std::fs::read_dir(m4p.join("mpi4py"))
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("MPI."))
        })
        .unwrap_or(false);
    assert!(
        built,
        "MPI4PY_PATH={}: no built mpi4py there (mpi4py/MPI.*.so)",
        m4p.display()
    );
    let python = std::env::var_os("MPI4PY_PYTHON").unwrap_or_else(|| "python3".into());
    let tmp = common::install("m4p-prefix");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../itest/python/mpi4py_smoke.py");
    for n in ["2", "3"] {
        let out = Command::new(tmp.join("bin/mpiexec"))
            .args(["-n", n])
            .arg(&python)
            .arg(&script)
            .env("PYTHONPATH", &m4p)
            // The loader must find weft's libmpi_abi.so.1 before any other; the script
            // checks that the library it loaded lives in this directory.
            .env("LD_LIBRARY_PATH", tmp.join("lib"))
            .env("MPI4PY_SMOKE_LIBDIR", tmp.join("lib"))
            .env("WEFT_BIN", tmp.join("bin/weft"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("mpi4py on weft: weft"),
            "{n} ranks:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
