//! `weft info --transports`: every candidate lane of this machine with its score, for a peer
//! on the same node and for a peer on another node, and the lanes chosen (the same pure
//! function, `weft_model::lanes::choose`, that the runtime uses at init).

use weft::config::Config;
use weft_model::lanes::{choose, Choice, LaneDesc, PeerKind};

/// Prints the lane table for `ppn` processes per node (default 1). Returns the exit code.
pub fn run(config: &Config, ppn: Option<u32>) -> i32 {
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
pub fn render(config: &Config, ppn: u32) -> weft::Result<String> {
    let lanes = weft::lane_candidates(config)?;
    let policy = weft::lane_policy(config);
    let allowed: Vec<&str> = policy.allowed.iter().map(|t| t.name()).collect();
    let mut out = format!(
        "lanes scored as effective bandwidth of a 256 KiB transfer (ppn {ppn}, WEFT_TRANSPORTS={}, WEFT_MAX_RAILS={}, striping from {} bytes)\n",
        allowed.join(","),
        policy.max_rails,
        policy.stripe_threshold_bytes
    );
    for (same_node, title) in [
        (true, "peer on the same node"),
        (false, "peer on another node"),
    ] {
        out.push_str(&format!("{title}:\n"));
        match choose(&lanes, PeerKind { same_node, ppn }, &policy) {
            Ok(choice) => out.push_str(&table(&lanes, &choice)),
            Err(e) => out.push_str(&format!("  no lane: {e}\n")),
        }
    }
    Ok(out)
}

fn table(lanes: &[LaneDesc], c: &Choice) -> String {
    let mut s = format!(
        "  {:<28} {:>10} {:>12} {:>12}  {}\n",
        "lane", "latency", "bw/process", "score", "use"
    );
    for cand in &c.candidates {
        let l = &lanes[cand.lane];
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
            "  {:<28} {:>7.1} us {:>7.2} GB/s {:>7.2} GB/s  {}\n",
            l.name,
            l.latency_ns / 1e3,
            cand.bandwidth_bytes_per_s / 1e9,
            cand.score_bytes_per_s / 1e9,
            used
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
        assert!(
            same.lines()
                .any(|l| l.trim_start().starts_with("shm") && l.contains("CHOSEN")),
            "{text}"
        );
        let c = Config::from_vars(&[("WEFT_TRANSPORTS", "tcp")]).unwrap();
        let text = render(&c, 2).unwrap();
        let same = text.split("peer on another node").next().unwrap();
        assert!(
            same.lines()
                .any(|l| l.trim_start().starts_with("tcp") && l.contains("CHOSEN")),
            "{text}"
        );
        assert!(same.contains("not in WEFT_TRANSPORTS"), "{text}");
    }
}
