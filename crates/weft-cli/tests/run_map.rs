//! `weft run --map torus:XxYxZ[@AxBxC] [--exclude FILE]` end to end: refusals (one line,
//! exit 2, nothing started) and a job on network-namespace hosts from scripts/testhosts.sh
//! whose ranks report their host and torus coordinates.
//!
//! The namespace test needs root and iproute2; without them it prints why and returns. It
//! checks that no namespace of its own is left behind.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use weft_launch::place::HostSlots;
use weft_launch::torus::{excluded_hosts, place_on_torus, TorusRequest};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");
const NETNS: &str = "ip netns exec {host}";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/testhosts.sh")
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

/// Namespace hosts for one test; removed on drop (checked unless the test failed).
struct Hosts {
    names: Vec<String>,
    net: String,
}

impl Hosts {
    fn up(n: usize) -> Option<Hosts> {
        let pid = std::process::id();
        let names: Vec<String> = (0..n)
            .map(|i| format!("wm{:05}t{i}", pid % 100_000))
            .collect();
        // Second octets 10-39 are used by no other test file.
        let net = format!("10.{}.220", 10 + pid % 30);
        let out = Command::new("bash")
            .arg(script())
            .args(["up", "--net", &net])
            .args(&names)
            .output()
            .expect("run scripts/testhosts.sh");
        if out.status.code() == Some(77) {
            eprintln!("skipping: {}", text(&out.stderr).trim());
            return None;
        }
        assert!(
            out.status.success(),
            "testhosts.sh up: {}",
            text(&out.stderr)
        );
        Some(Hosts { names, net })
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("down")
            .args(&self.names)
            .status();
        let left = text(
            &Command::new("ip")
                .args(["netns", "list"])
                .output()
                .map(|o| o.stdout)
                .unwrap_or_default(),
        );
        if !std::thread::panicking() {
            for n in &self.names {
                assert!(!left.contains(n.as_str()), "namespace {n} left: {left}");
            }
        }
    }
}

/// A file of this test process under the target's scratch folder.
fn scratch(name: &str, contents: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("run-map-{}-{name}", std::process::id()));
    std::fs::write(&p, contents).unwrap();
    p
}

