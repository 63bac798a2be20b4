//! `weft info --transports`: every registered transport and whether it is offered here (and
//! why not), every lane of the offered ones with its capabilities, its cost figures and where
//! they came from (a probe, a lane file, what the machine reports, the transport's
//! defaults), and the score of each lane for a peer on the same node and for a peer on
//! another node with the lanes chosen (the same pure function, `weft_model::lanes::choose`,
//! that the runtime uses at init).

use weft::{CmaMode, Config};
use weft_model::lanes::{choose, rendezvous, Choice, LaneDesc, PeerKind, TransportKind};
use weft_transport::transport::{Lane, Reach};

/// Prints the lane table for `ppn` processes per node (default 1). Returns the exit code.
pub(crate) fn run(config: &Config, ppn: Option<u32>) -> i32 {
    match render(config, ppn.unwrap_or(1)) {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err(e) => {
            eprintln!("weft info --transports: {e}");
            2
        }
    }
}

/// The table `run` prints.
pub(crate) fn render(config: &Config, ppn: u32) -> weft::Result<String> {
    let mut out = String::from("transports:\n");
    for t in weft::lanes::transports(config) {
        let state = match (&t.offered, t.allowed) {
            (Err(why), _) => format!("NOT OFFERED: {why}"),
            (Ok(()), true) => "offered".to_string(),
            (Ok(()), false) => "offered, not in WEFT_TRANSPORTS".to_string(),
        };
        out.push_str(&format!("  {:<4} {state} ({})\n", t.name, t.summary));
    }
    let lanes = weft::lanes::candidates(config, true)?;
    out.push_str(&lane_list(&lanes));
    let descs: Vec<LaneDesc> = lanes.iter().map(weft::lanes::to_model).collect();
    let policy = weft::lane_policy(config);
    let allowed: Vec<&str> = policy.allowed.iter().map(|t| t.name()).collect();
    out.push_str(&format!(
        "lanes scored as effective bandwidth of a 256 KiB transfer (ppn {ppn}, WEFT_TRANSPORTS={}, WEFT_MAX_RAILS={}, striping from {} bytes)\n",
        allowed.join(","),
        policy.max_rails,
        policy.stripe_threshold_bytes
    ));
    for (same_node, title) in [
        (true, "peer on the same node"),
        (false, "peer on another node"),
    ] {
        out.push_str(&format!("{title}:\n"));
        match choose(&descs, PeerKind { same_node, ppn }, &policy) {
            Ok(choice) => out.push_str(&table(&lanes, &descs, &choice)),
            Err(e) => out.push_str(&format!("  no lane: {e}\n")),
        }
    }
    out.push_str(&rendezvous(config, ppn, &descs)?);
    Ok(out)
}

/// The same-node rendezvous thresholds a rank chooses at start-up (from the figures it uses:
/// the transports' own or the lane file's), and what the probed figures above would give.
fn rendezvous(config: &Config, ppn: u32, probed: &[LaneDesc]) -> weft::Result<String> {
    let mut s = format!("same-node rendezvous, {ppn} ranks per node (lane model; WEFT_SHM_CMA_MIN_BYTES and WEFT_SHM_COOP_BYTES override it):\n");
    let r = weft::shm_rendezvous(config, ppn, true)?;
    s.push_str(&format!(
        "  chosen at start-up: single copy from {}\n                      both sides copy from {}\n",
        r.single_copy_why, r.split_why
    ));
    let find = |t| probed.iter().find(|l| l.transport == t);
    if let Some(ring) = find(TransportKind::SHM) {
        let single = find(TransportKind::CMA).filter(|_| config.cma != CmaMode::Off);
        let p = rendezvous::choose_rendezvous(
            ring,
            single,
            ppn,
            config.shm_cma_min_bytes.map(|n| n as u64),
            config.shm_coop_bytes.map(|n| n as u64),
        );
        s.push_str(&format!(
            "  with the probed figures: single copy from {}\n                           both sides copy from {}\n",
            p.single_copy_why, p.split_why
        ));
    }
    Ok(s)
}

fn bytes(n: usize) -> String {
    match n {
        0 => "-".into(),
        n if n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n % 1024 == 0 => format!("{}K", n >> 10),
        n => n.to_string(),
    }
}

