//! Helpers of the C tests: compiling a C program against include/ and the libshmem.so cargo
//! built, and running it as a real job through weft-launch (on one node, or on simulated
//! nodes of this machine).

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
pub(crate) use weft_itest::jobs::describe;
use weft_launch::{run_job, JobOutcome, JobSpec, OutputMode};

pub(crate) fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding libshmem.so: next to the test binary in `<target>/<profile>/deps`
/// (where cargo builds it for tests), or one level up (where `cargo build` puts it).
pub(crate) fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    if deps.join("libshmem.so").exists() {
        deps
    } else {
        deps.parent().unwrap().to_path_buf()
    }
}

pub(crate) fn compile(name: &str, dir: &str) -> PathBuf {
    compile_with(name, dir, &[])
}

/// [`compile`] with more compiler arguments (e.g. `-std=c11`).
pub(crate) fn compile_with(name: &str, dir: &str, extra: &[&str]) -> PathBuf {
    let mut flags = vec!["-O1", "-Wall", "-Werror", "-pthread"];
    flags.extend_from_slice(extra);
    compile_sources(name, &[&format!("{dir}/{name}.c")], &flags)
}

/// Compiles and links the C files `sources` (relative to the crate) with oshcc and `flags`
/// (`-l` ones after the sources) into a program named after `name`, linked with DT_RPATH to
/// the libshmem.so of this build.
pub(crate) fn compile_sources(name: &str, sources: &[&str], flags: &[&str]) -> PathBuf {
    // Unique per call: tests run in parallel and several compile (and remove) one program.
    static COMPILED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = COMPILED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("weft-shmem-{name}-{}-{k}", std::process::id()));
    let lib = lib_dir();
    assert!(
        lib.join("libshmem.so").exists(),
        "libshmem.so not found in {}",
        lib.display()
    );
    let status = Command::new(crate_dir().join("bin/oshcc"))
        .env("WEFT_SHMEM_LIB", &lib)
        // DT_RPATH, which the loader searches before LD_LIBRARY_PATH: cargo's test runner
        // puts <target>/<profile> on that path, where an older libshmem.so may lie.
        .arg("-Wl,--disable-new-dtags")
        .args(flags.iter().filter(|f| !f.starts_with("-l")))
        .arg("-o")
        .arg(&out)
        .args(sources.iter().map(|s| crate_dir().join(s)))
        // Libraries after the sources that use them.
        .args(flags.iter().filter(|f| f.starts_with("-l")))
        .status()
        .expect("run oshcc");
    assert!(status.success(), "oshcc {sources:?} failed");
    out
}

/// The timeout of the jobs these tests run: a hang catcher only. Ranks that spin in lock step
/// run 70-100x slower on a 2-core machine beside two busy processes, so it is far above any
/// honest run; a test that needs a job ended forces it and checks why it ended.
pub(crate) const JOB_TIMEOUT: Duration = Duration::from_secs(600);

pub(crate) fn job(program: &Path, n: u32, args: &[&str], env: &[(&str, &str)]) -> JobOutcome {
    job_within(program, n, args, env, JOB_TIMEOUT)
}

/// [`job`] ended (and failed) after `timeout`: for programs that synchronise hundreds of
/// times, which an oversubscribed, busy machine slows down many times over.
pub(crate) fn job_within(
    program: &Path,
    n: u32,
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
) -> JobOutcome {
    let mut spec = JobSpec::new(n, program);
    spec.args = args.iter().map(|a| a.into()).collect();
    let env = env.iter().map(|(a, b)| (a.to_string(), b.to_string()));
    // WEFT_TEST_LANES may force a lane on every job (weft_itest::lanes).
    spec.env = weft_itest::lanes::with_forced_lane(cfg!(feature = "ucx"), env.collect());
    spec.output = OutputMode::Capture;
    spec.tag_output = true;
    spec.timeout = Some(timeout);
    let out = run_job(&spec).expect("launch");
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.contains(&out.job_id))
        .collect();
    assert!(
        left.is_empty(),
        "job {} left segments: {left:?}",
        out.job_id
    );
    out
}

/// The `weft` binary (it holds the hosts' agent): `$WEFT` (an absolute path, as oshrun
/// takes it), else next to libshmem's directory when the workspace's binaries were built
/// (`cargo test --workspace` builds them), else `None`.
pub(crate) fn weft_binary() -> Option<PathBuf> {
    if let Some(w) = std::env::var_os("WEFT")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.exists())
    {
        return Some(w);
    }
    let lib = lib_dir();
    [lib.join("weft"), lib.parent().unwrap().join("weft")]
        .into_iter()
        .find(|p| p.exists())
}

/// Runs `exe` with `args` on the hosts `hosts` (e.g. "a:1,b:2"), all on this machine: a
/// launcher template without {host} runs every host's agent here, so the hosts are different
/// nodes (different WEFT_NODE_ID) and every operation between them goes over TCP. Checks
/// that every PE printed `ok`.
pub(crate) fn across_nodes(weft: &Path, exe: &Path, hosts: &str, args: &[&str], ok: &str) {
    let list = weft_launch::place::parse_hosts(hosts).unwrap();
    let n: u32 = list.iter().map(|h| h.slots).sum();
    let mut spec = JobSpec::new(n, exe);
    spec.args = args.iter().map(|a| a.into()).collect();
    spec.env = weft_itest::lanes::with_forced_lane(cfg!(feature = "ucx"), Vec::new());
    spec.output = OutputMode::Capture;
    spec.tag_output = true;
    spec.timeout = Some(JOB_TIMEOUT);
    spec.hosts = Some(weft_launch::HostsSpec {
        hosts: list,
        map_by: weft_launch::place::MapBy::Slot,
        launcher: "env".into(),
        boot_addr: Some("127.0.0.1".into()),
        agent_program: weft.to_path_buf(),
    });
    let out = run_job(&spec).expect("launch");
    assert_eq!(out.exit_code, 0, "{hosts}: {}", describe(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.matches(ok).count(),
        n as usize,
        "{hosts}: {}",
        describe(&out)
    );
}

/// The weft binary for the tests across (simulated) nodes. Without it they fail, so a run
/// that forgot to build weft-cli cannot pass without checking anything; set
/// `WEFT_TEST_SKIP_MULTINODE=1` to skip them on purpose.
pub(crate) fn skip_without_weft() -> Option<PathBuf> {
    let w = weft_binary();
    if w.is_none() {
        let why = format!(
            "no weft binary next to {} (build weft-cli first: cargo build -p weft-cli)",
            lib_dir().display()
        );
        if std::env::var_os("WEFT_TEST_SKIP_MULTINODE").is_some() {
            eprintln!("skipped (WEFT_TEST_SKIP_MULTINODE): {why}");
        } else {
            panic!("{why}; set WEFT_TEST_SKIP_MULTINODE=1 to skip the tests across nodes");
        }
    }
    w
}

/// Each rank's stdout lines of a job run with tagged output (`[rank] line`), in order.
pub(crate) fn rank_lines(out: &JobOutcome) -> Vec<(u32, String)> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix('[')?;
            let (rank, line) = rest.split_once("] ")?;
            Some((rank.parse().ok()?, line.to_string()))
        })
        .collect()
}
