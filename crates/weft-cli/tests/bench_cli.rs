//! `weft bench` end to end: the benchmarks start their own ranks and print one JSON object
//! per measured point.

use std::process::Command;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

#[test]
fn p2p_json_has_latency_and_bandwidth_per_size() {
    let out = Command::new(WEFT)
        .args([
            "bench",
            "p2p",
            "--sizes",
            "0,8,100000",
            "--iters",
            "20",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_lines(&out.stdout);
    assert_eq!(v.len(), 6);
    for (i, bytes) in [0u64, 8, 100000].iter().enumerate() {
        assert_eq!(v[i]["test"], "latency");
        assert_eq!(v[i]["bytes"], *bytes);
        assert!(v[i]["p50_us"].as_f64().unwrap() > 0.0);
        assert_eq!(v[3 + i]["test"], "bandwidth");
        // Printed with one decimal: small messages on a loaded machine may show 0.0 MB/s;
        // 100000-byte ones would need 40 minutes for their 128 MB to show 0.0.
        let mbps = v[3 + i]["mb_per_s"].as_f64().unwrap();
        assert!(mbps.is_finite() && mbps >= 0.0, "{mbps}");
        assert!(mbps > 0.0 || *bytes < 100000, "{bytes} B at {mbps} MB/s");
    }
}

#[test]
fn coll_all_algorithms_skips_what_cannot_run() {
    let out = Command::new(WEFT)
        .args([
            "bench",
            "coll",
            "--op",
            "allgather",
            "-n",
            "3",
            "--sizes",
            "8,1000",
            "--iters",
            "5",
            "--algo",
            "all",
            "--json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("skipping recursive_doubling at 3 ranks"),
        "{err}"
    );
    let v = json_lines(&out.stdout);
    let algos: Vec<&str> = v.iter().map(|p| p["algo"].as_str().unwrap()).collect();
    assert_eq!(
        algos,
        ["ring", "ring", "bruck", "bruck", "knomial", "knomial", "shm", "shm"]
    );
    assert!(v.iter().all(|p| p["op"] == "allgather"
        && p["avg_us"].as_f64().unwrap() > 0.0
        && p["max_p50_us"].as_f64().unwrap() > 0.0));
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["bench", "p2p", "-n", "3"][..],
        &["bench", "coll", "--op", "frobnicate"][..],
        &["bench", "coll", "--op", "bcast", "--sizes", "8,x"][..],
    ] {
        let out = Command::new(WEFT).args(args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// bench/coll_sweep.sh runs `weft bench coll` per round, np, op and size and tables the
/// medians against a peers file: a point slower than the better peer is marked MISS, one
/// faster is not; the raw points keep one line per round and point.
#[test]
fn coll_sweep_tables_rounds_against_peers() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("weft-sweep-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let peers = dir.join("PEERS.md");
    // Barrier: peers far slower than anything weft does; bcast 8 B: impossibly fast peers.
    std::fs::write(
        &peers,
        "## np=2: test figures\n| osu_barrier (us) | - | 100000.0 | 200000.0 |\n\
         | osu_bcast (us) | 8 B | 0.0001 | 0.0002 |\n",
    )
    .unwrap();
    let raw = dir.join("points.jsonl");
    let out = Command::new("sh")
        .arg(root.join("bench/coll_sweep.sh"))
        .args(["--weft", WEFT, "--rounds", "2", "--np", "2"])
        .args(["--ops", "barrier,bcast", "--sizes", "8", "--peers"])
        .arg(&peers)
        .arg("--out")
        .arg(&raw)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |op: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(op))
            .unwrap_or_else(|| panic!("no {op} row in:\n{stdout}"))
            .to_string()
    };
    assert!(!row("barrier").ends_with("MISS"), "{stdout}");
    assert!(row("bcast").ends_with("MISS"), "{stdout}");
    let lines = std::fs::read_to_string(&raw).unwrap();
    assert_eq!(lines.lines().count(), 4, "{lines}");
    let bad = Command::new("sh")
        .arg(root.join("bench/coll_sweep.sh"))
        .args(["--weft", WEFT, "--rounds", "0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--rounds 0"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_sizes_its_job_from_the_hosts_like_run() {
    // Two fake hosts of two slots each (a template without {host} starts every agent here).
    let out = Command::new(WEFT)
        .args([
            "bench",
            "--hosts",
            "a:2,b:2",
            "--launcher",
            "env",
            "coll",
            "--op",
            "barrier",
            "--sizes",
            "8",
            "--iters",
            "5",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("# weft bench coll --op barrier -n 4"),
        "one rank per slot, as weft run does: {stdout}"
    );
    // -n still wins.
    let out = Command::new(WEFT)
        .args([
            "bench",
            "--hosts",
            "a:2,b:2",
            "--launcher",
            "env",
            "coll",
            "--op",
            "barrier",
            "-n",
            "3",
            "--sizes",
            "8",
            "--iters",
            "5",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("-n 3"), "{stdout}");
}
