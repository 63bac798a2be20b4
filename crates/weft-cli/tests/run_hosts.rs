//! `weft run --hosts` end to end: jobs across network-namespace hosts made by
//! scripts/testhosts.sh (`ip netns exec {host}` as the launcher template), and across fake
//! hosts on this machine (`env` as the template) where namespaces are not available.
//!
//! Namespace tests need root and iproute2; without them they print why and return. Every test
//! checks that no process, `/dev/shm` segment or namespace of its own is left behind.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");
const NETNS: &str = "ip netns exec {host}";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/testhosts.sh")
}

/// Namespace hosts for one test; removed on drop.
struct Hosts {
    names: Vec<String>,
    /// `A.B.C` of rail 0.
    net: String,
}

impl Hosts {
    /// `n` hosts with names unique to this process and test (`tag`, one letter) and a subnet
    /// of their own; `None` (after saying why) when namespaces cannot be made here.
    fn up(tag: char, n: usize) -> Option<Hosts> {
        Hosts::up_with(tag, n, &[])
    }

    /// Like [`Hosts::up`] with extra options for testhosts.sh (`--rails`, `--shape`).
    fn up_with(tag: char, n: usize, options: &[&str]) -> Option<Hosts> {
        let pid = std::process::id();
        let names: Vec<String> = (0..n)
            .map(|i| format!("wt{:05}{tag}{i}", pid % 100_000))
            .collect();
        // Another run of this file at the same time gets other names and, most likely,
        // other subnets (each test keeps 4 for its rails).
        let net = format!(
            "10.{}.{}",
            100 + pid % 150,
            (tag as u32 - 'a' as u32) * 4 + 1
        );
        let out = Command::new("bash")
            .arg(script())
            .args(["up", "--net", &net])
            .args(options)
            .args(&names)
            .output()
            .expect("run scripts/testhosts.sh");
        if out.status.code() == Some(77) {
            eprintln!("skipping: {}", String::from_utf8_lossy(&out.stderr).trim());
            return None;
        }
        assert!(
            out.status.success(),
            "testhosts.sh up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(Hosts { names, net })
    }

    fn list(&self, slots: &[u32]) -> String {
        self.names
            .iter()
            .zip(slots)
            .map(|(n, s)| format!("{n}:{s}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The root namespace's address on rail 0, which every host reaches.
    fn root_ip(&self) -> String {
        format!("{}.1", self.net)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .args(["down", "--rails", "4"])
            .args(&self.names)
            .status();
        let left = String::from_utf8_lossy(
            &Command::new("ip")
                .args(["netns", "list"])
                .output()
                .map(|o| o.stdout)
                .unwrap_or_default(),
        )
        .into_owned();
        if !std::thread::panicking() {
            for n in &self.names {
                assert!(!left.contains(n.as_str()), "namespace {n} left: {left}");
            }
        }
    }
}

fn weft_run(args: &[&str]) -> Output {
    Command::new(WEFT)
        .arg("run")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run weft")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Command lines of live processes containing `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    let me = std::process::id().to_string();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
            continue;
        }
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = text(&c).replace('\0', " ");
            if c.contains(marker) {
                found.push(format!("{name}: {c}"));
            }
        }
    }
    found
}

/// Waits for every process carrying `marker` to be gone; the 300 s only catch processes that
/// stay (they are gone as soon as they are reaped, which is all this waits for).
fn assert_none_left(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes left: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A marker unique to this test process and `what`, usable as a `sleep` duration: about an
/// hour, so a rank sleeping it ends only because the launcher ends it. Jobs that must be
/// ended that way run with [`HANG_CATCHER`] as their timeout and check the exit code that
/// says why they ended (a launcher that fails to end them ends by the timeout, code 124).
fn marker(what: u32) -> String {
    format!("3599.{}{what}", std::process::id())
}

/// `--timeout` of jobs whose ranks sleep a [`marker`]: far above what a loaded machine needs.
const HANG_CATCHER: &str = "300";

/// One `key=value` word per rank line: `[rank] k=v k=v ...` parsed into (rank, pairs).
fn rank_lines(stdout: &str) -> Vec<(u32, Vec<(String, String)>)> {
    let mut v: Vec<(u32, Vec<(String, String)>)> = stdout
        .lines()
        .map(|l| {
            let (tag, rest) = l.split_once(' ').unwrap_or((l, ""));
            let rank = tag
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .unwrap_or_else(|_| panic!("untagged line {l:?}"));
            let pairs = rest
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, x)| (k.to_owned(), x.to_owned()))
                .collect();
            (rank, pairs)
        })
        .collect();
    v.sort_by_key(|(r, _)| *r);
    v
}

