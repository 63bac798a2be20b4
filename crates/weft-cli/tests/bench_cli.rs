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
        assert!(v[3 + i]["mb_per_s"].as_f64().unwrap() > 0.0 || *bytes == 0);
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
    assert!(v
        .iter()
        .all(|p| p["op"] == "allgather" && p["avg_us"].as_f64().unwrap() > 0.0));
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