/// Each lane's capabilities and figures, and where the figures came from.
fn lane_list(lanes: &[Lane]) -> String {
    let mut s = format!(
        "lanes (capabilities; cost figures and where they came from):\n  {:<28} {:<5} {:>6} {:>6}  {:<17} {:>9} {:>9} {:>10} {:>10}  {}\n",
        "lane", "reach", "eager", "piece", "copies/rma/atomic", "latency", "overhead", "dedicated", "shared", "figures from"
    );
    for l in lanes {
        let c = &l.caps;
        let yes = |b: bool| if b { "yes" } else { "no" };
        s.push_str(&format!(
            "  {:<28} {:<5} {:>6} {:>6}  {:<17} {:>6.2} us {:>6.2} us {:>5.2} GB/s {:>5.2} GB/s  {}\n",
            l.name,
            match c.reach {
                Reach::SameNode => "node",
                Reach::AnyNode => "any",
            },
            bytes(c.eager_bytes),
            c.rendezvous_piece_bytes.map_or("whole".into(), bytes),
            format!(
                "{}/{}/{}",
                if c.single_copy { "1" } else { "2" },
                yes(c.rma),
                yes(c.atomics)
            ),
            l.costs.latency_ns / 1e3,
            l.costs.overhead_ns / 1e3,
            l.costs.dedicated_bytes_per_s / 1e9,
            l.costs.shared_bytes_per_s / 1e9,
            l.origin.label()
        ));
    }
    s
}

fn table(lanes: &[Lane], descs: &[LaneDesc], c: &Choice) -> String {
    let mut s = format!(
        "  {:<28} {:>10} {:>12} {:>12}  {}\n",
        "lane", "latency", "bw/process", "score", "use"
    );
    for cand in &c.candidates {
        let l = &descs[cand.lane];
        let mut uses = Vec::new();
        if cand.lane == c.small {
            uses.push("small messages".to_string());
        }
        if let Some(pos) = c.large.iter().position(|&x| x == cand.lane) {
            uses.push(format!("large rail {}", pos + 1));
        }
        let used = match (&cand.excluded, uses.is_empty()) {
            (Some(why), _) => format!("not used: {why}"),
            (None, false) => format!("CHOSEN: {}", uses.join(", ")),
            (None, true) => "eligible".to_string(),
        };
        s.push_str(&format!(
            "  {:<28} {:>7.1} us {:>7.2} GB/s {:>7.2} GB/s  {} [figures: {}]\n",
            l.name,
            l.latency_ns / 1e3,
            cand.bandwidth_bytes_per_s / 1e9,
            cand.score_bytes_per_s / 1e9,
            used,
            lanes[cand.lane].origin.label()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_node_chooses_shm_and_forced_tcp_chooses_tcp() {
        let c = Config::from_vars(&[]).unwrap();
        let text = render(&c, 2).unwrap();
        let same = text.split("peer on another node").next().unwrap();
        let same = same.split("peer on the same node").nth(1).unwrap();
        assert!(
            same.lines()
                .any(|l| l.trim_start().starts_with("shm") && l.contains("CHOSEN")),
            "{text}"
        );
        let c = Config::from_vars(&[("WEFT_TRANSPORTS", "tcp")]).unwrap();
        let text = render(&c, 2).unwrap();
        let same = text.split("peer on another node").next().unwrap();
        let same = same.split("peer on the same node").nth(1).unwrap();
        assert!(
            same.lines()
                .any(|l| l.trim_start().starts_with("tcp") && l.contains("CHOSEN")),
            "{text}"
        );
        assert!(same.contains("not in WEFT_TRANSPORTS"), "{text}");
    }

    #[test]
    fn every_lane_says_where_its_figures_came_from() {
        let c = Config::from_vars(&[]).unwrap();
        let text = render(&c, 1).unwrap();
        // The probes ran: shared memory's copy bandwidth at least.
        let shm = text
            .lines()
            .find(|l| l.trim_start().starts_with("shm ") && l.contains("GB/s"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(shm.contains("probe (memory copy bandwidth"), "{text}");
        assert!(
            text.contains("  ucx "),
            "ucx is listed whether offered or not: {text}"
        );
        let dir = std::env::temp_dir().join(format!("weft-lanes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("lanes.toml");
        std::fs::write(&file, "[[lane]]\ntransport = \"shm\"\nlatency_us = 0.25\n").unwrap();
        let path = file.to_string_lossy().into_owned();
        let c = Config::from_vars(&[("WEFT_LANE_FILE", &path)]).unwrap();
        let text = render(&c, 1).unwrap();
        let shm = text
            .lines()
            .find(|l| l.trim_start().starts_with("shm ") && l.contains("GB/s"))
            .unwrap();
        assert!(shm.contains(&format!("tuning file {path}")), "{text}");
        assert!(shm.contains("0.25 us"), "{text}");
        std::fs::write(&file, "[[lane]]\ntransport = \"ib\"\n").unwrap();
        let c = Config::from_vars(&[("WEFT_LANE_FILE", &path)]).unwrap();
        let e = render(&c, 1).unwrap_err();
        assert!(e.message().contains("unknown transport \"ib\""), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
