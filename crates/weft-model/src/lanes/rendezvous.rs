//! Which copy a same-node rendezvous of N bytes takes (ALGORITHMS.md §5's lane model applied
//! to one message): the pipelined copy through the pair's ring (the ring lane: a copy in and
//! a copy out, fragment by fragment), a single copy by the receiver (the single-copy lane,
//! CMA), or a single copy split between the two processes (each copies half, once the sender
//! has seen the receiver's request).
//!
//! Each way's time is the lane's own figures, as in [`super::score`]:
//! `time(N) = latency + overhead + registration_ns_per_byte·N + N / b`, with the per-process
//! bandwidth `b = dedicated + shared / ppn`. The split copy moves half the bytes on the
//! single-copy lane and pays one more ring message first (the request to the sender):
//! `time_split(N) = time_single(N / 2) + ring latency + ring overhead`. Both thresholds are
//! the smallest sizes from which the faster way stays faster (the times are linear in N,
//! so each crossover is one division), rounded up to a page. Pure and deterministic: both
//! sides of a pair compute the same thresholds from the same figures.
//!
//! The figures decide where a busy node stands too: the ring's pipelined copy needs both
//! processes running for every fragment, the single copy needs only the receiver; a lane
//! file (or a tuning) with the ring's figures as measured under load moves the crossover
//! down, without any constant of this module changing.

use super::{LaneDesc, Reach};

/// Thresholds are rounded up to this many bytes (a page: the split copy cuts at pages).
pub const ROUND_BYTES: u64 = 4096;

/// The thresholds of a same-node rendezvous and why.
#[derive(Clone, Debug, PartialEq)]
pub struct RendezvousChoice {
    /// Messages of at least this many bytes take the single copy; `u64::MAX`: never.
    pub single_copy_from_bytes: u64,
    /// Single copies of at least this many bytes are split between the two processes;
    /// `u64::MAX`: never.
    pub split_from_bytes: u64,
    /// One line on how `single_copy_from_bytes` was chosen.
    pub single_copy_why: String,
    /// One line on how `split_from_bytes` was chosen.
    pub split_why: String,
}

/// A lane's time to move `bytes` to one peer as the fixed part (ns) and the part per byte
/// (ns), for a process sharing its node with `ppn` processes; `None` without bandwidth.
pub fn linear_cost(lane: &LaneDesc, ppn: u32) -> Option<(f64, f64)> {
    let bw = lane.dedicated_bytes_per_s + lane.shared_bytes_per_s / ppn.max(1) as f64;
    (bw > 0.0 && bw.is_finite()).then(|| {
        (
            lane.latency_ns + lane.overhead_ns,
            lane.registration_ns_per_byte + 1e9 / bw,
        )
    })
}

/// The smallest size (rounded up to [`ROUND_BYTES`]) from which `fixed_a + per_byte_a·N`
/// is at most `fixed_b + per_byte_b·N`, or `u64::MAX` when it never is.
fn crossover(fixed_a: f64, per_byte_a: f64, fixed_b: f64, per_byte_b: f64) -> u64 {
    if fixed_a <= fixed_b && per_byte_a <= per_byte_b {
        return 0;
    }
    if per_byte_a >= per_byte_b {
        return u64::MAX;
    }
    let n = ((fixed_a - fixed_b) / (per_byte_b - per_byte_a))
        .max(0.0)
        .ceil();
    if n >= (u64::MAX / 2) as f64 {
        return u64::MAX;
    }
    (n as u64).next_multiple_of(ROUND_BYTES)
}

