//! Lane scoring (ALGORITHMS.md §5): which transports carry traffic to a peer, as a pure
//! function of what each transport declares about itself and where the peer is (TCP over
//! loopback declares itself a same-node lane, and a network one).
//!
//! A lane is one way to reach a peer (shared memory, TCP over one interface, ...). Its score
//! is the effective bandwidth of a 256 KiB transfer, `size / time` with
//! `time = latency + overhead + registration_ns_per_byte·size + size / b` and the per-process
//! bandwidth `b = dedicated + shared / ppn` (a NIC is shared by the node's processes, a memory
//! copy mostly is not). Same-node peers use the node's memory (lanes that are not a
//! network's) only, unless the allowed transports exclude them (forcing TCP for a
//! comparison); other peers use network lanes. The figures are data: each transport
//! reports its own (`weft-transport`), this module only scores them.
//! Small messages take the lane with the lowest fixed cost; messages of at least
//! `stripe_threshold_bytes` are striped over up to `max_rails` lanes whose bandwidth is at
//! least a quarter of the best, lanes known to sit on another NUMA node than the process
//! after the others. No I/O, deterministic: every rank computes the same choice.

use weft_core::{Error, ErrorKind, Result};

pub mod rendezvous;

/// Size at which lanes are scored (seed 000).
pub const SCORE_BYTES: u64 = 256 * 1024;

/// The transport behind a lane, by the name it has in `WEFT_TRANSPORTS` (the transports
/// themselves are registered in `weft-transport`; the model only compares names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransportKind(pub &'static str);

impl TransportKind {
    /// Shared memory.
    pub const SHM: TransportKind = TransportKind("shm");
    /// Cross Memory Attach (single copy between the processes of a node).
    pub const CMA: TransportKind = TransportKind("cma");
    /// weft's TCP protocol.
    pub const TCP: TransportKind = TransportKind("tcp");
    /// UCX.
    pub const UCX: TransportKind = TransportKind("ucx");

    /// The name used in `WEFT_TRANSPORTS`.
    pub fn name(self) -> &'static str {
        self.0
    }
}

/// Which peers a lane reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Only processes on the same node.
    SameNode,
    /// Any process (including the same node, e.g. TCP over loopback).
    AnyNode,
}

/// What a transport declares about one of its lanes.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneDesc {
    /// Printable name (`shm`, `tcp:eth0`, ...).
    pub name: String,
    /// The transport that drives it.
    pub transport: TransportKind,
    /// One-way latency of a small message.
    pub latency_ns: f64,
    /// Fixed software cost per message (including registration setup).
    pub overhead_ns: f64,
    /// Cost per byte beyond the bandwidth term (registration, extra copies).
    pub registration_ns_per_byte: f64,
    /// Bandwidth each process gets whatever the others do.
    pub dedicated_bytes_per_s: f64,
    /// Bandwidth shared by all processes of the node.
    pub shared_bytes_per_s: f64,
    /// Which peers it reaches.
    pub reach: Reach,
    /// Whether it is a network transport's lane (a NIC, or loopback through the kernel)
    /// rather than the node's own memory.
    pub network: bool,
    /// Whether large messages move with one copy.
    pub single_copy: bool,
    /// Whether the device is on this process's NUMA node (None: unknown).
    pub numa_near: Option<bool>,
}

/// Where the peer is, as far as lane choice cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerKind {
    /// True when the peer runs on the same node.
    pub same_node: bool,
    /// Processes of the job on this node (they share the node's NICs).
    pub ppn: u32,
}

/// The job's policy knobs for lane choice.
#[derive(Clone, Debug, PartialEq)]
pub struct LanePolicy {
    /// Transports allowed (`WEFT_TRANSPORTS`).
    pub allowed: Vec<TransportKind>,
    /// Most lanes a large message is striped over (`WEFT_MAX_RAILS`, at least 1).
    pub max_rails: u32,
    /// Messages of at least this size are striped.
    pub stripe_threshold_bytes: u64,
}

