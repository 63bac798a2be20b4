//! mpi4py built for the standard ABI with our `mpicc` runs on weft
//! (`itest/python/mpi4py_smoke.py` at 2 and 3 ranks). Building mpi4py takes minutes, so
//! this is ignored by default; build it once and point MPI4PY_PATH at it:
//!
//!     MPI4PY_BUILD_MPIABI=1 MPICC=<prefix>/bin/mpicc pip install --no-binary mpi4py \
//!         --target /tmp/m4p mpi4py
//!     MPI4PY_PATH=/tmp/m4p cargo test -p weft-mpi --test mpi4py -- --ignored

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
#[ignore = "needs mpi4py built with our mpicc (MPI4PY_PATH)"]
fn mpi4py_runs_on_weft() {
    let m4p = PathBuf::from(std::env::var_os("MPI4PY_PATH").expect("set MPI4PY_PATH"));
    let tmp = common::install("m4p-prefix");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../itest/python/mpi4py_smoke.py");
    for n in ["2", "3"] {
        let out = Command::new(tmp.join("bin/mpiexec"))
            .args(["-n", n, "python3"])
            .arg(&script)
            .env("PYTHONPATH", &m4p)
            // The loader must find weft's libmpi_abi.so.1 before any other.
            .env("LD_LIBRARY_PATH", tmp.join("lib"))
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
