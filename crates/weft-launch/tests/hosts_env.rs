//! What reaches ranks on other hosts: the job's named variables (`weft run -x`) and the
//! launcher's `WEFT_*` knobs, nothing else of the launcher's environment, and neither the
//! launcher's own rank identity nor its secret. Runs over two network-namespace hosts from
//! scripts/testhosts.sh with the template `env -i ip netns exec {host}`, so the agents start
//! with an empty environment as after an ssh login (plain `ip netns exec` would pass the
//! launcher's environment on and prove nothing).
//!
//! Needs root and iproute2 (skips saying why otherwise) and the `weft` binary built next to
//! this test (it is the agent the hosts run; `cargo test --workspace` builds it).

use std::path::PathBuf;
use std::process::Command;
use weft_launch::{run_job, HostSlots, HostsSpec, JobSpec, MapBy, OutputMode};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/testhosts.sh")
}

/// The `weft` binary of this build: target/<profile>/weft, next to target/<profile>/deps.
fn weft_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("weft");
    bin.is_file().then_some(bin)
}

struct Hosts(Vec<String>);

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("down")
            .args(&self.0)
            .status();
    }
}

#[test]
fn remote_ranks_get_named_variables_and_knobs_only() {
    let Some(weft) = weft_binary() else {
        eprintln!("skipping: no weft binary next to this test (cargo build -p weft-cli)");
        return;
    };
    let pid = std::process::id();
    let names: Vec<String> = (0..2)
        .map(|i| format!("wl{:05}e{i}", pid % 100_000))
        .collect();
    let net = format!("10.{}.201", 100 + pid % 150);
    let out = Command::new("bash")
        .arg(script())
        .args(["up", "--net", &net])
        .args(&names)
        .output()
        .expect("run scripts/testhosts.sh");
    if out.status.code() == Some(77) {
        eprintln!("skipping: {}", String::from_utf8_lossy(&out.stderr).trim());
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hosts = Hosts(names);
    // This test binary's only test: changing the process environment races with nothing.
    std::env::set_var("WEFT_SHM_EAGER_BYTES", "8K");
    std::env::set_var("WEFT_RANK", "99");
    std::env::set_var("WEFT_JOB_SECRET", "00112233445566778899aabbccddeeff");
    std::env::set_var("WEFT_TEST_LAUNCHER_ONLY", "x");
    std::env::set_var("NOT_A_KNOB", "launcher");
    let mut spec = JobSpec::new(2, "/bin/sh");
    spec.args = vec![
        "-c".into(),
        "echo \"$WEFT_RANK|$WEFT_SHM_EAGER_BYTES|$OMP_NUM_THREADS|${NOT_A_KNOB-unset}|$WEFT_TEST_LAUNCHER_ONLY|$WEFT_JOB_SECRET|$WEFT_NODE_ID\"".into(),
    ];
    spec.env = vec![("OMP_NUM_THREADS".into(), "3".into())];
    spec.output = OutputMode::Capture;
    spec.timeout = Some(std::time::Duration::from_secs(600)); // a hang catcher
    spec.hosts = Some(HostsSpec {
        hosts: hosts
            .0
            .iter()
            .map(|n| HostSlots {
                name: n.clone(),
                slots: 1,
            })
            .collect(),
        map_by: MapBy::Slot,
        launcher: "env -i ip netns exec {host}".into(),
        boot_addr: Some(format!("{net}.1")),
        agent_program: weft,
    });
    let outcome = run_job(&spec).unwrap();
    assert_eq!(
        outcome.exit_code,
        0,
        "{}",
        String::from_utf8_lossy(&outcome.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&outcome.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let expect: Vec<String> = (0..2)
        .map(|r| {
            // The agent hands each rank the job's own secret, not the launcher's.
            let secret = lines[r].split('|').nth(5).unwrap_or_default().to_owned();
            assert!(
                secret.len() >= 32 && !secret.starts_with("0011223344"),
                "rank {r}: secret {secret:?}"
            );
            format!("{r}|8K|3|unset|x|{secret}|{}", hosts.0[r])
        })
        .collect();
    assert_eq!(lines, expect);
}
