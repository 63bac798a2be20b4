//! Shared by weft-mpi's integration tests: installs the library, header and wrappers under a
//! fresh prefix. `cargo test` builds the crate as an rlib only, so the shared library (and
//! the `weft` binary `mpiexec` runs) are built here first, into the same target directory.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cargo profile directory of this test binary (`<target>/<profile>`).
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// `cargo build` of `packages` into this test's target directory and profile.
pub(crate) fn cargo_build(packages: &[&str]) {
    let profile = profile_dir();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.arg("build").arg("-q");
    for p in packages {
        cmd.args(["-p", p]);
    }
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    // The same transports as this test (a forced UCX lane needs them in the library).
    if cfg!(feature = "ucx") {
        cmd.args(["--features", "weft/ucx"]);
    }
    let st = cmd
        .env("CARGO_TARGET_DIR", profile.parent().unwrap())
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .status()
        .unwrap();
    assert!(st.success(), "cargo build {packages:?} failed");
}

/// Builds the shared library and the weft binary, then runs install.sh into a new prefix
/// named after `tag` and this process. Prefixes of `tag` left by test processes that have
/// ended are removed first: each holds a copy of the libraries and the `weft` binary (a few
/// hundred MB in a debug build), and a test binary cannot remove its own at exit.
pub(crate) fn install(tag: &str) -> PathBuf {
    cargo_build(&["weft-mpi", "weft-cli"]);
    let profile = profile_dir();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    remove_stale_prefixes(tmp, tag);
    let p = tmp.join(format!("{tag}-{}", std::process::id()));
    let st = Command::new("sh")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh"))
        .arg(&p)
        .arg(profile.parent().unwrap())
        .env("PROFILE", profile.file_name().unwrap())
        .status()
        .unwrap();
    assert!(st.success(), "install.sh failed");
    p
}

/// Removes `<dir>/<tag>-<pid>` where no process `pid` runs any more (a prefix whose name
/// does not end in a number is not ours and stays).
fn remove_stale_prefixes(dir: &Path, tag: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(tag))
            .and_then(|n| n.strip_prefix('-'))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The repository's root (for `itest/`).
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One install prefix per test process (named after the first caller's `tag`), checked to
/// hold everything `install.sh` promises.
pub(crate) fn shared_prefix(tag: &str) -> &'static Path {
    static PREFIX: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        let p = install(tag);
        for f in [
            "lib/libmpi_abi.so.1",
            "lib/libmpi.so",
            "lib/libmpi_abi.so",
            "include/mpi.h",
            "include/mpi_proto.h",
            "bin/mpicc",
            "bin/mpicxx",
            "bin/mpiexec",
            "bin/mpirun",
            "bin/weft",
            "lib/pkgconfig/mpi.pc",
        ] {
            assert!(p.join(f).exists(), "{f} missing from the prefix");
        }
        p
    })
}

