//! The C tests of libshmem: each program in tests/c is compiled against include/ and the
//! libshmem.so cargo just built, then run as real jobs through weft-launch at several PE
//! counts; results are asserted by the programs and by the output checked here.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use weft_launch::{run_job, JobOutcome, JobSpec, OutputMode};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding libshmem.so: next to the test binary in `<target>/<profile>/deps`
/// (where cargo builds it for tests), or one level up (where `cargo build` puts it).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    if deps.join("libshmem.so").exists() {
        deps
    } else {
        deps.parent().unwrap().to_path_buf()
    }
}

fn compile(name: &str, dir: &str) -> PathBuf {
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
        .args([
            "-O1",
            "-Wall",
            "-Werror",
            "-pthread",
            "-Wl,--disable-new-dtags",
            "-o",
        ])
        .arg(&out)
        .arg(crate_dir().join(format!("{dir}/{name}.c")))
        .status()
        .expect("run oshcc");
    assert!(status.success(), "oshcc {name}.c failed");
    out
}

fn job(program: &Path, n: u32, args: &[&str], env: &[(&str, &str)]) -> JobOutcome {
    let mut spec = JobSpec::new(n, program);
    spec.args = args.iter().map(|a| a.into()).collect();
    spec.env = env
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    spec.output = OutputMode::Capture;
    spec.tag_output = true;
    spec.timeout = Some(Duration::from_secs(60));
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

fn text(out: &JobOutcome) -> String {
    format!(
        "exit {} {:?}\nstdout:\n{}\nstderr:\n{}",
        out.exit_code,
        out.failure,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn rma_program_at_1_to_4_pes() {
    let exe = compile("rma", "tests/c");
    for n in 1..=4 {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("rma ok").count(),
            n as usize,
            "{}",
            text(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn collectives_and_signal_forms_at_1_to_4_pes() {
    let exe = compile("coll", "tests/c");
    for n in 1..=4 {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("coll ok").count(),
            n as usize,
            "{}",
            text(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn concurrent_threads_and_signal_ping_pong_at_1_2_3_pes() {
    let exe = compile("threads", "tests/c");
    for n in 1..=3 {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("threads ok").count(),
            n as usize,
            "{}",
            text(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn lu_example_factorises_and_verifies_at_1_2_3_pes() {
    let exe = compile("lu", "examples");
    for n in 1..=3 {
        let out = job(&exe, n, &["96", "both"], &[]);
        assert_eq!(out.exit_code, 0, "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("verified=yes"), "{}", text(&out));
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn sync_engine_at_2_3_4_7_processes() {
    let exe = compile("sync", "tests/c");
    for n in [2, 3, 4, 7] {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("sync ok").count(),
            n as usize,
            "{}",
            text(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn a_killed_process_ends_the_sync_wait() {
    let exe = compile("sync", "tests/c");
    let out = job(&exe, 3, &["die"], &[]);
    assert_ne!(out.exit_code, 0, "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("passed without"),
        "{}",
        text(&out)
    );
    assert!(out.elapsed < Duration::from_secs(30), "{}", text(&out));
    let _ = std::fs::remove_file(exe);
}

#[test]
fn bad_input_is_a_fatal_error_naming_pe_and_address() {
    let exe = compile("bad", "tests/c");
    for (case, needle) in [
        ("pe", "out of range"),
        ("addr", "not symmetric"),
        ("heap", "symmetric heap exhausted"),
    ] {
        let out = job(&exe, 2, &[case], &[]);
        assert_ne!(out.exit_code, 0, "{case}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{case}: {}", text(&out));
        assert!(err.contains("PE "), "{case}: {}", text(&out));
        assert!(!String::from_utf8_lossy(&out.stdout).contains("not reached"));
    }
    let _ = std::fs::remove_file(exe);
}

/// Every function shmem.h, shmem_typed.h and weft/sync.h declare is exported by libshmem.so
/// (the header cannot promise what the library lacks).
#[test]
fn every_declared_function_is_exported() {
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib_dir().join("libshmem.so"))
        .output()
        .expect("run nm");
    assert!(nm.status.success());
    let exported: std::collections::HashSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .collect();
    let mut declared = 0;
    for header in [
        "include/shmem.h",
        "include/shmem_typed.h",
        "include/weft/sync.h",
    ] {
        let text = std::fs::read_to_string(crate_dir().join(header)).unwrap();
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('#')
                || line.starts_with("/*")
                || line.starts_with('*')
                || !line.ends_with(");")
            {
                continue;
            }
            let Some(open) = line.find('(') else { continue };
            let name = line[..open]
                .split_whitespace()
                .last()
                .unwrap_or("")
                .trim_start_matches('*');
            if name.is_empty() || name.starts_with("typedef") {
                continue;
            }
            declared += 1;
            assert!(
                exported.contains(name),
                "{header} declares {name}, libshmem.so does not export it"
            );
        }
    }
    assert!(declared > 900, "only {declared} declarations parsed");
}

/// The `weft` binary (it holds the hosts' agent): `$WEFT` (an absolute path, as oshrun
/// takes it), else next to libshmem's directory when the workspace's binaries were built
/// (`cargo test --workspace` builds them), else `None`.
fn weft_binary() -> Option<PathBuf> {
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
fn across_nodes(weft: &Path, exe: &Path, hosts: &str, args: &[&str], ok: &str) {
    let list = weft_launch::place::parse_hosts(hosts).unwrap();
    let n: u32 = list.iter().map(|h| h.slots).sum();
    let mut spec = JobSpec::new(n, exe);
    spec.args = args.iter().map(|a| a.into()).collect();
    spec.output = OutputMode::Capture;
    spec.tag_output = true;
    spec.timeout = Some(Duration::from_secs(60));
    spec.hosts = Some(weft_launch::HostsSpec {
        hosts: list,
        map_by: weft_launch::place::MapBy::Slot,
        launcher: "env".into(),
        boot_addr: Some("127.0.0.1".into()),
        agent_program: weft.to_path_buf(),
    });
    let out = run_job(&spec).expect("launch");
    assert_eq!(out.exit_code, 0, "{hosts}: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.matches(ok).count(),
        n as usize,
        "{hosts}: {}",
        text(&out)
    );
}

/// The weft binary for the tests across (simulated) nodes. Without it they fail, so a run
/// that forgot to build weft-cli cannot pass without checking anything; set
/// `WEFT_TEST_SKIP_MULTINODE=1` to skip them on purpose.
fn skip_without_weft() -> Option<PathBuf> {
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

#[test]
fn rma_across_two_nodes_at_2_and_4_pes() {
    let Some(weft) = skip_without_weft() else {
        return;
    };
    let exe = compile("rma_nodes", "tests/c");
    for hosts in ["a:1,b:1", "a:2,b:2"] {
        across_nodes(&weft, &exe, hosts, &[], "rma_nodes ok");
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn collectives_and_signal_forms_across_two_nodes() {
    let Some(weft) = skip_without_weft() else {
        return;
    };
    let exe = compile("coll", "tests/c");
    for hosts in ["a:1,b:1", "a:2,b:2", "a:1,b:2"] {
        across_nodes(&weft, &exe, hosts, &[], "coll ok");
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn job_wide_sync_engine_across_two_and_three_nodes() {
    let Some(weft) = skip_without_weft() else {
        return;
    };
    let exe = compile("sync_job", "tests/c");
    for (hosts, nodes) in [("a:1,b:1", "2"), ("a:2,b:2", "2"), ("a:1,b:2,c:1", "3")] {
        across_nodes(&weft, &exe, hosts, &[nodes], "sync_job ok");
    }
    // One node: the job-wide calls are the node's.
    let out = job(&exe, 3, &["1"], &[]);
    assert_eq!(out.exit_code, 0, "{}", text(&out));
    let _ = std::fs::remove_file(exe);
}