fn field<'a>(pairs: &'a [(String, String)], key: &str) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key} in {pairs:?}"))
}

const ENV_SCRIPT: &str = "echo rank=$WEFT_RANK size=$WEFT_SIZE local=$WEFT_LOCAL_RANK \
     local_size=$WEFT_LOCAL_SIZE node=$WEFT_NODE_ID boot=$WEFT_BOOT_ADDR job=$WEFT_JOB_ID \
     secret=$WEFT_JOB_SECRET ip=$(ip -4 -o addr show eth0 2>/dev/null | awk '{print $4}')";

/// Runs ENV_SCRIPT on `hosts` and checks every rank's variables against `expect`
/// (node index, local rank, local size per rank) and the boot address against `boot_ip`.
fn check_env(
    hosts: &[String],
    list: &str,
    template: &str,
    map_by: &str,
    expect: &[(usize, u32, u32)],
    boot_ip: Option<&str>,
) {
    let out = weft_run(&[
        "--hosts",
        list,
        "--launcher",
        template,
        "--map-by",
        map_by,
        "--tag-output",
        "sh",
        "-c",
        ENV_SCRIPT,
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let lines = rank_lines(&stdout);
    assert_eq!(lines.len(), expect.len(), "{stdout}");
    let secret = field(&lines[0].1, "secret").to_owned();
    assert_eq!(secret.len(), 64, "a 32-byte secret in hex");
    for (i, ((rank, p), &(node, local, local_size))) in lines.iter().zip(expect).enumerate() {
        assert_eq!(*rank, i as u32);
        assert_eq!(field(p, "rank"), i.to_string());
        assert_eq!(field(p, "size"), expect.len().to_string());
        assert_eq!(field(p, "node"), hosts[node], "rank {i}");
        assert_eq!(field(p, "local"), local.to_string(), "rank {i}");
        assert_eq!(field(p, "local_size"), local_size.to_string(), "rank {i}");
        assert_eq!(field(p, "secret"), secret);
        assert_eq!(field(p, "job"), field(&lines[0].1, "job"));
        let boot = field(p, "boot");
        let (ip, port) = boot.rsplit_once(':').expect("IP:PORT");
        assert!(port.parse::<u16>().unwrap() > 0);
        if let Some(want) = boot_ip {
            assert_eq!(ip, want, "rank {i} got {boot}");
        }
    }
    // The secret is on no command line a `ps` could show.
    assert!(
        processes_with(&secret).is_empty(),
        "secret visible in a command line"
    );
    assert!(!text(&out.stderr).contains(&secret));
}

#[test]
fn env_and_placement_on_fake_hosts_without_root() {
    let hosts: Vec<String> = vec!["fa".into(), "fb".into()];
    // `env` runs the agent here for every host: no namespaces needed.
    check_env(
        &hosts,
        "fa:2,fb:1",
        "env",
        "slot",
        &[(0, 0, 2), (0, 1, 2), (1, 0, 1)],
        None,
    );
    let out = weft_run(&[
        "--hosts",
        "fa:2,fb:2",
        "--launcher",
        "env",
        "-n",
        "5",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("5 ranks do not fit the 4 slots"),
        "{}",
        text(&out.stderr)
    );
    let out = weft_run(&["--hosts", "fa:1", "--launcher", "/no/such/launcher", "true"]);
    assert_eq!(out.status.code(), Some(127));
    assert!(
        text(&out.stderr).contains("host fa: cannot run `/no/such/launcher`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn env_and_placement_on_two_and_three_namespace_hosts() {
    let Some(h) = Hosts::up('a', 3) else { return };
    let two = &h.names[..2];
    check_env(
        two,
        &format!("{}:1,{}:3", two[0], two[1]),
        NETNS,
        "slot",
        &[(0, 0, 1), (1, 0, 3), (1, 1, 3), (1, 2, 3)],
        Some(&h.root_ip()),
    );
    check_env(
        &h.names,
        &h.list(&[2, 2, 2]),
        NETNS,
        "node",
        &[
            (0, 0, 2),
            (1, 0, 2),
            (2, 0, 2),
            (0, 1, 2),
            (1, 1, 2),
            (2, 1, 2),
        ],
        Some(&h.root_ip()),
    );
    // An explicit boot address is the one the ranks get.
    let out = weft_run(&[
        "--hosts",
        &h.list(&[1, 1, 1]),
        "--launcher",
        NETNS,
        "--boot-addr",
        &h.root_ip(),
        "--tag-output",
        "sh",
        "-c",
        "echo boot=$WEFT_BOOT_ADDR",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines = rank_lines(&text(&out.stdout));
    assert_eq!(lines.len(), 3);
    for (_, p) in &lines {
        assert!(field(p, "boot").starts_with(&format!("{}:", h.root_ip())));
    }
    // One the hosts cannot reach (their own loopback is not ours) fails clearly: the
    // agents give up on their own (the launcher's connect deadline catches one that does
    // not, with another message).
    let out = weft_run(&[
        "--hosts",
        &h.list(&[1, 1, 1]),
        "--launcher",
        NETNS,
        "--boot-addr",
        "127.0.0.1",
        "true",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{stderr}");
    assert!(
        stderr.contains("weft agent: I/O error: cannot reach the launcher at any of: 127.0.0.1:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("` exited with code 255 before its agent connected; ending job"),
        "{stderr}"
    );
}

#[test]
fn exit_codes_and_a_rank_killed_on_a_remote_host() {
    let Some(h) = Hosts::up('b', 2) else { return };
    // First failing rank's code: ranks 0 and 1 succeed, rank 2 (second host) exits 3.
    let out = weft_run(&[
        "--hosts",
        &h.list(&[2, 1]),
        "--launcher",
        NETNS,
        "sh",
        "-c",
        "[ $WEFT_RANK = 2 ] && exit 3; exit 0",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!(
            "weft: rank 2 on host {} exited with code 3; ending job",
            h.names[1]
        )),
        "{}",
        text(&out.stderr)
    );
    let missing = weft_run(&["--hosts", &h.list(&[1, 1]), "--launcher", NETNS, "/no/such"]);
    assert_eq!(missing.status.code(), Some(127));
    // Whichever host reports first ends the job, with one line naming it.
    let stderr = text(&missing.stderr);
    let named = (0..2).any(|r| {
        stderr.contains(&format!(
            "weft: cannot start rank {r} on host {}: weft: /no/such: ",
            h.names[r]
        ))
    });
    assert!(named, "{stderr}");
    assert_eq!(stderr.matches("ending job").count(), 1, "{stderr}");
    let all_ok = weft_run(&["--hosts", &h.list(&[1, 2]), "--launcher", NETNS, "true"]);
    assert_eq!(all_ok.status.code(), Some(0), "{}", text(&all_ok.stderr));

    // A rank SIGKILLed on the second host ends ranks sleeping everywhere at once.
    let m = marker(1);
    let out = weft_run(&[
        "--hosts",
        &h.list(&[2, 2]),
        "--launcher",
        NETNS,
        "--map-by",
        "node",
        "--timeout",
        HANG_CATCHER,
        "sh",
        "-c",
        &format!("[ $WEFT_RANK = 3 ] && kill -9 $$; sleep {m}"),
    ]);
    // The others sleep an hour: code 137 (not the timeout's 124) says the kill ended them.
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(137), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("killed by signal"))
        .unwrap_or_else(|| panic!("no kill line: {stderr}"));
    assert!(
        line.starts_with(&format!("weft: rank 3 on host {} (pid ", h.names[1]))
            && line.ends_with("killed by signal 9 (SIGKILL); ending job"),
        "{line}"
    );
    assert_eq!(
        stderr.matches("ending job").count(),
        1,
        "one line: {stderr}"
    );
    assert_none_left(&m);
    assert_none_left(&format!("__agent --host {}", h.names[0]));
}

#[test]
fn stdio_is_tagged_and_segments_are_removed_on_every_host() {
    let Some(h) = Hosts::up('c', 2) else { return };
    let out = weft_run(&[
        "--hosts",
        &h.list(&[1, 2]),
        "--launcher",
        NETNS,
        "--tag-output",
        "sh",
        "-c",
        "touch /dev/shm/weft-$WEFT_JOB_ID-r$WEFT_RANK; echo job=$WEFT_JOB_ID; \
         printf 'out two\\npartial'; echo err-$WEFT_RANK >&2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    for r in 0..3 {
        assert!(stdout.contains(&format!("[{r}] out two\n")), "{stdout}");
        assert!(stdout.contains(&format!("[{r}] partial\n")), "{stdout}");
        assert!(stderr.contains(&format!("[{r}] err-{r}\n")), "{stderr}");
    }
    assert!(stdout.lines().all(|l| l.starts_with('[')), "{stdout}");
    let job = stdout
        .lines()
        .find_map(|l| l.split_once("job=").map(|(_, j)| j.to_owned()))
        .expect("a job id");
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("weft-{job}")))
        .collect();
    assert!(left.is_empty(), "segments left: {left:?}");
}

/// The launcher's window of stdin towards a rank on another host (weft-launch's
/// `REMOTE_STDIN_WINDOW_BYTES`).
const STDIN_WINDOW: u64 = 1 << 20;

#[test]
fn stdin_for_a_remote_rank_that_does_not_read_is_held_back_not_buffered() {
    // One fake host: the agent runs here through `env`; its rank reads nothing until the
    // test creates `go`, then counts what it gets.
    let dir = std::env::temp_dir().join(format!("weft-stdin-window-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let go = dir.join("go");
    /// Kills the launcher if the test fails first (its agent and rank follow it).
    struct Launcher(Option<std::process::Child>);
    impl Drop for Launcher {
        fn drop(&mut self) {
            if let Some(c) = self.0.as_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let mut child = Command::new(WEFT)
        .args([
            "run",
            "--hosts",
            "fs:1",
            "--launcher",
            "env",
            "--timeout",
            "300",
        ])
        .args(["--stdin", "0", "sh", "-c"])
        .arg("while [ ! -e \"$0\" ]; do sleep 0.01; done; exec wc -c")
        .arg(&go)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run weft");
    let input = child.stdin.take().unwrap();
    let mut launcher = Launcher(Some(child));
    // 16 MiB in 64 KiB blocks; `accepted` counts the blocks the launcher's stdin took.
    const BLOCK: usize = 64 << 10;
    const TOTAL: u64 = 16 << 20;
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut input = input;
    let counter = accepted.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let block = vec![b'x'; BLOCK];
        for _ in 0..TOTAL / BLOCK as u64 {
            input.write_all(&block).expect("write the launcher's stdin");
            counter.fetch_add(BLOCK as u64, std::sync::atomic::Ordering::SeqCst);
        }
    });
    // What the launcher may have taken while the rank reads nothing: its window, the chunk
    // it read last, the rank's pipe and this test's pipe into the launcher (64 KiB each by
    // default) and the block in flight; more means the input piles up somewhere.
    let bound = STDIN_WINDOW + 512 * 1024;
    let load = || accepted.load(std::sync::atomic::Ordering::SeqCst);
    // The window lets at least STDIN_WINDOW through, so this wait ends; the deadline only
    // catches a hang.
    let deadline = Instant::now() + Duration::from_secs(120);
    while load() < STDIN_WINDOW {
        assert!(
            Instant::now() < deadline,
            "the launcher read {} bytes",
            load()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Keep offering input until the launcher takes none for a second. Whatever the timing,
    // it must never have taken more than the bound: the check holds at every look.
    let mut last = load();
    let mut still_since = Instant::now();
    while still_since.elapsed() < Duration::from_secs(1) {
        let now = load();
        assert!(
            now <= bound,
            "the launcher took {now} bytes of stdin for a rank that reads nothing \
             (window {STDIN_WINDOW})"
        );
        if now != last {
            (last, still_since) = (now, Instant::now());
        }
        assert!(
            Instant::now() < deadline + Duration::from_secs(60),
            "never settled"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Now the rank reads: everything arrives, nothing lost.
    std::fs::write(&go, b"").unwrap();
    writer.join().unwrap();
    let out = launcher.0.take().unwrap().wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), TOTAL.to_string());
}

#[test]
fn garbage_on_the_boot_and_agent_ports_is_refused_and_the_job_goes_on() {
    let Some(h) = Hosts::up('d', 2) else { return };
    // Rank 1 (second host) writes garbage to the store and to the agent port (read from its
    // agent's command line), then the job finishes normally.
    let script = r#"
        if [ "$WEFT_RANK" = 1 ]; then
          ip=${WEFT_BOOT_ADDR%:*}; port=${WEFT_BOOT_ADDR##*:}
          exec 3<>/dev/tcp/$ip/$port; printf 'GET / HTTP/1.0\r\n\r\n' >&3; exec 3>&-
          aport=$(tr '\0' '\n' < /proc/$PPID/cmdline | grep -A1 -- --connect | tail -1 | tr ',' '\n' | grep "^$ip:" | cut -d: -f2)
          exec 4<>/dev/tcp/$ip/$aport; printf 'garbage garbage garbage' >&4; exec 4>&-
          sleep 0.3
        fi
        echo done-$WEFT_RANK"#;
    let out = weft_run(&[
        "--hosts",
        &h.list(&[1, 1]),
        "--launcher",
        NETNS,
        "bash",
        "-c",
        script,
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("done-0") && stdout.contains("done-1"),
        "{stdout}"
    );
    let from = format!("refused connection from {}.3:", h.net);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("weft: bootstrap: ") && l.contains(&from)),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("weft: agent port: ") && l.contains(&from)),
        "{stderr}"
    );
}

/// Reads `n` "up" lines from a running job's stdout; if the job ends first, fails with its
/// stderr.
fn wait_for_ups(child: &mut std::process::Child, n: usize) {
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for i in 0..n {
        match lines.next() {
            Some(Ok(l)) => assert_eq!(l, "up"),
            _ => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                panic!("job ended after {i} of {n} ranks started: {err}");
            }
        }
    }
}

#[test]
fn a_killed_launcher_leaves_nothing_on_the_hosts() {
    let Some(h) = Hosts::up('e', 2) else { return };
    let m = marker(2);
    let mut child = Command::new(WEFT)
        .args(["run", "--hosts", &h.list(&[1, 2]), "--launcher", NETNS])
        .args(["sh", "-c", &format!("echo up; sleep {m}")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_ups(&mut child, 3);
    // The launcher's own command line carries the marker too; each rank at least one.
    assert!(processes_with(&m).len() > 3, "{:?}", processes_with(&m));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_none_left(&m);
    assert_none_left(&format!("__agent --host {}", h.names[1]));
}

#[test]
fn timeout_and_sigterm_end_every_host() {
    let Some(h) = Hosts::up('f', 2) else { return };
    let m = marker(3);
    let out = weft_run(&[
        "--hosts",
        &h.list(&[1, 1]),
        "--launcher",
        NETNS,
        "--timeout",
        "0.5",
        "sleep",
        &m,
    ]);
    // The rank sleeps an hour: 124 says the timeout ended it.
    assert_eq!(out.status.code(), Some(124), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("timed out after 0.5 s"),
        "{}",
        text(&out.stderr)
    );
    assert_none_left(&m);

    let mut child = Command::new(WEFT)
        .args(["run", "--hosts", &h.list(&[2, 1]), "--launcher", NETNS])
        .args(["--timeout", HANG_CATCHER])
        .args(["sh", "-c", &format!("echo up; sleep {m}")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_ups(&mut child, 3);
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    assert!(
        text(&out.stderr).contains("weft: received SIGTERM; killing 3 ranks"),
        "{}",
        text(&out.stderr)
    );
    assert_none_left(&m);
}

#[test]
fn bench_takes_the_host_options_of_run() {
    // Checked by the same parser as `weft run`, on either side of the benchmark's name.
    for args in [
        vec!["bench", "--hosts", "a:0", "p2p"],
        vec!["bench", "p2p", "--hosts", "a:0"],
    ] {
        let out = Command::new(WEFT).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains("a host needs at least 1 slot"),
            "{}",
            text(&out.stderr)
        );
    }
    let out = Command::new(WEFT)
        .args(["bench", "p2p", "--boot-addr", "10.0.0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--boot-addr needs --hosts"));

    // Real weft ranks started by an agent in a namespace host, meeting through the store
    // across the veth link.
    let Some(h) = Hosts::up('g', 1) else { return };
    let out = Command::new(WEFT)
        .args(["bench", "--hosts", &h.list(&[2]), "--launcher", NETNS])
        .args(["--boot-addr", &h.root_ip()])
        .args(["p2p", "--sizes", "8", "--iters", "20", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 2, "latency and bandwidth: {stdout}");
    assert!(
        stdout.lines().all(|l| l.contains("\"bytes\":8")),
        "{stdout}"
    );
}

#[test]
fn test_hosts_have_two_shaped_rails_and_up_is_idempotent() {
    let shape = [
        "--rails",
        "2",
        "--shape",
        "tbf rate 1gbit burst 256kb latency 20ms",
    ];
    let Some(_first) = Hosts::up_with('h', 2, &shape) else {
        return;
    };
    // Again over the same hosts: the same result, not an error.
    let h = Hosts::up_with('h', 2, &shape).expect("root already");
    let out = weft_run(&[
        "--hosts",
        &h.list(&[1, 1]),
        "--launcher",
        NETNS,
        "--tag-output",
        "sh",
        "-c",
        "for i in eth0 eth1; do echo $i $(ip -4 -o addr show $i | awk '{print $4}') \
         $(tc qdisc show dev $i | awk '{print $2}'); done",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let (a, b, c) = {
        let mut p = h.net.rsplitn(2, '.');
        let c: u32 = p.next().unwrap().parse().unwrap();
        let ab = p.next().unwrap().to_owned();
        (ab, c, c + 1)
    };
    for (rank, host_octet) in [(0, 2), (1, 3)] {
        for (rail, sub) in [(0, b), (1, c)] {
            let want = format!("[{rank}] eth{rail} {a}.{sub}.{host_octet}/24 tbf");
            assert!(stdout.contains(&want), "{want} not in {stdout}");
        }
    }
}

#[test]
fn real_weft_ranks_talk_across_namespace_hosts() {
    let Some(h) = Hosts::up('i', 3) else { return };
    // Point to point between two hosts, eager and rendezvous sizes.
    let out = Command::new(WEFT)
        .args([
            "bench",
            "--hosts",
            &format!("{}:1,{}:1", h.names[0], h.names[1]),
            "--launcher",
            NETNS,
        ])
        .args([
            "p2p",
            "--sizes",
            "8,256K",
            "--iters",
            "5",
            "--json",
            "--timeout",
            HANG_CATCHER,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 4, "{stdout}");
    // A collective over three hosts with two ranks each, placed round robin.
    let out = Command::new(WEFT)
        .args(["bench", "--hosts", &h.list(&[2, 2, 2]), "--launcher", NETNS])
        .args(["--map-by", "node", "coll", "--op", "allreduce", "-n", "6"])
        .args([
            "--sizes",
            "8,64K",
            "--iters",
            "5",
            "--json",
            "--timeout",
            HANG_CATCHER,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(
        stdout.lines().all(|l| l.contains("\"op\":\"allreduce\"")),
        "{stdout}"
    );
}