fn show(n: u64) -> String {
    match n {
        u64::MAX => "never".into(),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1024 && n % 1024 == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// The rendezvous thresholds between two processes of a node running `ppn` processes of the
/// job: `ring` is the shared-memory lane, `single` the single-copy lane (None when it is not
/// offered, not allowed or refused for this pair). `single_override` and `split_override`
/// are the knobs' values, which replace the model's choice when given.
pub fn choose_rendezvous(
    ring: &LaneDesc,
    single: Option<&LaneDesc>,
    ppn: u32,
    single_override: Option<u64>,
    split_override: Option<u64>,
) -> RendezvousChoice {
    let ring_cost = linear_cost(ring, ppn);
    let single = single.filter(|l| l.single_copy && l.reach == Reach::SameNode);
    let single_cost = single.and_then(|l| linear_cost(l, ppn));
    let (single_from, single_why) = match (single_override, single, single_cost, ring_cost) {
        (Some(n), _, _, _) => (n, format!("{} (knob)", show(n))),
        (None, None, _, _) => (u64::MAX, "never: no single-copy lane for this pair".into()),
        (None, Some(l), None, _) => (u64::MAX, format!("never: lane {} has no bandwidth", l.name)),
        (None, Some(_), Some(_), None) => {
            (0, format!("always: lane {} has no bandwidth", ring.name))
        }
        (None, Some(l), Some((fs, bs)), Some((fr, br))) => {
            let n = crossover(fs, bs, fr, br);
            (
                n,
                format!(
                    "{} (model: {} {:.2} us + {:.3} ns/B against {} {:.2} us + {:.3} ns/B)",
                    show(n),
                    l.name,
                    fs / 1e3,
                    bs,
                    ring.name,
                    fr / 1e3,
                    br
                ),
            )
        }
    };
    let (split_from, split_why) = match (split_override, single_cost, ring_cost) {
        (Some(n), _, _) => (n, format!("{} (knob)", show(n))),
        (None, None, _) => (u64::MAX, "never: no single copy".into()),
        (None, Some((fs, bs)), ring_cost) => {
            // Halving the bytes pays for one more ring message (the request to the sender).
            let extra = ring_cost.map_or(0.0, |(fr, _)| fr);
            let n = crossover(fs + extra, bs / 2.0, fs, bs).max(single_from);
            (
                n,
                format!(
                    "{} (model: half the bytes each for one more ring message of {:.2} us{})",
                    show(n),
                    extra / 1e3,
                    if n == single_from && n != u64::MAX {
                        ", from the single copy's threshold"
                    } else {
                        ""
                    }
                ),
            )
        }
    };
    RendezvousChoice {
        single_copy_from_bytes: single_from,
        split_from_bytes: split_from,
        single_copy_why: single_why,
        split_why,
    }
}

#[cfg(test)]
mod tests {
    use super::super::TransportKind;
    use super::*;

    fn lane(name: &str, fixed_ns: f64, gbytes: f64, single: bool) -> LaneDesc {
        LaneDesc {
            name: name.into(),
            transport: if single {
                TransportKind::CMA
            } else {
                TransportKind::SHM
            },
            latency_ns: fixed_ns / 2.0,
            overhead_ns: fixed_ns / 2.0,
            registration_ns_per_byte: 0.0,
            dedicated_bytes_per_s: gbytes * 1e9,
            shared_bytes_per_s: 0.0,
            reach: Reach::SameNode,
            network: false,
            single_copy: single,
            numa_near: None,
        }
    }

    #[test]
    fn crossover_of_the_figures() {
        // Ring 400 ns + 0.125 ns/B, single copy 3000 ns + 1/12 ns/B: equal at 62 400 B.
        let c = choose_rendezvous(
            &lane("shm", 400.0, 8.0, false),
            Some(&lane("cma", 3000.0, 12.0, true)),
            2,
            None,
            None,
        );
        assert_eq!(c.single_copy_from_bytes, 62_400u64.next_multiple_of(4096));
        // Splitting pays from 2 * 400 ns * 12 GB/s = 9 600 B: from the single copy's start.
        assert_eq!(c.split_from_bytes, c.single_copy_from_bytes);
        assert!(c.single_copy_why.contains("model"), "{}", c.single_copy_why);
    }

    #[test]
    fn a_slower_ring_moves_the_single_copy_down() {
        let quiet = choose_rendezvous(
            &lane("shm", 400.0, 8.0, false),
            Some(&lane("cma", 3000.0, 12.0, true)),
            2,
            None,
            None,
        );
        let busy = choose_rendezvous(
            &lane("shm", 4000.0, 4.0, false),
            Some(&lane("cma", 3000.0, 12.0, true)),
            2,
            None,
            None,
        );
        assert_eq!(busy.single_copy_from_bytes, 0);
        assert!(busy.single_copy_from_bytes < quiet.single_copy_from_bytes);
    }

    #[test]
    fn never_when_the_single_copy_is_slower_per_byte() {
        let c = choose_rendezvous(
            &lane("shm", 400.0, 20.0, false),
            Some(&lane("cma", 3000.0, 12.0, true)),
            2,
            None,
            None,
        );
        assert_eq!(c.single_copy_from_bytes, u64::MAX);
        assert!(
            c.single_copy_why.starts_with("never"),
            "{}",
            c.single_copy_why
        );
    }

    #[test]
    fn no_single_copy_lane() {
        let c = choose_rendezvous(&lane("shm", 400.0, 8.0, false), None, 2, None, None);
        assert_eq!(c.single_copy_from_bytes, u64::MAX);
        assert_eq!(c.split_from_bytes, u64::MAX);
        // A lane that is not single-copy is no single-copy lane.
        let c = choose_rendezvous(
            &lane("shm", 400.0, 8.0, false),
            Some(&lane("tcp", 100.0, 100.0, false)),
            2,
            None,
            None,
        );
        assert_eq!(c.single_copy_from_bytes, u64::MAX);
    }

    #[test]
    fn knobs_override_the_model() {
        let c = choose_rendezvous(
            &lane("shm", 400.0, 8.0, false),
            Some(&lane("cma", 3000.0, 12.0, true)),
            2,
            Some(64 << 20),
            Some(256 << 10),
        );
        assert_eq!(c.single_copy_from_bytes, 64 << 20);
        assert_eq!(c.split_from_bytes, 256 << 10);
        assert!(c.single_copy_why.contains("knob"));
        assert!(c.split_why.contains("knob"));
    }

    #[test]
    fn split_needs_enough_bytes_to_pay_its_message() {
        // A ring message of 50 us: halving pays from 2 * 50 us * 12 GB/s = 1.2 MB.
        let c = choose_rendezvous(
            &lane("shm", 50_000.0, 1.0, false),
            Some(&lane("cma", 3000.0, 12.0, true)),
            2,
            None,
            None,
        );
        assert_eq!(c.single_copy_from_bytes, 0);
        assert_eq!(c.split_from_bytes, 1_200_000u64.next_multiple_of(4096));
    }
}