#[test]
fn bad_maps_are_one_line_and_exit_2_with_nothing_started() {
    // Hosts that do not exist and a launcher that would fail loudly: a refusal must come
    // before anything is started.
    let hosts = "n0:2,n1:2,n2:2,n3:2,n4:2,n5:2";
    let unknown = scratch("unknown", "# faulty\nn1\nn7\n");
    let too_many = scratch("too-many", "n0\nn1\nn2\n");
    let missing = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-such-exclude-file");
    let (unknown, too_many, missing) = (
        unknown.to_str().unwrap(),
        too_many.to_str().unwrap(),
        missing.to_str().unwrap(),
    );
    for (args, want) in [
        (vec!["--map", "4x2x2"], "expected torus:XxYxZ"),
        (
            vec!["--map", "torus:2xx2"],
            "expected dimensions like 16x16x16",
        ),
        (
            vec!["--map", "torus:2x2"],
            "6 hosts are listed, but a 2x2 torus is 4 hosts",
        ),
        (vec!["--map", "torus:4x2@3x2"], "does not fit in 3x2"),
        (
            vec!["--map", "torus:2x2@3x2", "--exclude", missing],
            "--exclude",
        ),
        (
            vec!["--map", "torus:2x2@3x2", "--exclude", unknown],
            ":3: \"n7\": not a host",
        ),
        (
            vec!["--map", "torus:2x2@3x2", "--exclude", too_many],
            "3 healthy of 6",
        ),
        (
            vec!["--map", "torus:2x2@3x2", "-n", "6"],
            "-n 6: the job's 4 hosts take a multiple of 4",
        ),
        (
            vec!["--map", "torus:2x2@3x2", "-n", "12"],
            "3 ranks per host exceed the 2 slots",
        ),
        (
            vec!["--map", "torus:2x2@3x2", "--map-by", "node"],
            "drop --map-by",
        ),
    ] {
        let mut all = vec![
            "--hosts",
            hosts,
            "--launcher",
            "/nonexistent/launcher {host}",
        ];
        all.extend(&args);
        all.extend(["--", "/nonexistent/program"]);
        let out = weft_run(&all);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("weft run: ") && stderr.contains(want),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // Without hosts there is no torus to lay; --exclude needs --map.
    let out = weft_run(&["--map", "torus:2", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("give them with --hosts"),
        "{}",
        text(&out.stderr)
    );
    let out = weft_run(&["--hosts", hosts, "--exclude", too_many, "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--map"), "{}", text(&out.stderr));
}

/// A 3x2 machine of six namespace hosts without two of them: a 2x2 job of two ranks per
/// host. Every rank runs on the host the model chose for its virtual coordinates (ranks in
/// row-major order, two per host), gets those coordinates, and no rank runs on an excluded
/// host; the launcher printed the dilation once and, with --report-bindings, each host.
#[test]
fn ranks_run_on_the_virtual_torus_of_the_healthy_namespace_hosts() {
    let Some(h) = Hosts::up(6) else { return };
    let list: String = h
        .names
        .iter()
        .map(|n| format!("{n}:2"))
        .collect::<Vec<_>>()
        .join(",");
    // Node 1 (coordinates 1,0) by name and node 4 by its coordinates, as weft plan map
    // takes them.
    let exclude = scratch("exclude", &format!("# faulty nodes\n{}\n1,1\n", h.names[1]));
    let out = weft_run(&[
        "--hosts",
        &list,
        "--launcher",
        NETNS,
        "--boot-addr",
        &format!("{}.1", h.net),
        "--map",
        "torus:2x2@3x2",
        "--exclude",
        exclude.to_str().unwrap(),
        "--report-bindings",
        "--timeout",
        "300",
        "sh",
        "-c",
        "echo $WEFT_RANK $WEFT_NODE_ID $WEFT_TORUS_DIMS $WEFT_TORUS_COORDS $WEFT_SIZE",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // What the launcher must have chosen: the same pure placement.
    let slots: Vec<HostSlots> = h
        .names
        .iter()
        .map(|n| HostSlots {
            name: n.clone(),
            slots: 2,
        })
        .collect();
    let request = TorusRequest::parse("torus:2x2@3x2").unwrap();
    let bad = excluded_hosts(&format!("{}\n1,1\n", h.names[1]), "x", &slots, &[3, 2]).unwrap();
    assert_eq!(bad, [1, 4]);
    let want = place_on_torus(&request, &slots, &bad, None).unwrap();
    assert_eq!(want.nranks(), 8);
    let summary: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("dilation max"))
        .collect();
    assert_eq!(summary, [format!("weft: {}", want.summary())], "{stderr}");
    for line in want.host_lines() {
        assert!(stderr.contains(&line), "{line}: {stderr}");
    }
    let mut lines: Vec<Vec<String>> = text(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    lines.sort_by_key(|w| w[0].parse::<u32>().unwrap());
    assert_eq!(lines.len(), 8, "{lines:?}");
    for (rank, words) in lines.iter().enumerate() {
        let host = &want.hosts[rank / 2];
        let coords = host
            .coords
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(
            words,
            &[
                rank.to_string(),
                host.name.clone(),
                "2x2".into(),
                coords,
                "8".into()
            ],
            "rank {rank}"
        );
        assert!(
            words[1] != h.names[1] && words[1] != h.names[4],
            "{words:?}"
        );
    }
    // Row-major virtual order: rank r sits at (r/2 / 2, r/2 % 2).
    let firsts: Vec<&str> = lines.iter().step_by(2).map(|w| w[3].as_str()).collect();
    assert_eq!(firsts, ["0,0", "0,1", "1,0", "1,1"]);
    // Four distinct healthy hosts.
    let mut used: Vec<&str> = lines.iter().map(|w| w[1].as_str()).collect();
    used.sort_unstable();
    used.dedup();
    assert_eq!(used.len(), 4, "{used:?}");
}