/// One candidate lane with its score.
#[derive(Clone, Debug, PartialEq)]
pub struct Scored {
    /// Index into the lanes given to [`choose`].
    pub lane: usize,
    /// Per-process bandwidth `dedicated + shared / ppn`.
    pub bandwidth_bytes_per_s: f64,
    /// Effective bandwidth of a [`SCORE_BYTES`] transfer (higher is better).
    pub score_bytes_per_s: f64,
    /// Why the lane is not used, when it is not eligible.
    pub excluded: Option<String>,
}

/// The lanes chosen for one kind of peer.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// Every lane given, scored, with the reason for each exclusion.
    pub candidates: Vec<Scored>,
    /// The lane for messages below the stripe threshold (lowest fixed cost).
    pub small: usize,
    /// The lanes large messages are striped over, best first (at least one).
    pub large: Vec<usize>,
    /// Messages of at least this size use `large`.
    pub stripe_threshold_bytes: u64,
}

/// Scores `lane` for a process sharing its node with `ppn` processes.
pub fn score(lane: &LaneDesc, ppn: u32) -> (f64, f64) {
    let bw = lane.dedicated_bytes_per_s + lane.shared_bytes_per_s / ppn.max(1) as f64;
    let size = SCORE_BYTES as f64;
    let time_ns = lane.latency_ns
        + lane.overhead_ns
        + lane.registration_ns_per_byte * size
        + if bw > 0.0 {
            size / bw * 1e9
        } else {
            f64::INFINITY
        };
    (bw, size / time_ns * 1e9)
}

