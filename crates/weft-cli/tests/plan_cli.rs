//! `weft plan` end to end: JSON field names, files written, and bad input (one clear line,
//! exit code 2, no panic).

use std::process::Output;

mod common;

fn weft(args: &[&str]) -> Output {
    common::subcommand("plan", args)
}

fn json(args: &[&str]) -> serde_json::Value {
    common::subcommand_json("plan", args)
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-plan-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const SUNWAY: &str = "fat-tree:leaves=32,spines=16,endpoints-per-leaf=16,ports-per-node=2";

#[test]
fn links_json_fields() {
    let v = json(&[
        "links", "--fabric", SUNWAY, "--procs", "64", "--tree", "hier:4", "--json",
    ]);
    for key in [
        "height",
        "radius",
        "inter_group_packets",
        "max_link_packets",
        "max_link",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    // 64 ranks on 4 leaves and 32 nodes: hierarchical tree crosses 3 leaf and 31 node
    // boundaries.
    assert_eq!(v["inter_group_packets"]["switch"], 3);
    assert_eq!(v["inter_group_packets"]["node"], 31);
}

#[test]
fn alloc_json_fields_and_csv() {
    let csv = tmp("alloc.csv");
    let v = json(&[
        "alloc",
        "--fabric",
        SUNWAY,
        "--pattern",
        "grid2d:32x16",
        "--entries",
        "16",
        "--method",
        "physical",
        "--json",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    for key in [
        "communicators",
        "failures",
        "failure_rate",
        "entries_used",
        "peak_entries",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    // 32 rows + 16 columns.
    assert_eq!(v["communicators"], 48);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("method,communicators,failures"));
    let m = json(&[
        "alloc",
        "--fabric",
        SUNWAY,
        "--pattern",
        "grid2d:32x16",
        "--entries",
        "16",
        "--method",
        "mincost",
        "--json",
    ]);
    assert!(m["entries_used"].as_u64() < v["entries_used"].as_u64());
}

#[test]
fn type2_json_and_dot() {
    let dot = tmp("t2.dot");
    let v = json(&[
        "type2",
        "--fabric",
        SUNWAY,
        "--members",
        "0-15,40-47,100-140",
        "--degree",
        "40",
        "--json",
        "--dot",
        dot.to_str().unwrap(),
    ]);
    assert!(v["mincost_switches"].as_u64() <= v["physical_switches"].as_u64());
    assert!(v["mincost_switches"].as_u64() >= v["lower_bound"].as_u64());
    let text = std::fs::read_to_string(&dot).unwrap();
    assert!(text.starts_with("digraph type2"));
    assert!(text.contains("penwidth"));
}

#[test]
fn fabric_from_file() {
    let path = tmp("f.toml");
    std::fs::write(
        &path,
        "switches = [{ name = \"a\" }, { name = \"b\" }]\nlinks = [[\"a\", \"b\"]]\nendpoints = [{ name = \"x\", switch = \"a\" }, { name = \"y\", switch = \"b\" }]\n",
    )
    .unwrap();
    let v = json(&["fabric", "--fabric", path.to_str().unwrap(), "--json"]);
    assert_eq!(v["switches"], 2);
    assert_eq!(v["endpoints"], 2);
}

fn bad(args: &[&str], word: &str) {
    let out = weft(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(err.contains(word), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    bad(
        &["fabric", "--fabric", "fat-tree:leaves=4,spines=2"],
        "endpoints-per-leaf",
    );
    bad(
        &[
            "fabric",
            "--fabric",
            "fat-tree:leaves=4,spines=two,endpoints-per-leaf=2",
        ],
        "spines",
    );
    bad(&["fabric", "--fabric", "torus:dims=4x0"], "dims");
    bad(&["fabric", "--fabric", "hypercube:n=3"], "hypercube");
    bad(
        &[
            "fabric",
            "--fabric",
            "fat-tree:leaves=4,spines=4,endpoints-per-leaf=2,uplinks-per-leaf=1",
        ],
        "disconnected",
    );
    bad(
        &["fabric", "--fabric", "torus:dims=4", "--faulty", "r1,r3"],
        "disconnected",
    );
    bad(
        &["fabric", "--fabric", "torus:dims=4", "--faulty", "r9"],
        "faulty",
    );
    bad(
        &[
            "links", "--fabric", SUNWAY, "--procs", "513", "--tree", "kary:2",
        ],
        "procs",
    );
    bad(
        &[
            "links", "--fabric", SUNWAY, "--procs", "8", "--tree", "kary:1",
        ],
        "below 2",
    );
    bad(
        &[
            "links", "--fabric", SUNWAY, "--procs", "8", "--tree", "kary:2", "--place", "zigzag",
        ],
        "place",
    );
    bad(
        &[
            "alloc",
            "--fabric",
            SUNWAY,
            "--pattern",
            "ring:5",
            "--entries",
            "4",
        ],
        "ring",
    );
    bad(
        &[
            "alloc",
            "--fabric",
            SUNWAY,
            "--pattern",
            "grid2d:30x30",
            "--entries",
            "4",
        ],
        "endpoints",
    );
    bad(
        &[
            "alloc",
            "--fabric",
            SUNWAY,
            "--pattern",
            "grid2d:4x4",
            "--entries",
            "4",
            "--degree",
            "1",
        ],
        "degree",
    );
    bad(
        &[
            "alloc",
            "--fabric",
            SUNWAY,
            "--pattern",
            "grid2d:4x4",
            "--entries",
            "4",
            "--method",
            "best",
        ],
        "method",
    );
    bad(
        &[
            "type2",
            "--fabric",
            SUNWAY,
            "--members",
            "0-3,x",
            "--degree",
            "4",
        ],
        "members",
    );
    bad(
        &[
            "type2",
            "--fabric",
            SUNWAY,
            "--members",
            "0-3",
            "--degree",
            "0",
        ],
        "degree",
    );
    let path = tmp("bad.toml");
    std::fs::write(
        &path,
        "switches = [{ name = \"a\" }]\nendpoints = [{ name = \"x\", switch = \"q\" }]\n",
    )
    .unwrap();
    bad(&["fabric", "--fabric", path.to_str().unwrap()], "\"q\"");
    let path = tmp("broken.json");
    std::fs::write(&path, "{\"switches\": [").unwrap();
    bad(
        &["fabric", "--fabric", path.to_str().unwrap()],
        "broken.json",
    );
    bad(&["fabric", "--fabric", "/nonexistent/f.toml"], "f.toml");
}

#[test]
fn radix_json_matches_the_paper_example() {
    let v = json(&[
        "radix", "--a-us", "1.12", "--b-us", "0.01", "--procs", "512", "--json",
    ]);
    for key in ["k_opt", "f_opt_us", "k_min", "k_max"] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert_eq!(v["k_opt"], 41);
    assert_eq!(v["k_min"], 24);
    let csv = tmp("fk.csv");
    let out = weft(&[
        "radix",
        "--a-us",
        "1.12",
        "--b-us",
        "0.01",
        "--procs",
        "64",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    // Header plus k = 2..=64.
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 64);
}

#[test]
fn radix_table_shrinks_with_size() {
    let v = json(&["radix-table", "--sizes", "8,1K,64K", "--json"]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let k: Vec<u64> = rows.iter().map(|r| r["k_opt"].as_u64().unwrap()).collect();
    assert!(k[0] > k[1] && k[1] >= k[2], "{k:?}");
}

#[test]
fn choose_picks_type2_small_type1_large() {
    let v = json(&[
        "choose", "--fabric", SUNWAY, "--procs", "512", "--sizes", "8,256K", "--json",
    ]);
    assert_eq!(v["sizes"][0]["type"], "II");
    assert_eq!(v["sizes"][1]["type"], "I");
    assert_eq!(v["crossover_bytes"], 262144);
}

#[test]
fn bad_model_input() {
    bad(
        &["radix", "--a-us", "1", "--b-us", "-1", "--procs", "8"],
        "b-us",
    );
    bad(
        &["radix", "--a-us", "1", "--b-us", "0.1", "--procs", "1"],
        "procs",
    );
    bad(&["radix-table", "--sizes", "8,12Q"], "sizes");
    bad(&["radix-table", "--theta-us", "-3"], "theta-us");
    bad(&["choose", "--fabric", SUNWAY, "--procs", "600"], "procs");
    bad(&["experiment", "frontier", "--out", "/tmp/x"], "experiment");
}

#[test]
fn map_hides_faults_of_an_exclude_file_and_random_ones() {
    // The case: 5% of a 16x16x16 torus faulty, a 12x12x12 job.
    let v = json(&[
        "map",
        "--torus",
        "16x16x16",
        "--job",
        "12x12x12",
        "--faulty-fraction",
        "0.05",
        "--seed",
        "3",
        "--json",
    ]);
    assert_eq!(v["faulty"], 205);
    assert_eq!(v["edges"], 5184);
    let nodes: Vec<u64> = v["node_of"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(nodes.len(), 1728);
    let mut distinct = nodes.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 1728, "a node used twice");
    let d = v["max_dilation"].as_u64().unwrap();
    assert!((1..=4).contains(&d), "max dilation {d}");
    // An exclude file by index and by coordinates: those nodes are never used, and a plane
    // of faults on a machine with one plane to spare is hidden without repair.
    let file = tmp("exclude.txt");
    std::fs::write(
        &file,
        "# a dead plane x=2\n2,0\n2,1\n2,2 # coordinates\n14\n",
    )
    .unwrap();
    let v = json(&[
        "map",
        "--torus",
        "4x4",
        "--job",
        "3x4",
        "--exclude",
        file.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["faulty"], 4);
    assert_eq!(v["repaired"], 0);
    assert_eq!(v["max_dilation"], 2);
    for n in v["node_of"].as_array().unwrap() {
        assert!(![2, 6, 10, 14].contains(&n.as_u64().unwrap()), "{v}");
    }
    bad(&["map", "--torus", "4x4", "--job", "5x5"], "does not fit");
    bad(
        &[
            "map",
            "--torus",
            "4x4",
            "--job",
            "4x4",
            "--faulty-fraction",
            "0.1",
        ],
        "healthy of 16",
    );
    bad(
        &["map", "--torus", "4xq", "--job", "2"],
        "expected dimensions",
    );
    std::fs::write(&file, "7,7\n").unwrap();
    bad(
        &[
            "map",
            "--torus",
            "4x4",
            "--job",
            "2",
            "--exclude",
            file.to_str().unwrap(),
        ],
        "not a node of 4x4",
    );
}

#[test]
fn map_plots_the_dilation_histogram() {
    // A 4x4 machine with node 5 faulty and a 4x3 job: one virtual node is repaired, so some
    // edges take more than one hop; the PNG is written and is a PNG.
    let file = tmp("map-exclude.txt");
    std::fs::write(&file, "5\n1,2\n").unwrap();
    let png = tmp("map.png");
    let _ = std::fs::remove_file(&png);
    let v = json(&[
        "map",
        "--torus",
        "4x4",
        "--job",
        "4x3",
        "--exclude",
        file.to_str().unwrap(),
        "--plot",
        png.to_str().unwrap(),
        "--json",
    ]);
    assert!(v["max_dilation"].as_u64().unwrap() >= 1, "{v}");
    let bytes = std::fs::read(&png).expect("--plot wrote the file");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    // Unwritable path: an I/O error (exit code 1) in one readable line naming it.
    let out = weft(&[
        "map",
        "--torus",
        "4x4",
        "--job",
        "2x2",
        "--plot",
        "/no/such/dir/map.png",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("/no/such/dir/map.png"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // A one-node job has no edges: nothing to draw, said so.
    bad(
        &[
            "map",
            "--torus",
            "4x4",
            "--job",
            "1",
            "--plot",
            png.to_str().unwrap(),
        ],
        "nothing to draw",
    );
}
