//! The multi-rail allreduce between two network-namespace hosts joined by three links:
//! forced with `WEFT_ALLREDUCE_ALGO=multi_rail` on 2 and 3 rails (`WEFT_MAX_RAILS`) at 2, 3
//! and 4 ranks (one rank per host, then two on the first host and one on the second, then
//! two on each, so the ring's steps inside a host go over shared memory), each rank checking
//! several types, operations and sizes against a serial reference (the `multi-rail` scenario
//! of `weft-itest-rank`); and forced on one rail, the clear error the algorithm's
//! restriction gives.
//!
//! Needs root and iproute2 and the `weft` binary (the hosts' agent) built next to this test
//! (`cargo build -p weft-cli`); without them the test says why and passes.

use std::path::Path;
use std::time::Duration;
use weft_itest::hosts::Hosts;
use weft_itest::jobs::{assert_no_leftovers, built_binary, describe};
use weft_launch::{run_job, HostsSpec, JobOutcome, JobSpec, MapBy, OutputMode};

const RANK: &str = env!("CARGO_BIN_EXE_weft-itest-rank");
const NETNS: &str = "ip netns exec {host}";
/// A hang catcher only.
const HANG_CATCHER: Duration = Duration::from_secs(600);

fn job(weft: &Path, h: &Hosts, np: u32, rails: u32) -> JobOutcome {
    let mut spec = JobSpec::new(np, Path::new(RANK));
    spec.args = vec!["multi-rail".into()];
    spec.env = vec![
        ("WEFT_MAX_RAILS".into(), rails.to_string()),
        ("WEFT_ALLREDUCE_ALGO".into(), "multi_rail".into()),
    ];
    spec.output = OutputMode::Capture;
    spec.tag_output = true;
    spec.timeout = Some(HANG_CATCHER);
    spec.hosts = Some(HostsSpec {
        hosts: h.slots(np.div_ceil(2)),
        map_by: MapBy::Slot,
        launcher: NETNS.into(),
        boot_addr: Some(h.root_ip()),
        agent_program: weft.to_path_buf(),
    });
    run_job(&spec).expect("launch")
}

#[test]
fn multi_rail_allreduce_on_two_and_three_rails() {
    let Some(weft) = built_binary("weft") else {
        eprintln!("skipping: no weft binary next to this test (cargo build -p weft-cli)");
        return;
    };
    let pid = std::process::id();
    let net = format!("10.{}.{}", 40 + pid % 50, 21);
    let h = match Hosts::up_with('m', 2, &net, &["--rails", "3"]) {
        Ok(h) => h,
        Err(why) => {
            eprintln!("skipping: {why}");
            return;
        }
    };
    for rails in [2, 3] {
        for np in [2, 3, 4] {
            let out = job(&weft, &h, np, rails);
            let what = format!("{rails} rails, {np} ranks");
            assert_eq!(out.exit_code, 0, "{what}: {}", describe(&out));
            assert_no_leftovers(&out.job_id);
            let said = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                said.matches("multi-rail ok").count(),
                np as usize,
                "{what}: {said}"
            );
            // Some ranks sent to the other host: their large parts went on the extra
            // rails they were pinned to.
            let striped: u64 = said
                .lines()
                .filter_map(|l| l.split("striped ").nth(1))
                .map(|n| n.trim().parse::<u64>().unwrap())
                .sum();
            assert!(
                striped > 0,
                "{what}: nothing on an extra rail\n{}",
                describe(&out)
            );
        }
    }
    // One rail: the forced algorithm is refused with its reason, on every rank.
    let out = job(&weft, &h, 2, 1);
    assert_ne!(out.exit_code, 0, "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("WEFT_ALLREDUCE_ALGO=multi_rail") && err.contains("1 network rail(s)"),
        "{}",
        describe(&out)
    );
    assert_no_leftovers(&out.job_id);
}
