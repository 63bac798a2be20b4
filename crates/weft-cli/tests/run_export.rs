//! `weft run -x NAME[=VALUE]` through the real `weft` binary: the named variables reach every
//! rank (with the given value, or the launcher's own), on this host and on other hosts; on
//! other hosts an unexported variable of the launcher's does not. Other hosts are faked with
//! the launcher template `env -i`, which starts each host's agent here with an empty
//! environment, as after an ssh login (no root needed).

use std::process::{Command, Output, Stdio};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// Each rank prints its rank and the three test variables (`unset` when absent).
const SCRIPT: &str = "echo rank=$WEFT_RANK a=${EXPORT_TEST_A-unset} b=${EXPORT_TEST_B-unset} \
                      c=${EXPORT_TEST_C-unset}";

/// Runs `weft run ARGS /bin/sh -c SCRIPT` with the launcher's environment holding
/// EXPORT_TEST_A=launcher_a, EXPORT_TEST_B=launcher_b and EXPORT_TEST_C=launcher_c.
fn weft_run(args: &[&str]) -> Output {
    Command::new(WEFT)
        .arg("run")
        .args(args)
        .args(["/bin/sh", "-c", SCRIPT])
        .env("EXPORT_TEST_A", "launcher_a")
        .env("EXPORT_TEST_B", "launcher_b")
        .env("EXPORT_TEST_C", "launcher_c")
        .stdin(Stdio::null())
        .output()
        .expect("run weft")
}

/// The output lines sorted by rank, each as printed after `rank=R `.
fn by_rank(out: &Output, ranks: usize) -> Vec<String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let mut lines: Vec<(usize, String)> = stdout
        .lines()
        .map(|l| {
            let rest = l
                .strip_prefix("rank=")
                .unwrap_or_else(|| panic!("unexpected line {l:?}"));
            let (r, vars) = rest.split_once(' ').unwrap();
            (r.parse().unwrap(), vars.to_owned())
        })
        .collect();
    lines.sort();
    assert_eq!(
        lines.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
        (0..ranks).collect::<Vec<_>>(),
        "{stdout}{stderr}"
    );
    lines.into_iter().map(|(_, v)| v).collect()
}

#[test]
fn exported_variables_reach_local_ranks_and_a_value_given_wins() {
    let out = weft_run(&[
        "-n",
        "2",
        "-x",
        "EXPORT_TEST_A=given",
        "-x",
        "EXPORT_TEST_B",
    ]);
    for vars in by_rank(&out, 2) {
        // Ranks on the launcher's host inherit its environment; -x NAME=VALUE overrides it.
        assert_eq!(vars, "a=given b=launcher_b c=launcher_c");
    }
}

#[test]
fn other_hosts_get_exported_variables_only() {
    let out = weft_run(&[
        "--hosts",
        "xa:1,xb:2",
        "--launcher",
        "env -i",
        "-x",
        "EXPORT_TEST_A=given",
        "--export",
        "EXPORT_TEST_B",
    ]);
    for vars in by_rank(&out, 3) {
        assert_eq!(vars, "a=given b=launcher_b c=unset");
    }
    // Without -x nothing of the three arrives.
    let out = weft_run(&["--hosts", "xa:1,xb:1", "--launcher", "env -i"]);
    for vars in by_rank(&out, 2) {
        assert_eq!(vars, "a=unset b=unset c=unset");
    }
}

#[test]
fn exporting_an_unset_variable_is_a_usage_error() {
    let out = Command::new(WEFT)
        .args(["run", "-n", "1", "-x", "EXPORT_TEST_NOWHERE", "/bin/true"])
        .env_remove("EXPORT_TEST_NOWHERE")
        .stdin(Stdio::null())
        .output()
        .expect("run weft");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("-x EXPORT_TEST_NOWHERE: not set in this environment"),
        "{err}"
    );
}
