//! `weft install --prefix P`: everything a user of an MPI or OpenSHMEM library expects, under
//! one prefix: `bin/` (weft, mpicc, mpicxx, mpifort, mpif90, mpif77, mpiexec, mpirun, oshcc,
//! oshrun), `lib/` (`libmpi_abi.so.1` with its `libmpi_abi.so` and `libmpi.so` links,
//! `libmpifort_abi.so`/`.a`, `libshmem.so`), `include/` (mpi.h, mpif.h, mpi.mod, mpi_f08.mod,
//! shmem.h, weft/sync.h and what they include), `lib/pkgconfig/` (mpi.pc, shmem.pc) and an
//! environment-modules file (`share/modulefiles/weft`). The Fortran files are those
//! weft-mpifort built into this binary (none when gfortran was missing at build time).
//!
//! The prefix is relocatable: the wrappers find it from their own path, the pkg-config files
//! from `${pcfiledir}`, the modulefile from its own location; nothing written holds the
//! prefix's path. The libraries come from the directory of this `weft` binary (a cargo
//! target directory, or an installed prefix's `bin/../lib`); headers and wrappers are built
//! into the binary.

use std::path::{Path, PathBuf};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/headers.rs"));
}

const MPICC: &str = include_str!("../../weft-mpi/bin/mpicc");
const MPIEXEC: &str = include_str!("../../weft-mpi/bin/mpiexec");
const MPIFORT: &str = include_str!("../../weft-mpi/bin/mpifort");

/// oshcc of an installed prefix: weft's libshmem from `<prefix>/lib`.
const OSHCC: &str = r#"#!/bin/sh
# oshcc of weft: compiles and links an OpenSHMEM C program against weft's shmem.h and
# libshmem (from the prefix this script is in). The compiler is $WEFT_OSHCC_CC, else $CC,
# else cc. -show prints the command.
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(cd "$here/.." && pwd)
cc=${WEFT_OSHCC_CC:-${CC:-cc}}
if [ "$1" = -show ]; then
  shift
  echo "$cc -I$prefix/include $* -L$prefix/lib -Wl,-rpath,$prefix/lib -lshmem -lpthread -ldl -lm"
  exit 0
fi
exec $cc -I"$prefix/include" "$@" -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -lshmem -lpthread -ldl -lm
"#;

/// oshrun of an installed prefix: `weft run` of the weft next to it.
const OSHRUN: &str = r#"#!/bin/sh
# oshrun of weft: starts an OpenSHMEM job, the same as `weft run` (e.g. oshrun -n 4 ./prog).
here=$(cd "$(dirname "$0")" && pwd)
exec "${WEFT_BIN:-$here/weft}" run "$@"
"#;

fn pc(name: &str, description: &str, version: &str, libs: &str) -> String {
    format!(
        "prefix=${{pcfiledir}}/../..\nlibdir=${{prefix}}/lib\nincludedir=${{prefix}}/include\n\nName: {name}\nDescription: {description}\nVersion: {version}\nCflags: -I${{includedir}}\nLibs: -L${{libdir}} -Wl,-rpath,${{libdir}} {libs}\n"
    )
}

/// The modulefile: finds the prefix two directories above its own.
const MODULEFILE: &str = r#"#%Module1.0
## weft: MPI (MPI 5.0 standard ABI) and OpenSHMEM 1.5 on the weft runtime.
## Written by `weft install`; the prefix is the directory two levels above this file's.
proc ModulesHelp { } {
    puts stderr "weft: mpicc, mpiexec, oshcc, oshrun and the weft command"
}
module-whatis "weft communication runtime (MPI standard ABI, OpenSHMEM)"
if { [info exists ModulesCurrentModulefile] } {
    set weft_file $ModulesCurrentModulefile
} else {
    set weft_file [info script]
}
set weft_prefix [file dirname [file dirname [file dirname [file normalize $weft_file]]]]
prepend-path PATH $weft_prefix/bin
prepend-path LD_LIBRARY_PATH $weft_prefix/lib
prepend-path PKG_CONFIG_PATH $weft_prefix/lib/pkgconfig
prepend-path CPATH $weft_prefix/include
prepend-path MANPATH $weft_prefix/share/man
setenv MPI_HOME $weft_prefix
setenv WEFT_HOME $weft_prefix
## The node's tuning file (`weft tune` run from this prefix writes it), unless one is set.
if { [file exists $weft_prefix/share/weft/tuning.toml] && ![info exists ::env(WEFT_TUNING_FILE)] } {
    setenv WEFT_TUNING_FILE $weft_prefix/share/weft/tuning.toml
}
"#;

/// Where under a prefix `weft tune` writes its tuning file by default and the modulefile
/// looks for it.
pub(crate) const TUNING_FILE: &str = "share/weft/tuning.toml";

/// Arguments of `weft install`.
#[derive(clap::Args)]
pub(crate) struct InstallArgs {
    /// Where to install (created if missing).
    #[arg(long, value_name = "DIR")]
    pub prefix: PathBuf,
}

