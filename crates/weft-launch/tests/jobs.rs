//! Real multi-process jobs through `run_job`: environment, exit codes, rank deaths, timeouts,
//! aborts, launcher signals, output tagging, `/dev/shm` cleanup and the bootstrap store's
//! authentication while ranks are using it.
//!
//! Ranks are mostly `/bin/sh -c` scripts. Where a rank must speak to the bootstrap store, or
//! a launcher must run in a separate process (to be signalled), this test binary runs itself
//! with `LAUNCH_TEST_ROLE` set; `role_entry` below dispatches on it.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use weft_boot::{client_from_env, Store};
use weft_core::ErrorKind;
use weft_launch::{run_job, shm_prefix, JobOutcome, JobSpec, OutputMode};

fn sh(nranks: u32, script: &str) -> JobSpec {
    let mut spec = JobSpec::new(nranks, "/bin/sh");
    spec.args = vec!["-c".into(), script.into()];
    spec.output = OutputMode::Capture;
    spec
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// True while `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(") ").next().and_then(|s| s.chars().next());
            state != Some('Z') && state != Some('X')
        }
        Err(_) => false,
    }
}

/// Waits up to `limit` for every pid to be gone; returns those still alive.
fn wait_gone(pids: &[u32], limit: Duration) -> Vec<u32> {
    let end = Instant::now() + limit;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() || Instant::now() > end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How long a job whose ranks would otherwise run on may take before the launcher kills it:
/// a hang catcher, far above what a loaded machine needs. Tests that need the launcher to end
/// ranks let them wait for an hour and check the job ended for the reason they force (its
/// exit code and failure line), never that it ended quickly: a launcher that fails to end
/// them shows up as this timeout (exit code 124), not as a slow test.
const HANG_CATCHER: Duration = Duration::from_secs(300);

/// How long the ranks of an ended job may take to be reaped: a hang catcher as well.
const GONE_WITHIN: Duration = Duration::from_secs(60);

/// A shell snippet that holds a rank until every rank of the job has run `$UP` (touched its
/// file in `$LAUNCH_TEST_DIR`): the failure a test causes comes after every rank is there.
const UP: &str = r#"touch "$LAUNCH_TEST_DIR/up-$WEFT_RANK""#;
const ALL_UP: &str = r#"until [ "$(ls "$LAUNCH_TEST_DIR" | grep -c '^up-')" -ge "$WEFT_SIZE" ]; do sleep 0.01; done"#;

/// `sh(nranks, script)` with `$LAUNCH_TEST_DIR` (a fresh folder, see [`UP`]) and the
/// [`HANG_CATCHER`] timeout.
fn sh_in(nranks: u32, script: &str, dir: &Path) -> JobSpec {
    let mut spec = sh(nranks, script);
    spec.env
        .push(("LAUNCH_TEST_DIR".into(), dir.display().to_string()));
    spec.timeout = Some(HANG_CATCHER);
    spec
}

/// `(rank, pid)` pairs from lines `pid RANK PID`.
fn pids(out: &str) -> BTreeMap<u32, u32> {
    out.lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("pid ")?.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect()
}

/// A spec that runs this test binary in `role` as every rank.
fn role_spec(nranks: u32, role: &str) -> JobSpec {
    let mut spec = JobSpec::new(nranks, std::env::current_exe().unwrap());
    spec.args = role_args();
    spec.env = vec![("LAUNCH_TEST_ROLE".into(), role.into())];
    spec.output = OutputMode::Capture;
    spec
}

fn role_args() -> Vec<OsString> {
    [
        "role_entry",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]
    .iter()
    .map(OsString::from)
    .collect()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "weft-launch-{name}-{}-{:?}",
        std::process::id(),
        Instant::now()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn ranks_get_their_environment_at_1_2_3_4_7() {
    let script = r#"echo "R=$WEFT_RANK S=$WEFT_SIZE LR=$WEFT_LOCAL_RANK LS=$WEFT_LOCAL_SIZE A=$WEFT_BOOT_ADDR J=$WEFT_JOB_ID K=${#WEFT_JOB_SECRET} X=$LAUNCH_TEST_X""#;
    let mut secrets_seen = BTreeSet::new();
    for n in [1u32, 2, 3, 4, 7] {
        let mut spec = sh(n, script);
        spec.env = vec![
            ("LAUNCH_TEST_X".into(), "extra".into()),
            // The launcher's own variables win over the spec's.
            ("WEFT_RANK".into(), "99".into()),
        ];
        let o = run_job(&spec).unwrap();
        assert_eq!(o.exit_code, 0, "{}", text(&o.stderr));
        assert_eq!(o.failure, None);
        assert_eq!(o.job_id.len(), 12);
        assert!(o.job_id.chars().all(|c| c.is_ascii_hexdigit()));
        let out = text(&o.stdout);
        let mut ranks = BTreeSet::new();
        let mut addrs = BTreeSet::new();
        for line in out.lines() {
            let f: BTreeMap<&str, &str> = line
                .split(' ')
                .filter_map(|kv| kv.split_once('='))
                .collect();
            let r: u32 = f["R"].parse().unwrap();
            assert!(r < n, "{line}");
            assert!(ranks.insert(r), "rank {r} twice: {out}");
            assert_eq!(f["S"], n.to_string());
            assert_eq!(f["LR"], r.to_string());
            assert_eq!(f["LS"], n.to_string());
            assert!(f["A"].starts_with("127.0.0.1:"), "{line}");
            addrs.insert(f["A"].to_owned());
            assert_eq!(f["J"], o.job_id);
            assert_eq!(f["K"], "64", "32-byte secret in hex");
            assert_eq!(f["X"], "extra");
        }
        assert_eq!(ranks.len(), n as usize, "{out}");
        assert_eq!(addrs.len(), 1, "one store per job");
        secrets_seen.insert(o.job_id);
    }
    assert_eq!(secrets_seen.len(), 5, "a new job id per job");
}

#[test]
fn exit_codes_propagate_and_a_failure_ends_the_job() {
    let o = run_job(&sh(3, "exit 0")).unwrap();
    assert_eq!((o.exit_code, o.failure.as_deref()), (0, None));

    let dir = scratch("exit");
    let script = format!(
        r#"echo "pid $WEFT_RANK $$"; {UP}; if [ "$WEFT_RANK" = 1 ]; then {ALL_UP}; exit 3; fi; exec sleep 3600"#
    );
    let o = run_job(&sh_in(3, &script, &dir)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    // The others sleep an hour: only the launcher, ending the job for rank 1, stops them
    // (a launcher that does not would end it by its timeout, code 124).
    assert_eq!(o.exit_code, 3, "{}", text(&o.stderr));
    assert_eq!(
        o.failure.as_deref(),
        Some("weft: rank 1 exited with code 3; ending job")
    );
    assert!(text(&o.stderr).contains("weft: rank 1 exited with code 3; ending job"));
    let p: Vec<u32> = pids(&text(&o.stdout)).into_values().collect();
    assert_eq!(p.len(), 3);
    assert_eq!(wait_gone(&p, Duration::ZERO), Vec::<u32>::new());

    // A rank finishing with 0 while others still run is fine.
    let o = run_job(&sh(
        2,
        r#"if [ "$WEFT_RANK" = 0 ]; then exit 0; fi; sleep 0.3; exit 0"#,
    ))
    .unwrap();
    assert_eq!(o.exit_code, 0);
}

#[test]
fn a_rank_killed_by_a_signal_ends_the_job() {
    let dir = scratch("killed");
    let script = format!(
        r#"
        sleep 3600 & echo "child $WEFT_RANK $!"
        echo "pid $WEFT_RANK $$"
        {UP}
        if [ "$WEFT_RANK" = 2 ]; then {ALL_UP}; kill -9 $$; fi
        exec sleep 3600"#
    );
    let o = run_job(&sh_in(4, &script, &dir)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let out = text(&o.stdout);
    let ranks = pids(&out);
    assert_eq!(ranks.len(), 4, "{out}");
    assert_eq!(o.exit_code, 137);
    assert_eq!(
        o.failure.as_deref(),
        Some(
            format!(
                "weft: rank 2 (pid {}) killed by signal 9 (SIGKILL); ending job",
                ranks[&2]
            )
            .as_str()
        )
    );
    // Everything else sleeps an hour: the launcher ended it (else code 124, its timeout).
    // The ranks and the children they forked into their process groups are all gone.
    let children: Vec<u32> = out
        .lines()
        .filter_map(|l| l.strip_prefix("child ")?.split(' ').nth(1)?.parse().ok())
        .collect();
    assert_eq!(children.len(), 4, "{out}");
    let all: Vec<u32> = ranks.values().copied().chain(children).collect();
    assert_eq!(wait_gone(&all, GONE_WITHIN), Vec::<u32>::new());
}

#[test]
fn ranks_that_ignore_sigterm_are_killed_after_the_grace_period() {
    let dir = scratch("term");
    let script = format!(
        r#"
        trap '' TERM
        echo "pid $WEFT_RANK $$"
        {UP}
        if [ "$WEFT_RANK" = 0 ]; then {ALL_UP}; exit 7; fi
        exec sleep 3600"#
    );
    let o = run_job(&sh_in(3, &script, &dir)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    // TERM is ignored and the others sleep an hour: only the KILL after the grace period
    // ends them (a launcher that never sends it ends the job by its timeout, code 124).
    assert_eq!(o.exit_code, 7, "{}", text(&o.stderr));
    assert_eq!(
        o.failure.as_deref(),
        Some("weft: rank 0 exited with code 7; ending job")
    );
    let p: Vec<u32> = pids(&text(&o.stdout)).into_values().collect();
    assert_eq!(p.len(), 3);
    assert_eq!(wait_gone(&p, Duration::ZERO), Vec::<u32>::new());
}

#[test]
fn timeout_ends_a_hung_job() {
    let mut spec = sh(2, r#"echo "pid $WEFT_RANK $$"; exec sleep 3600"#);
    spec.timeout = Some(Duration::from_millis(500));
    let t0 = Instant::now();
    let o = run_job(&spec).unwrap();
    let elapsed = t0.elapsed();
    assert_eq!(o.exit_code, 124);
    assert_eq!(
        o.failure.as_deref(),
        Some("weft: job timed out after 0.5 s; killing 2 ranks")
    );
    // Never before its time (a lower bound holds however loaded the machine is); the upper
    // bound only catches a launcher that does not kill at all.
    assert!(elapsed >= Duration::from_millis(500), "{elapsed:?}");
    assert!(elapsed < HANG_CATCHER, "{elapsed:?}");
    let p: Vec<u32> = pids(&text(&o.stdout)).into_values().collect();
    assert_eq!(p.len(), 2);
    assert_eq!(wait_gone(&p, Duration::ZERO), Vec::<u32>::new());
}

#[test]
fn shm_segments_are_removed_when_a_rank_is_killed() {
    let script = r#"
        if [ "$WEFT_RANK" = 1 ]; then
            touch "/dev/shm/weft-$WEFT_JOB_ID-x" && test -e "/dev/shm/weft-$WEFT_JOB_ID-x" && echo created
            kill -9 $$
        fi
        exec sleep 30"#;
    let o = run_job(&sh(2, script)).unwrap();
    assert_eq!(text(&o.stdout).trim(), "created");
    assert_eq!(o.exit_code, 137);
    let seg = format!("{}-x", shm_prefix(&o.job_id));
    assert!(!Path::new(&seg).exists(), "{seg} left behind");

    // And after a job that ends normally.
    let o = run_job(&sh(1, r#"touch "/dev/shm/weft-$WEFT_JOB_ID-ring-0""#)).unwrap();
    assert_eq!(o.exit_code, 0);
    assert!(!Path::new(&format!("{}-ring-0", shm_prefix(&o.job_id))).exists());
}

#[test]
fn tagged_output_keeps_lines_whole_and_flushes_partial_lines() {
    // Each rank writes many lines in small pieces, a stderr line and an unfinished last line.
    let script = r#"
        i=0
        while [ $i -lt 300 ]; do printf 'rank %s ' "$WEFT_RANK"; printf 'line %s\n' "$i"; i=$((i+1)); done
        echo "err $WEFT_RANK" >&2
        printf 'tail%s' "$WEFT_RANK""#;
    let mut spec = sh(3, script);
    spec.tag_output = true;
    let o = run_job(&spec).unwrap();
    assert_eq!(o.exit_code, 0);
    let out = text(&o.stdout);
    let mut next = [0u32; 3];
    let mut tails = BTreeSet::new();
    for line in out.lines() {
        let (tag, rest) = line.split_once("] ").expect(line);
        let r: usize = tag.strip_prefix('[').unwrap().parse().unwrap();
        if let Some(t) = rest.strip_prefix("tail") {
            assert_eq!(t, r.to_string());
            tails.insert(r);
            continue;
        }
        // In order per rank, never cut or mixed with another rank's line.
        assert_eq!(rest, format!("rank {r} line {}", next[r]), "{line}");
        next[r] += 1;
    }
    assert_eq!(next, [300; 3]);
    assert_eq!(tails.len(), 3, "partial last lines flushed: {out}");
    let err = text(&o.stderr);
    for r in 0..3 {
        assert!(err.lines().any(|l| l == format!("[{r}] err {r}")), "{err}");
    }

    // Untagged output passes through unchanged.
    let o = run_job(&sh(1, "printf 'a\\nb'")).unwrap();
    assert_eq!(text(&o.stdout), "a\nb");
}

#[test]
fn large_output_does_not_block_ranks() {
    // 4 MiB per rank: the launcher must keep draining the pipes.
    let o = run_job(&sh(2, "head -c 4194304 /dev/zero | tr '\\0' 'x'; echo")).unwrap();
    assert_eq!(o.exit_code, 0);
    assert_eq!(o.stdout.len(), 2 * (4 * 1024 * 1024 + 1));
}

#[test]
fn a_program_that_cannot_run_is_a_clear_127_or_126() {
    let mut spec = JobSpec::new(3, "weft-no-such-program");
    spec.output = OutputMode::Capture;
    let o = run_job(&spec).unwrap();
    assert_eq!(o.exit_code, 127);
    let f = o.failure.unwrap();
    assert!(f.contains("weft-no-such-program: command not found"), "{f}");
    assert!(text(&o.stderr).contains(&f));

    let d = scratch("noexec");
    let file = d.join("prog");
    std::fs::write(&file, "#!/bin/sh\necho hi\n").unwrap();
    let mut spec = JobSpec::new(2, &file);
    spec.output = OutputMode::Capture;
    let o = run_job(&spec).unwrap();
    assert_eq!(o.exit_code, 126);
    assert!(o.failure.unwrap().contains("not executable"));
    assert!(o.stdout.is_empty());

    // Executable without a #! line: run by /bin/sh, as a shell would.
    let file = d.join("noshebang");
    std::fs::write(&file, "echo hi $WEFT_RANK\n").unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut spec = JobSpec::new(2, &file);
    spec.output = OutputMode::Capture;
    spec.tag_output = true;
    let o = run_job(&spec).unwrap();
    assert_eq!(o.exit_code, 0, "{}", text(&o.stderr));
    let mut lines: Vec<String> = text(&o.stdout).lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(lines, ["[0] hi 0", "[1] hi 1"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_specs_are_errors_naming_the_field() {
    let e = run_job(&sh(0, "true")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("nranks"), "{e}");
    let mut spec = sh(1, "true");
    spec.timeout = Some(Duration::ZERO);
    let e = run_job(&spec).unwrap_err();
    assert!(e.message().contains("timeout"), "{e}");
}

#[test]
fn abort_from_a_rank_ends_the_job_with_its_code() {
    let mut spec = role_spec(3, "abort");
    spec.timeout = Some(HANG_CATCHER);
    let o = run_job(&spec).unwrap();
    assert_eq!(o.exit_code, 5, "{}", text(&o.stderr));
    assert_eq!(
        o.failure.as_deref(),
        Some("weft: rank 1 called abort with code 5: giving up; ending job")
    );
    // Every rank sleeps an hour: the abort ended the job (else code 124, its timeout).
}

#[test]
fn unauthenticated_connections_are_refused_while_ranks_work() {
    let dir = scratch("auth");
    let mut spec = role_spec(3, "kv");
    spec.env
        .push(("LAUNCH_TEST_DIR".into(), dir.display().to_string()));
    let job = std::thread::spawn(move || run_job(&spec));

    let addr_file = dir.join("addr");
    let end = Instant::now() + HANG_CATCHER;
    while !addr_file.exists() {
        assert!(
            Instant::now() < end,
            "rank 0 never published the store address"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let addr = std::fs::read_to_string(&addr_file).unwrap();
    use std::io::{Read, Write};
    // Each attack ends with the store closing the connection, which it does only after it
    // reported the refusal: the test reads each to its end before the ranks go on, so all
    // four are reported before the job can end (the launcher prints what it was told even
    // after the ranks are gone). The 120 s read timeout only catches a store that never
    // closes.
    let closed_by_the_store = |mut c: std::net::TcpStream, what: &str| {
        c.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        let mut rest = Vec::new();
        let end = c.read_to_end(&mut rest);
        assert!(end.is_ok(), "{what}: the store never closed: {end:?}");
    };
    // No secret at all.
    let s0 = std::net::TcpStream::connect(&addr).unwrap();
    s0.shutdown(std::net::Shutdown::Write).unwrap();
    closed_by_the_store(s0, "no secret");
    // A wrong secret.
    let mut s1 = std::net::TcpStream::connect(&addr).unwrap();
    let e = weft_boot::auth::client_handshake(&mut s1, &[7u8; 32], &addr).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    closed_by_the_store(s1, "wrong secret");
    // Garbage the length of a proof, then an oversized frame header and more junk.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(&[0x5a; 73]).unwrap();
    closed_by_the_store(s, "garbage");
    let mut s2 = std::net::TcpStream::connect(&addr).unwrap();
    let _ = s2.write_all(&u32::MAX.to_be_bytes());
    s2.shutdown(std::net::Shutdown::Write).unwrap();
    closed_by_the_store(s2, "a frame header");
    std::fs::write(dir.join("go"), b"").unwrap();

    let o = job.join().unwrap().unwrap();
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    assert_eq!(o.exit_code, 0, "{out}\n{err}");
    for r in 0..3 {
        assert!(
            out.lines()
                .any(|l| l == format!("kv {r} ok 0,1,2 after-gate 0,1,2")),
            "rank {r}: {out}"
        );
    }
    let refused: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("weft: bootstrap: refused connection from 127.0.0.1:"))
        .collect();
    assert_eq!(refused.len(), 4, "{err}");
    assert!(
        refused.iter().any(|l| l.ends_with("wrong job secret")),
        "{err}"
    );
    assert!(refused.iter().any(|l| l.contains("(no secret)")), "{err}");
    assert!(refused.iter().any(|l| l.contains("bad greeting")), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Starts this binary as a launcher of `nranks` sleeping ranks; returns it, its stdout reader
/// and the ranks' pids once all have printed them.
fn start_launcher(nranks: u32) -> (std::process::Child, BTreeMap<u32, u32>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(role_args())
        .env("LAUNCH_TEST_ROLE", "launcher")
        .env("LAUNCH_TEST_RANKS", nranks.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = BTreeMap::new();
    while seen.len() < nranks as usize {
        let line = lines.next().expect("launcher output ended early").unwrap();
        seen.extend(pids(&line));
    }
    // Keep draining so the launcher never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, seen)
}

#[test]
fn sigint_and_sigterm_to_the_launcher_end_the_job() {
    for (sig, code, name) in [
        (libc::SIGTERM, 143, "SIGTERM"),
        (libc::SIGINT, 130, "SIGINT"),
        (libc::SIGHUP, 129, "SIGHUP"),
    ] {
        let (mut child, ranks) = start_launcher(3);
        // SAFETY: signals a child process this test started.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{err}");
        assert!(
            err.contains(&format!("weft: received {name}; killing 3 ranks")),
            "{err}"
        );
        // The ranks sleep an hour: the exit status and line above say the signal ended the
        // job, not the launcher's timeout (124).
        let p: Vec<u32> = ranks.into_values().collect();
        assert_eq!(wait_gone(&p, Duration::ZERO), Vec::<u32>::new());
    }
}

#[test]
fn ranks_die_when_the_launcher_is_killed() {
    let (mut child, ranks) = start_launcher(2);
    child.kill().unwrap();
    child.wait().unwrap();
    let p: Vec<u32> = ranks.into_values().collect();
    assert_eq!(wait_gone(&p, GONE_WITHIN), Vec::<u32>::new());
}

/// Not a test: the entry point of the roles this binary plays as a rank or a launcher
/// (selected by `LAUNCH_TEST_ROLE`; does nothing without it).
#[test]
#[ignore]
fn role_entry() {
    let Ok(role) = std::env::var("LAUNCH_TEST_ROLE") else {
        return;
    };
    match role.as_str() {
        "kv" => role_kv(),
        "abort" => role_abort(),
        "launcher" => role_launcher(),
        "many" => role_many(),
        other => panic!("unknown LAUNCH_TEST_ROLE {other:?}"),
    }
}

fn rank_and_size() -> (u32, u32) {
    let v = |n: &str| std::env::var(n).unwrap().parse::<u32>().unwrap();
    (v("WEFT_RANK"), v("WEFT_SIZE"))
}

/// Exchanges values through the store before and after the test attacks it.
fn role_kv() {
    let (rank, size) = rank_and_size();
    let dir = PathBuf::from(std::env::var("LAUNCH_TEST_DIR").unwrap());
    let store = client_from_env().unwrap().expect("WEFT_BOOT_ADDR set");
    // Hang catchers: the test's attacks and a loaded machine may take minutes.
    let wait = HANG_CATCHER;
    let exchange = |round: &str| -> String {
        store
            .put(&format!("{round}/{rank}"), rank.to_string().as_bytes())
            .unwrap();
        store.barrier(round, size, wait).unwrap();
        (0..size)
            .map(|p| String::from_utf8(store.get(&format!("{round}/{p}"), wait).unwrap()).unwrap())
            .collect::<Vec<_>>()
            .join(",")
    };
    let before = exchange("first");
    if rank == 0 {
        let tmp = dir.join("addr.tmp");
        std::fs::write(&tmp, std::env::var("WEFT_BOOT_ADDR").unwrap()).unwrap();
        std::fs::rename(&tmp, dir.join("addr")).unwrap();
    }
    let end = Instant::now() + wait;
    while !dir.join("go").exists() {
        assert!(Instant::now() < end, "no go signal");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A fresh connection works too after the attacks.
    let fresh = client_from_env().unwrap().unwrap();
    fresh.barrier("fresh", size, wait).unwrap();
    let after = exchange("second");
    println!("kv {rank} ok {before} after-gate {after}");
}

fn role_abort() {
    let (rank, _) = rank_and_size();
    if rank == 1 {
        let store = client_from_env().unwrap().unwrap();
        store.abort(5, "giving up").unwrap();
    }
    std::thread::sleep(Duration::from_secs(3600));
}

fn role_launcher() {
    let n: u32 = std::env::var("LAUNCH_TEST_RANKS").unwrap().parse().unwrap();
    let mut spec = JobSpec::new(n, "/bin/sh");
    spec.args = vec![
        "-c".into(),
        r#"echo "pid $WEFT_RANK $$"; exec sleep 3600"#.into(),
    ];
    // A launcher that misses the test's signal ends by this, with code 124.
    spec.timeout = Some(HANG_CATCHER);
    let o: JobOutcome = run_job(&spec).unwrap();
    std::process::exit(o.exit_code);
}

/// A launcher of 100 ranks started under a soft limit of 64 open files.
fn role_many() {
    let mut spec = JobSpec::new(100, "/bin/sh");
    spec.args = vec!["-c".into(), r#"echo "nofile $(ulimit -n)""#.into()];
    spec.output = OutputMode::Capture;
    let o = run_job(&spec).unwrap();
    let out = text(&o.stdout);
    println!("many exit {} lines {}", o.exit_code, out.lines().count());
    println!("many limits {:?}", out.lines().collect::<BTreeSet<_>>());
}

#[test]
fn many_ranks_fit_under_a_low_open_files_limit() {
    let o = Command::new("/bin/sh")
        .arg("-c")
        .arg(r#"ulimit -S -n 64 && exec "$0" "$@""#)
        .arg(std::env::current_exe().unwrap())
        .args(role_args())
        .env("LAUNCH_TEST_ROLE", "many")
        .output()
        .unwrap();
    let out = text(&o.stdout);
    assert!(
        out.contains("many exit 0 lines 100"),
        "{out}\n{}",
        text(&o.stderr)
    );
    // The ranks start with the user's limit, not the launcher's raised one.
    assert!(out.contains(r#"many limits {"nofile 64"}"#), "{out}");
}
