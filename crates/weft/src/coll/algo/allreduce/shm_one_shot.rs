//! One-shot allreduce on the node's collective area: every rank copies its vector into its
//! slot and arrives; then every rank reads every slot and combines them all itself, in rank
//! order (any operation; every rank computes the same values in the same order). One
//! arrival per slot's worth of data instead of the two of the area's reduce-scatter +
//! allgather ([`super::shm`]), at the price of every rank combining the whole
//! vector `size - 1` times: for small vectors, where the arrival costs more than the
//! arithmetic. Only for a communicator that is the whole node (the `SharedMemory`
//! restriction).

use crate::coll::schedule::{Buf, Plan, Region, Slot};
use weft_model::cost::CollModel;

/// The plan of one rank: rounds of at most a slot of whole elements each.
pub(crate) fn plan(
    rank: u32,
    size: u32,
    count: usize,
    elem_bytes: usize,
    slot_bytes: usize,
) -> Plan {
    let mut p = Plan::new();
    let per_round = (slot_bytes / elem_bytes).max(1);
    let tmp = p.tmp(count.min(per_round) * elem_bytes);
    let mut first = 0;
    while first < count {
        let n = (count - first).min(per_round);
        let (base, len) = (first * elem_bytes, n * elem_bytes);
        p.step();
        p.shm_write(Slot::Rank(rank), 0, Region::new(Buf::Send, base, len));
        p.shm_arrive();
        let acc = Region::new(Buf::Recv, base, len);
        let t = Region::new(tmp, 0, len);
        p.step();
        p.shm_read(Slot::Rank(0), 0, acc);
        for i in 1..size {
            p.shm_read(Slot::Rank(i), 0, t);
            p.reduce(t, acc, false);
        }
        first += n;
    }
    p
}

/// One arrival; every rank copies its vector in, reads all n and combines n − 1.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (intra, pf, n) = (m.intra(), m.procs(), m.bytes());
    let t = intra.latency_ns + intra.bytes_ns((pf + 1.0) * n) + (pf - 1.0) * n * m.gamma();
    t * m.all_ranks_busy()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_arrival_per_round_and_every_slot_read() {
        // 10 floats through 16-byte slots: 3 rounds (4, 4, 2 elements).
        let p = plan(1, 3, 10, 4, 16);
        let text = format!("{p:?}");
        assert_eq!(text.matches("ShmArrive").count(), 3, "{text}");
        assert_eq!(text.matches("ShmRead").count(), 9, "{text}");
        assert_eq!(text.matches("Reduce {").count(), 6, "{text}");
        // Nothing to move: no step at all.
        assert_eq!(
            format!("{:?}", plan(0, 4, 0, 8, 64)).matches("Shm").count(),
            0
        );
    }
}