/// Compiles `itest/c/<name>.c` with the mpicc of `prefix` (warnings are errors); returns the
/// program. Each call writes a program of its own: tests run in parallel, and one test's
/// linker rewriting a program another test is starting makes that start fail with
/// "Text file busy" (ETXTBSY).
pub(crate) fn build_c(prefix: &Path, name: &str) -> PathBuf {
    static BUILT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = BUILT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = prefix.join(format!("t-{name}-{k}"));
    let src = repo_root().join(format!("itest/c/{name}.c"));
    let o = Command::new(prefix.join("bin/mpicc"))
        .args(["-O1", "-Wall", "-Wextra", "-Werror"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "mpicc {name}.c failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// The timeout of the jobs these tests run: a hang catcher only. Ranks that spin in lock step
/// run 70-100x slower on a 2-core machine beside two busy processes (a job of a second takes
/// minutes), so it is far above any honest run; a test that needs a job ended forces it (a
/// killed rank, an abort) and checks why it ended, never how fast.
pub(crate) const JOB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Runs `program` as a job of `n` ranks with `env` added ([`JOB_TIMEOUT`] at most); checks
/// that the job left no `/dev/shm` segment behind.
pub(crate) fn run_c(program: &Path, n: u32, env: &[(&str, &str)]) -> weft_launch::JobOutcome {
    run_c_args(program, n, &[], env)
}

/// [`run_c`] with the program's arguments `args`.
pub(crate) fn run_c_args(
    program: &Path,
    n: u32,
    args: &[&str],
    env: &[(&str, &str)],
) -> weft_launch::JobOutcome {
    let mut spec = weft_launch::JobSpec::new(n, program);
    spec.args = args.iter().map(|a| a.into()).collect();
    spec.output = weft_launch::OutputMode::Capture;
    spec.timeout = Some(JOB_TIMEOUT);
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    // WEFT_TEST_LANES may force a lane on every job (weft_itest::lanes).
    spec.env = weft_itest::lanes::with_forced_lane(cfg!(feature = "ucx"), env.collect());
    let out = weft_launch::run_job(&spec).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(&out.job_id))
        .collect();
    assert!(leftovers.is_empty(), "segments left behind: {leftovers:?}");
    out
}

/// Builds `itest/c/<name>.c` and runs it at every rank count of `ranks` with `env`; every
/// job must exit 0.
pub(crate) fn run_c_ok(
    prefix: &Path,
    name: &str,
    ranks: std::ops::RangeInclusive<u32>,
    env: &[(&str, &str)],
) {
    let prog = build_c(prefix, name);
    for n in ranks {
        let out = run_c(&prog, n, env);
        assert_eq!(
            out.exit_code,
            0,
            "{name} at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Runs `program` on the simulated hosts `hosts` (e.g. "a:2,b:1"): every host's agent runs
/// on this machine (a launcher template without `{host}`), so the hosts are different nodes
/// (different WEFT_NODE_ID) whose ranks talk over TCP. [`JOB_TIMEOUT`] at most; checks that the
/// job left no `/dev/shm` segment behind.
pub(crate) fn run_c_hosts(
    prefix: &Path,
    program: &Path,
    hosts: &str,
    env: &[(&str, &str)],
) -> weft_launch::JobOutcome {
    run_c_on(prefix, program, hosts, "env", "127.0.0.1", env)
}

/// Runs `program` on the hosts `hosts` started with the launcher template `launcher` (e.g.
/// `ip netns exec {host}`), the bootstrap listening on `boot_addr`. [`JOB_TIMEOUT`] at most;
/// checks that the job left no `/dev/shm` segment behind.
pub(crate) fn run_c_on(
    prefix: &Path,
    program: &Path,
    hosts: &str,
    launcher: &str,
    boot_addr: &str,
    env: &[(&str, &str)],
) -> weft_launch::JobOutcome {
    let on = Hosts {
        hosts,
        launcher,
        boot_addr,
        map_by: weft_launch::place::MapBy::Slot,
    };
    run_c_placed(prefix, program, &on, &[], env)
}

/// Where [`run_c_placed`] runs a job: hosts, their launcher template, the bootstrap's
/// address and how ranks are spread over the hosts.
#[allow(dead_code)]
pub(crate) struct Hosts<'a> {
    pub hosts: &'a str,
    pub launcher: &'a str,
    pub boot_addr: &'a str,
    pub map_by: weft_launch::place::MapBy,
}

/// As [`run_c_on`], with the ranks placed by `on.map_by` and `args` given to the program.
pub(crate) fn run_c_placed(
    prefix: &Path,
    program: &Path,
    on: &Hosts,
    args: &[&str],
    env: &[(&str, &str)],
) -> weft_launch::JobOutcome {
    let (hosts, launcher, boot_addr) = (on.hosts, on.launcher, on.boot_addr);
    let list = weft_launch::place::parse_hosts(hosts).unwrap();
    let n: u32 = list.iter().map(|h| h.slots).sum();
    let mut spec = weft_launch::JobSpec::new(n, program);
    spec.args = args.iter().map(|a| a.into()).collect();
    spec.output = weft_launch::OutputMode::Capture;
    spec.timeout = Some(JOB_TIMEOUT);
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    // WEFT_TEST_LANES may force a lane on every job (weft_itest::lanes).
    spec.env = weft_itest::lanes::with_forced_lane(cfg!(feature = "ucx"), env.collect());
    spec.hosts = Some(weft_launch::HostsSpec {
        hosts: list,
        map_by: on.map_by,
        launcher: launcher.into(),
        boot_addr: Some(boot_addr.into()),
        agent_program: prefix.join("bin/weft"),
    });
    let out = weft_launch::run_job(&spec).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(&out.job_id))
        .collect();
    assert!(leftovers.is_empty(), "segments left behind: {leftovers:?}");
    out
}
