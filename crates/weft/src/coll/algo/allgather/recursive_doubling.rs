//! Recursive-doubling allgather: log2 n steps; in step k partners `r ^ 2^k` swap the 2^k
//! blocks each has gathered so far, straight into the receive buffer. Power-of-two sizes
//! only (declared as a restriction); equal blocks.

use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, block: usize) -> Plan {
    debug_assert!(size.is_power_of_two());
    let mut p = Plan::new();
    p.step();
    let r = rank as usize;
    // In the first exchange's step: its receive and send touch other blocks, so a two-rank
    // call is one step (run without a schedule when repeated, `coll::direct`).
    p.copy(
        Region::new(Buf::Send, 0, block),
        Region::new(Buf::Recv, r * block, block),
    );
    let mut d = 1usize;
    while d < size as usize {
        let partner = r ^ d;
        let mine = (r / d) * d;
        let theirs = (partner / d) * d;
        if d > 1 {
            p.step();
        }
        p.recv(
            partner as u32,
            Region::new(Buf::Recv, theirs * block, d * block),
        );
        // The first exchange sends our own block from the send buffer (clean cache lines;
        // the copy in the receive buffer is dirty in our core's cache).
        let src = if d == 1 {
            Region::new(Buf::Send, 0, block)
        } else {
            Region::new(Buf::Recv, mine * block, d * block)
        };
        p.send(partner as u32, src);
        d *= 2;
    }
    p
}

/// ceil(log2 n) exchanges doubling each time, plus one step for the ranks beyond the
/// largest power of two.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let all = m.procs() * m.bytes();
    let t = m.doubling_allgather(all)
        + if m.non_pow2() {
            CollModel::msg(m.shift(), all)
        } else {
            0.0
        };
    t * m.all_ranks_busy()
}