/// Chooses the lanes to `peer` among `lanes` under `policy`.
pub fn choose(lanes: &[LaneDesc], peer: PeerKind, policy: &LanePolicy) -> Result<Choice> {
    if policy.max_rails == 0 {
        return Err(Error::new(
            ErrorKind::Config,
            "WEFT_MAX_RAILS=0: at least one lane is needed",
        ));
    }
    let allowed = |l: &LaneDesc| policy.allowed.contains(&l.transport);
    let reachable = |l: &LaneDesc| peer.same_node || l.reach == Reach::AnyNode;
    // Same-node traffic stays in the node's memory whenever a lane of it is allowed: through
    // a NIC it would halve the NIC's bandwidth for the real network traffic (seed 000), and
    // through loopback it pays two kernel crossings per message.
    let local_lane_exists = peer.same_node && lanes.iter().any(|l| allowed(l) && !l.network);
    let mut candidates: Vec<Scored> = lanes
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let (bw, s) = score(l, peer.ppn);
            let excluded = if !allowed(l) {
                Some(format!("{} not in WEFT_TRANSPORTS", l.transport.name()))
            } else if !reachable(l) {
                Some("reaches only the same node".to_string())
            } else if local_lane_exists && l.network {
                Some("same-node peer: the node's shared memory is used".to_string())
            } else if s.is_nan() || s <= 0.0 {
                Some("no bandwidth".to_string())
            } else {
                None
            };
            Scored {
                lane: i,
                bandwidth_bytes_per_s: bw,
                score_bytes_per_s: s,
                excluded,
            }
        })
        .collect();
    let eligible: Vec<&Scored> = candidates.iter().filter(|c| c.excluded.is_none()).collect();
    let Some(best_bw) = eligible
        .iter()
        .map(|c| c.bandwidth_bytes_per_s)
        .max_by(f64::total_cmp)
    else {
        let names: Vec<&str> = policy.allowed.iter().map(|t| t.name()).collect();
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "no lane reaches a peer on {} node with WEFT_TRANSPORTS={}",
                if peer.same_node {
                    "the same"
                } else {
                    "another"
                },
                names.join(",")
            ),
        ));
    };
    let fixed = |c: &Scored| lanes[c.lane].latency_ns + lanes[c.lane].overhead_ns;
    let small = eligible
        .iter()
        .min_by(|a, b| fixed(a).total_cmp(&fixed(b)).then(a.lane.cmp(&b.lane)))
        .expect("eligible is not empty")
        .lane;
    let mut wide: Vec<&Scored> = eligible
        .iter()
        .copied()
        .filter(|c| c.bandwidth_bytes_per_s * 4.0 >= best_bw)
        .collect();
    let far = |c: &Scored| lanes[c.lane].numa_near == Some(false);
    wide.sort_by(|a, b| {
        far(a)
            .cmp(&far(b))
            .then(b.score_bytes_per_s.total_cmp(&a.score_bytes_per_s))
            .then(a.lane.cmp(&b.lane))
    });
    // Rails are several devices of one transport (the best one's): striping shared memory
    // with loopback TCP would only add a slower copy path.
    let best_transport = lanes[wide[0].lane].transport;
    let large: Vec<usize> = wide
        .iter()
        .filter(|c| lanes[c.lane].transport == best_transport)
        .take(policy.max_rails as usize)
        .map(|c| c.lane)
        .collect();
    for c in &mut candidates {
        if c.excluded.is_none() && c.lane != small && !large.contains(&c.lane) {
            c.excluded = Some(if c.bandwidth_bytes_per_s * 4.0 < best_bw {
                "below a quarter of the best bandwidth".to_string()
            } else if lanes[c.lane].transport != best_transport {
                format!(
                    "rails stay on the best transport ({})",
                    best_transport.name()
                )
            } else {
                format!("beyond WEFT_MAX_RAILS={}", policy.max_rails)
            });
        }
    }
    Ok(Choice {
        candidates,
        small,
        large,
        stripe_threshold_bytes: policy.stripe_threshold_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shm() -> LaneDesc {
        LaneDesc {
            name: "shm".into(),
            transport: TransportKind::SHM,
            latency_ns: 300.0,
            overhead_ns: 100.0,
            registration_ns_per_byte: 0.0,
            dedicated_bytes_per_s: 8e9,
            shared_bytes_per_s: 0.0,
            reach: Reach::SameNode,
            network: false,
            single_copy: true,
            numa_near: None,
        }
    }

    fn tcp(name: &str, gbit: f64, near: Option<bool>) -> LaneDesc {
        LaneDesc {
            name: name.into(),
            transport: TransportKind::TCP,
            latency_ns: 20_000.0,
            overhead_ns: 2_000.0,
            registration_ns_per_byte: 0.0,
            dedicated_bytes_per_s: 0.0,
            shared_bytes_per_s: gbit * 1e9 / 8.0,
            reach: Reach::AnyNode,
            network: true,
            single_copy: false,
            numa_near: near,
        }
    }

    fn policy(allowed: &[TransportKind], rails: u32) -> LanePolicy {
        LanePolicy {
            allowed: allowed.to_vec(),
            max_rails: rails,
            stripe_threshold_bytes: 1 << 20,
        }
    }

    const BOTH: &[TransportKind] = &[TransportKind::SHM, TransportKind::TCP];

    #[test]
    fn same_node_uses_shared_memory_unless_forced() {
        let lanes = [shm(), tcp("tcp:lo", 40.0, None)];
        let peer = PeerKind {
            same_node: true,
            ppn: 4,
        };
        let c = choose(&lanes, peer, &policy(BOTH, 4)).unwrap();
        assert_eq!((c.small, c.large.clone()), (0, vec![0]));
        // Loopback TCP reaches only this node too, but it is a network lane: shared memory
        // carries same-node traffic even where loopback measured faster.
        let mut lo = tcp("tcp:lo", 0.0, None);
        lo.reach = Reach::SameNode;
        lo.dedicated_bytes_per_s = 12e9;
        let with_lo = [shm(), lo];
        let c = choose(&with_lo, peer, &policy(BOTH, 4)).unwrap();
        assert_eq!((c.small, c.large.clone()), (0, vec![0]));
        assert!(c.candidates[1]
            .excluded
            .as_deref()
            .unwrap()
            .contains("shared memory is used"));
        // Two lanes of the node's memory: rails stay on the best transport.
        let mut cma = shm();
        cma.name = "cma".into();
        cma.transport = TransportKind::CMA;
        cma.dedicated_bytes_per_s = 6e9;
        let c = choose(
            &[shm(), cma],
            peer,
            &policy(&[TransportKind::SHM, TransportKind::CMA], 4),
        )
        .unwrap();
        assert_eq!((c.small, c.large.clone()), (0, vec![0]));
        assert!(c.candidates[1]
            .excluded
            .as_deref()
            .unwrap()
            .contains("best transport"));
        let c = choose(&lanes, peer, &policy(BOTH, 4)).unwrap();
        assert!(c.candidates[1]
            .excluded
            .as_deref()
            .unwrap()
            .contains("shared memory is used"));
        let c = choose(&lanes, peer, &policy(&[TransportKind::TCP], 4)).unwrap();
        assert_eq!((c.small, c.large), (1, vec![1]));
        assert!(c.candidates[0]
            .excluded
            .as_deref()
            .unwrap()
            .contains("WEFT_TRANSPORTS"));
    }

    #[test]
    fn other_nodes_stripe_over_lanes_within_a_quarter() {
        let lanes = [
            shm(),
            tcp("tcp:eth0", 10.0, Some(false)),
            tcp("tcp:eth1", 10.0, Some(true)),
            tcp("tcp:eth2", 2.0, None),
            tcp("tcp:eth3", 10.0, None),
        ];
        let peer = PeerKind {
            same_node: false,
            ppn: 2,
        };
        let c = choose(&lanes, peer, &policy(BOTH, 4)).unwrap();
        // The NUMA-far NIC comes last; the 2 Gbit/s lane is under a quarter of 10.
        assert_eq!(c.large, vec![2, 4, 1]);
        assert!(c.candidates[0]
            .excluded
            .as_deref()
            .unwrap()
            .contains("same node"));
        assert!(c.candidates[3]
            .excluded
            .as_deref()
            .unwrap()
            .contains("quarter"));
        let c = choose(&lanes, peer, &policy(BOTH, 1)).unwrap();
        assert_eq!(c.large, vec![2]);
        assert!(c.candidates[4]
            .excluded
            .as_deref()
            .unwrap()
            .contains("MAX_RAILS=1"));
        // Lane 1 still carries small messages, so it is not excluded.
        assert!(c.candidates[1].excluded.is_none());
        assert_eq!(c.small, 1, "equal fixed costs: the first lane");
    }

    #[test]
    fn shared_bandwidth_divides_by_ppn() {
        let l = tcp("t", 8.0, None);
        let (bw1, s1) = score(&l, 1);
        let (bw4, s4) = score(&l, 4);
        assert_eq!(bw1, 1e9);
        assert_eq!(bw4, 0.25e9);
        assert!(s4 < s1);
        // A transfer of 256 KiB at 1 GB/s plus 22 us of fixed cost.
        let expect = SCORE_BYTES as f64 / (22e-6 + SCORE_BYTES as f64 / 1e9);
        assert!((s1 - expect).abs() / expect < 1e-9, "{s1} {expect}");
    }

    #[test]
    fn no_reachable_lane_is_an_error_naming_the_policy() {
        let lanes = [shm()];
        let peer = PeerKind {
            same_node: false,
            ppn: 1,
        };
        let e = choose(&lanes, peer, &policy(BOTH, 1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.message().contains("WEFT_TRANSPORTS=shm,tcp"), "{e}");
        assert!(choose(&lanes, peer, &policy(BOTH, 0)).is_err());
    }
}