/// The built libraries next to this binary: (file to copy, name in lib/).
fn libraries(exe_dir: &Path) -> Result<Vec<(PathBuf, &'static str)>, String> {
    let candidates = [exe_dir.to_path_buf(), exe_dir.join("../lib")];
    let find = |names: &[&str]| {
        candidates
            .iter()
            .flat_map(|d| names.iter().map(move |n| d.join(n)))
            .find(|p| p.is_file())
    };
    let mpi = find(&["libmpi_abi.so", "libmpi_abi.so.1"]);
    let shmem = find(&["libshmem.so"]);
    match (mpi, shmem) {
        (Some(m), Some(s)) => Ok(vec![(m, "libmpi_abi.so.1"), (s, "libshmem.so")]),
        (m, s) => Err(format!(
            "{} not found next to this weft ({}): build them first with `cargo build --release -p weft-cli -p weft-mpi -p weft-shmem` and run target/release/weft install",
            [(m.is_none(), "libmpi_abi.so"), (s.is_none(), "libshmem.so")]
                .iter()
                .filter(|(missing, _)| *missing)
                .map(|(_, n)| *n)
                .collect::<Vec<_>>()
                .join(" and "),
            exe_dir.display()
        )),
    }
}

fn write(path: &Path, bytes: &[u8], executable: bool) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    // Written beside and renamed, so a running program never sees half a file.
    let tmp = path.with_extension("weft-install-tmp");
    std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

fn link(dir: &Path, target: &str, name: &str) -> Result<(), String> {
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    std::os::unix::fs::symlink(target, &p).map_err(|e| format!("{}: {e}", p.display()))
}

/// Installs into `prefix`.
pub(crate) fn install(prefix: &Path) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this weft binary: {e}"))?;
    let exe_dir = exe.parent().unwrap_or(Path::new("."));
    let libs = libraries(exe_dir)?;
    std::fs::create_dir_all(prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
    let prefix = prefix
        .canonicalize()
        .map_err(|e| format!("{}: {e}", prefix.display()))?;
    let (bin, lib, inc) = (
        prefix.join("bin"),
        prefix.join("lib"),
        prefix.join("include"),
    );
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    // The running binary may be the installed one: copy through memory first.
    let me = read(&exe)?;
    write(&bin.join("weft"), &me, true)?;
    for (name, text) in [
        ("mpicc", MPICC),
        ("mpiexec", MPIEXEC),
        ("mpifort", MPIFORT),
        ("oshcc", OSHCC),
        ("oshrun", OSHRUN),
    ] {
        write(&bin.join(name), text.as_bytes(), true)?;
    }
    link(&bin, "mpicc", "mpicxx")?;
    link(&bin, "mpiexec", "mpirun")?;
    link(&bin, "mpifort", "mpif90")?;
    link(&bin, "mpifort", "mpif77")?;
    // The Fortran bindings (built into this binary when gfortran was there at build time;
    // mpifort says so when they are missing).
    for (rel, bytes) in weft_mpifort::FILES {
        write(&prefix.join(rel), bytes, rel.ends_with(".so"))?;
    }
    for (src, name) in &libs {
        let bytes = read(src)?;
        write(&lib.join(name), &bytes, true)?;
    }
    link(&lib, "libmpi_abi.so.1", "libmpi_abi.so")?;
    link(&lib, "libmpi_abi.so.1", "libmpi.so")?;
    // The static library, when built, for `mpicc -static`.
    let archive = exe_dir.join("libmpi_abi.a");
    if archive.is_file() {
        write(&lib.join("libmpi_abi.a"), &read(&archive)?, false)?;
    }
    for (rel, bytes) in embedded::HEADERS {
        write(&inc.join(rel), bytes, false)?;
    }
    write(
        &lib.join("pkgconfig/mpi.pc"),
        pc(
            "mpi",
            "weft's MPI library (MPI 5.0 standard ABI)",
            "5.0",
            "-lmpi_abi",
        )
        .as_bytes(),
        false,
    )?;
    write(
        &lib.join("pkgconfig/shmem.pc"),
        pc(
            "shmem",
            "weft's OpenSHMEM library",
            "1.5",
            "-lshmem -lpthread -ldl -lm",
        )
        .as_bytes(),
        false,
    )?;
    write(
        &prefix.join("share/modulefiles/weft"),
        MODULEFILE.as_bytes(),
        false,
    )
}

/// Runs `weft install`.
pub(crate) fn run(args: InstallArgs) -> i32 {
    match install(&args.prefix) {
        Ok(()) => {
            println!(
                "installed weft into {} (`module use {}/share/modulefiles && module load weft`, or put {}/bin on PATH)",
                args.prefix.display(),
                args.prefix.display(),
                args.prefix.display()
            );
            0
        }
        Err(e) => {
            eprintln!("weft install: {e}");
            1
        }
    }
}
