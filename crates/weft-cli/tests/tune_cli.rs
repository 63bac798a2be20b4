//! `weft tune` end to end: a quick run on a tiny budget writes a tuning file with real
//! ranks, and the runtime then loads it (lane figures, rules, the model outside them);
//! `--check` compares every measured cell with the model; bad files and bad arguments are
//! clear errors. Nothing here asserts which algorithm wins (machine luck): only structure,
//! and that the loaders use what was written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("weft-tune-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn weft(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(WEFT)
        .args(args)
        .envs(env.iter().copied())
        .env_remove("WEFT_TUNING_FILE")
        .env_remove("WEFT_LANE_FILE")
        .output()
        .unwrap()
}

fn weft_with_file(args: &[&str], file: &Path) -> Output {
    Command::new(WEFT)
        .args(args)
        .env("WEFT_TUNING_FILE", file)
        .env_remove("WEFT_LANE_FILE")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(stdout: &[u8]) -> Vec<serde_json::Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

/// The algorithm of the file's first rule for `coll` at `procs` ranks and `bytes`.
fn rule_algo(doc: &toml::Table, coll: &str, procs: i64, bytes: i64) -> Option<String> {
    rules(doc).iter().find_map(|r| {
        let get = |k: &str| r.get(k).and_then(|v| v.as_integer());
        let fits = r["coll"].as_str() == Some(coll)
            && get("min_procs").unwrap_or(1) <= procs
            && procs <= get("max_procs").unwrap_or(i64::MAX)
            && get("min_bytes").unwrap_or(0) <= bytes
            && bytes <= get("max_bytes").unwrap_or(i64::MAX);
        fits.then(|| r["algo"].as_str().unwrap().to_string())
    })
}

/// The file's rules (none when no algorithm beat the runtime's own selection).
fn rules(doc: &toml::Table) -> Vec<toml::Value> {
    doc.get("rule")
        .and_then(|r| r.as_array())
        .cloned()
        .unwrap_or_default()
}

/// A process spinning until dropped: other programs' load on the node.
struct Spinner(std::process::Child);

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_busy_node_pins_the_runtimes_own_choices() {
    let dir = Dir::new("busy");
    let file = dir.0.join("busy.toml");
    let spinner = Spinner(
        Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap(),
    );
    let out = weft(
        &[
            "tune",
            "--quick",
            "--np",
            "2",
            "--colls",
            "allreduce,barrier",
            "--sizes",
            "8,64K",
            "--iters",
            "3",
            "--margin",
            "0",
            "--json",
            "--out",
            file.to_str().unwrap(),
        ],
        &[],
    );
    drop(spinner);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = json(&out.stdout).remove(0);
    // The spinner is always runnable: at least one other task was seen.
    assert!(
        summary["busy_others_runnable"].as_u64().unwrap() >= 1,
        "{summary}"
    );
    let doc: toml::Table = std::fs::read_to_string(&file).unwrap().parse().unwrap();
    // Lanes and points are written; every measured size is kept, and its rule pins the
    // runtime's own choice, whatever the forced cells measured.
    assert!(!doc["lane"].as_array().unwrap().is_empty());
    assert!(!doc["point"].as_array().unwrap().is_empty());
    let kept = summary["kept_default"].as_array().unwrap();
    assert_eq!(kept.len(), 3, "{summary}");
    for k in kept {
        let (coll, np, b) = (
            k["coll"].as_str().unwrap(),
            k["procs"].as_i64().unwrap(),
            k["bytes"].as_i64().unwrap(),
        );
        assert_eq!(
            rule_algo(&doc, coll, np, b).as_deref(),
            k["default"].as_str(),
            "{k}"
        );
    }
    let default_at_8 = kept
        .iter()
        .find(|k| k["coll"] == "allreduce" && k["bytes"] == 8)
        .unwrap()["default"]
        .clone();
    let explain = weft_with_file(
        &[
            "info",
            "--explain",
            "allreduce",
            "--np",
            "2",
            "--bytes",
            "8",
            "--json",
        ],
        &file,
    );
    assert!(explain.status.success());
    let x = json(&explain.stdout).remove(0);
    assert_eq!(x["source"], "tuning file", "{x}");
    assert_eq!(x["choice"], default_at_8, "{x}");
}

#[test]
fn a_quick_run_writes_a_file_the_runtime_loads() {
    let dir = Dir::new("quick");
    let file = dir.0.join("node.toml");
    let out = weft(
        &[
            "tune",
            "--quick",
            "--np",
            "2,3",
            "--colls",
            "bcast,allreduce,barrier,reduce_scatter",
            "--sizes",
            "8,64K",
            "--iters",
            "3",
            // Rules by the margin however busy the machine running the tests is (a busy
            // node's run is the next test's).
            "--busy-ok",
            "--json",
            "--out",
            file.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = json(&out.stdout);
    assert_eq!(summary.len(), 1, "{}", text(&out.stdout));
    assert_eq!(summary[0]["file"], file.to_str().unwrap());
    // No scratch file is left beside it.
    let names: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["node.toml".to_string()]);

    let doc: toml::Table = std::fs::read_to_string(&file).unwrap().parse().unwrap();
    let machine = doc["machine"].as_table().unwrap();
    for k in ["hostname", "cores", "cpu_model", "date", "weft_version"] {
        assert!(machine.contains_key(k), "[machine] lacks {k}: {machine:?}");
    }
    assert_eq!(machine["quick"].as_bool(), Some(true));
    let lanes = doc["lane"].as_array().unwrap();
    let transports: Vec<&str> = lanes
        .iter()
        .map(|l| l["transport"].as_str().unwrap())
        .collect();
    assert!(
        transports.contains(&"shm") && transports.contains(&"tcp"),
        "{transports:?}"
    );
    for l in lanes {
        for k in ["latency_us", "overhead_us", "dedicated_gbytes_per_s"] {
            let x = l[k].as_float().unwrap();
            assert!(x.is_finite() && x >= 0.0, "{l:?}");
        }
    }
    assert!(doc["model"]["reduce_ns_per_byte"].as_float().unwrap() >= 0.0);
    // Every cell measured: each registered algorithm that can run at that count, at each
    // size (the barrier once), at both rank counts.
    let points = doc["point"].as_array().unwrap();
    for coll in ["bcast", "allreduce", "barrier", "reduce_scatter_block"] {
        for np in [2, 3] {
            let sizes: &[i64] = match coll {
                "barrier" => &[0],
                // Each rank's share of the vector (3 ranks: a whole number of floats).
                "reduce_scatter_block" if np == 3 => &[4, 21844],
                "reduce_scatter_block" => &[4, 32768],
                _ => &[8, 65536],
            };
            for &b in sizes {
                let n = points
                    .iter()
                    .filter(|p| {
                        p["coll"].as_str() == Some(coll)
                            && p["procs"].as_integer() == Some(np)
                            && p["bytes"].as_integer() == Some(b)
                    })
                    .count();
                assert!(n >= 2, "{coll} np={np} {b} B: {n} cells");
            }
        }
    }
    // Rules are bounded by what was measured.
    let rules = rules(&doc);
    for r in &rules {
        assert_eq!(r["max_nodes"].as_integer(), Some(1), "{r:?}");
        let (lo, hi) = (r["min_procs"].as_integer(), r["max_procs"].as_integer());
        assert!(lo == hi && matches!(lo, Some(2 | 3)), "{r:?}");
        if r["coll"].as_str() != Some("barrier") {
            assert!(r["max_bytes"].as_integer().unwrap() <= 65536, "{r:?}");
        }
        assert_eq!(
            r["oversubscribed"].as_bool(),
            Some(lo.unwrap() > machine["cores"].as_integer().unwrap()),
            "{r:?}"
        );
        // Reduce_scatter's rules (measured as the block form) serve both forms.
        if r["coll"].as_str() == Some("reduce_scatter_block") {
            let mut twin = r.clone();
            twin.as_table_mut()
                .unwrap()
                .insert("coll".into(), "reduce_scatter".into());
            assert!(rules.contains(&twin), "{r:?}");
        }
    }
    // Every measured size got a rule: an algorithm that beat the runtime's own selection by
    // the margin in both rounds, or (a kept size) the runtime's own choice.
    let kept = summary[0]["kept_default"].as_array().unwrap();
    let kept_at = |coll: &str, np: i64, b: i64| {
        kept.iter().find(|k| {
            k["coll"].as_str() == Some(coll)
                && k["procs"].as_i64() == Some(np)
                && k["bytes"].as_i64() == Some(b)
        })
    };
    let mut measured = Vec::new();
    for coll in ["bcast", "allreduce", "barrier", "reduce_scatter_block"] {
        for np in [2i64, 3] {
            let sizes: &[i64] = match coll {
                "barrier" => &[0],
                "reduce_scatter_block" if np == 3 => &[4, 21844],
                "reduce_scatter_block" => &[4, 32768],
                _ => &[8, 65536],
            };
            for &b in sizes {
                let rule = rule_algo(&doc, coll, np, b);
                assert!(rule.is_some(), "{coll} np={np} {b} B: {doc:?}");
                if let Some(k) = kept_at(coll, np, b) {
                    assert_eq!(rule.as_deref(), k["default"].as_str(), "{k}");
                }
                measured.push((coll, np, b));
            }
        }
    }

    // The lanes reader takes the figures from the file.
    let info = weft_with_file(&["info", "--transports"], &file);
    assert!(info.status.success(), "{}", text(&info.stderr));
    let listing = text(&info.stdout);
    let origin = format!("tuning file {}", file.display());
    let shm = listing
        .lines()
        .find(|l| l.trim_start().starts_with("shm ") && l.contains("GB/s"))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(shm.contains(&origin), "{listing}");
    let plain = weft(&["info", "--transports"], &[]);
    assert!(!text(&plain.stdout).contains("tuning file"));

    // The selector takes the rules inside what was measured and the model outside.
    let explain = |coll: &str, np: &str, bytes: &str| -> serde_json::Value {
        let o = weft_with_file(
            &[
                "info",
                "--explain",
                coll,
                "--np",
                np,
                "--bytes",
                bytes,
                "--json",
            ],
            &file,
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        json(&o.stdout).remove(0)
    };
    for &(coll, np, bytes) in &measured {
        let x = explain(coll, &np.to_string(), &bytes.to_string());
        assert_eq!(x["source"], "tuning file", "{coll} {np} {bytes}: {x}");
        assert_eq!(
            x["choice"].as_str().map(str::to_string),
            rule_algo(&doc, coll, np, bytes),
            "{coll} {np} {bytes}: {x}"
        );
    }
    assert_eq!(explain("allreduce", "2", "1M")["source"], "model");
    assert_eq!(explain("bcast", "4", "8")["source"], "model");

    // A job run with the knob: its ranks choose as the selector with the file does.
    let chosen = explain("allreduce", "2", "8")["choice"].clone();
    let bench = weft_with_file(
        &[
            "bench",
            "coll",
            "--op",
            "allreduce",
            "-n",
            "2",
            "--sizes",
            "8",
            "--iters",
            "3",
            "--json",
        ],
        &file,
    );
    assert!(bench.status.success(), "{}", text(&bench.stderr));
    let p = json(&bench.stdout).remove(0);
    assert_eq!(p["algo"], chosen, "{p}");

    // --check: a row per measured cell, and a summary per collective.
    let check = weft(&["tune", "--check", file.to_str().unwrap(), "--json"], &[]);
    assert!(check.status.success(), "{}", text(&check.stderr));
    let v = json(&check.stdout);
    let rows: Vec<&serde_json::Value> = v
        .iter()
        .filter(|x| x.get("measured_us").is_some())
        .collect();
    assert_eq!(rows.len(), points.len());
    let sums = v.iter().filter(|x| x.get("mape_pct").is_some()).count();
    assert_eq!(sums, 4);
}

/// A hand-written file with lanes, rules and measured points.
const HAND: &str = r#"[machine]
hostname = "example"
cores = 2

[[lane]]
transport = "shm"
latency_us = 0.5
overhead_us = 0.1
dedicated_gbytes_per_s = 4.0

[[lane]]
transport = "tcp"
latency_us = 10.0
dedicated_gbytes_per_s = 1.0

[model]
reduce_ns_per_byte = 0.5

[[rule]]
coll = "bcast"
algo = "scatter_allgather"
max_procs = 2
max_bytes = 1024

[[point]]
coll = "bcast"
algo = "knomial"
radix = 2
procs = 2
ppn = 2
bytes = 8
measured_us = 1.0

[[point]]
coll = "allreduce"
algo = "ring"
procs = 4
ppn = 4
bytes = 1048576
measured_us = 900.0

[[point]]
coll = "alltoall"
algo = "pairwise"
procs = 2
ppn = 2
bytes = 65536
measured_us = 30.0
"#;

#[test]
fn check_prints_a_row_per_measured_cell() {
    let dir = Dir::new("check");
    let file = dir.0.join("hand.toml");
    std::fs::write(&file, HAND).unwrap();
    let out = weft(&["tune", "--check", file.to_str().unwrap(), "--json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = json(&out.stdout);
    assert_eq!(v.len(), 6, "3 rows and 3 summaries: {v:?}");
    for (i, (coll, measured)) in [("bcast", 1.0), ("allreduce", 900.0), ("alltoall", 30.0)]
        .iter()
        .enumerate()
    {
        assert_eq!(v[i]["coll"], *coll);
        assert_eq!(v[i]["measured_us"].as_f64(), Some(*measured));
        let p = v[i]["predicted_us"].as_f64().unwrap();
        assert!(p > 0.0, "{}", v[i]);
        let e = v[i]["error_pct"].as_f64().unwrap();
        assert!((e - (p - measured) / measured * 100.0).abs() < 1e-6);
    }
    // The model is fed with the file's figures: a slower shm lane predicts more.
    let slow = dir.0.join("slow.toml");
    std::fs::write(
        &slow,
        HAND.replace(
            "dedicated_gbytes_per_s = 4.0",
            "dedicated_gbytes_per_s = 0.5",
        ),
    )
    .unwrap();
    let w = json(&weft(&["tune", "--check", slow.to_str().unwrap(), "--json"], &[]).stdout);
    let big = |v: &[serde_json::Value]| v[1]["predicted_us"].as_f64().unwrap();
    assert!(big(&w) > big(&v) * 2.0, "{} vs {}", big(&w), big(&v));
    // Per collective: the error from 64 KiB counts only those cells.
    assert_eq!(v[3]["coll"], "bcast");
    assert_eq!(v[3]["cells_from_64k"], 0);
    assert!(v[3]["mape_from_64k_pct"].is_null());
    assert_eq!(v[4]["cells_from_64k"], 1);
    // The table form says the same.
    let t = weft(&["tune", "--check", file.to_str().unwrap()], &[]);
    assert!(t.status.success());
    let table = text(&t.stdout);
    assert!(
        table.contains("predicted_us") && table.contains("mape>=64KiB"),
        "{table}"
    );
    assert!(table
        .lines()
        .any(|l| l.starts_with("alltoall ") && l.contains("pairwise")));
    // The runtime loads the same file: its rule and its lanes.
    let x = json(
        &weft_with_file(
            &[
                "info",
                "--explain",
                "bcast",
                "--np",
                "2",
                "--bytes",
                "64",
                "--json",
            ],
            &file,
        )
        .stdout,
    )
    .remove(0);
    assert_eq!(
        (x["choice"].as_str(), x["source"].as_str()),
        (Some("scatter_allgather"), Some("tuning file"))
    );
    let info = text(&weft_with_file(&["info", "--transports"], &file).stdout);
    assert!(
        info.contains(&format!("tuning file {}", file.display())),
        "{info}"
    );
}

#[test]
fn bad_files_are_refused_naming_the_line() {
    let dir = Dir::new("bad");
    let file = dir.0.join("bad.toml");
    let cases: &[(&str, &str, &[&str])] = &[
        // (replace, with, the message must hold)
        (
            "overhead_us = 0.1",
            "overhead_us = 0.1\nspeed = 3",
            &["line 9", "unknown field `speed`"],
        ),
        (
            "latency_us = 10.0",
            "latency_us = -10.0",
            &["line 13", "latency_us", "at least 0"],
        ),
        (
            "latency_us = 0.5",
            "latency_us = \"fast\"",
            &["line 7", "latency_us"],
        ),
        ("[model]", "[modle]", &["line 16", "unknown field `modle`"]),
        (
            "cores = 2",
            "cores = 2\ncolor = \"red\"",
            &["line 4", "unknown field `color`"],
        ),
        (
            "algo = \"scatter_allgather\"",
            "algo = \"magic\"",
            &["line 21", "magic"],
        ),
        (
            "measured_us = 30.0",
            "measured_us = -1.0",
            &["line 48", "measured_us"],
        ),
    ];
    for (from, to, want) in cases {
        assert!(HAND.contains(from), "{from}");
        std::fs::write(&file, HAND.replacen(from, to, 1)).unwrap();
        for args in [
            vec!["info", "--transports"],
            vec!["info", "--explain", "bcast"],
        ] {
            let o = weft_with_file(&args, &file);
            assert!(!o.status.success(), "{args:?} accepted {to:?}");
            let e = text(&o.stderr);
            assert!(
                e.contains(&format!("WEFT_TUNING_FILE={}", file.display())),
                "{e}"
            );
            for w in *want {
                assert!(e.contains(w), "{to:?}: {e} lacks {w:?}");
            }
        }
        let o = weft(&["tune", "--check", file.to_str().unwrap()], &[]);
        assert_eq!(o.status.code(), Some(2));
        assert!(text(&o.stderr).contains(want[0]), "{}", text(&o.stderr));
    }
}

#[test]
fn bad_arguments_are_clear_errors() {
    let dir = Dir::new("args");
    let cases: &[(&[&str], &str)] = &[
        (&["tune", "--np", "0"], "--np 0"),
        (&["tune", "--np", "2,1"], "--np 1"),
        (&["tune", "--colls", "bcast,nope"], "--colls nope"),
        (&["tune", "--iters", "0"], "--iters 0"),
        (&["tune", "--rounds", "0"], "--rounds 0"),
        (&["tune", "--margin", "100"], "--margin 100"),
        (&["tune", "--margin", "-5"], "--margin -5"),
        (&["tune", "--sizes", "8,x"], "--sizes"),
        (
            &["tune", "--out", "/nonexistent-weft-dir/t.toml"],
            "cannot write",
        ),
        (
            &["tune", "--check", "/nonexistent-weft-dir/t.toml"],
            "/nonexistent-weft-dir/t.toml",
        ),
        (
            &["tune", "--check", "x.toml", "--quick"],
            "cannot be used with",
        ),
    ];
    for (args, want) in cases {
        let o = Command::new(WEFT)
            .args(*args)
            .current_dir(&dir.0)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(want),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    // A file without measurements cannot be checked.
    let f = dir.0.join("rules.toml");
    std::fs::write(&f, "[[rule]]\ncoll = \"bcast\"\nalgo = \"knomial\"\n").unwrap();
    let o = weft(&["tune", "--check", f.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no [[point]]"),
        "{}",
        text(&o.stderr)
    );
    // Nothing was measured or written for the bad arguments.
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 1);
}
