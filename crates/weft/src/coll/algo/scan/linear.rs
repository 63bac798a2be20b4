//! Linear (chain) scan and exscan: rank r waits for the prefix of ranks 0..r from r − 1,
//! combines it with its own contribution (prefix first, so any operation works) and passes
//! the result on. n − 1 sequential messages.

use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// Inclusive scan: the receive buffer gets `x₀ ∘ … ∘ x_r`.
pub(crate) fn inclusive(rank: u32, size: u32, bytes: usize, commutative: bool) -> Plan {
    let mut p = Plan::new();
    let acc = Region::new(Buf::Recv, 0, bytes);
    let own = Region::new(Buf::Send, 0, bytes);
    p.step();
    if rank == 0 {
        // The first rank's prefix is its contribution: it goes out first, and the copy
        // into the result waits for the send to be posted.
        if size > 1 {
            p.send(1, own);
        }
        p.copy_after_posting(own, acc);
        return p;
    }
    if commutative {
        // The prefix received straight into the result and our contribution combined into
        // it in place: no copy, no scratch (the prefix must come first otherwise, which
        // needs it in scratch).
        p.recv(rank - 1, acc);
        p.step();
        p.reduce(own, acc, false);
    } else {
        p.copy(own, acc);
        let tmp = Region::new(p.tmp(bytes), 0, bytes);
        p.recv(rank - 1, tmp);
        p.step();
        p.reduce(tmp, acc, true);
    }
    if rank + 1 < size {
        p.step();
        p.send(rank + 1, acc);
    }
    p
}

/// Exclusive scan: the receive buffer gets `x₀ ∘ … ∘ x_{r−1}` (untouched on rank 0). With a
/// `commutative` operation a middle rank makes the prefix it passes on in one pass over
/// its contribution and the received prefix, instead of a copy and a pass.
pub(crate) fn exclusive(rank: u32, size: u32, bytes: usize, commutative: bool) -> Plan {
    let mut p = Plan::new();
    let prefix = Region::new(Buf::Recv, 0, bytes);
    let own = Region::new(Buf::Send, 0, bytes);
    if rank == 0 {
        if size > 1 {
            p.step();
            p.send(1, own);
        }
        return p;
    }
    p.step();
    p.recv(rank - 1, prefix);
    if rank + 1 < size {
        let next = Region::new(p.tmp(bytes), 0, bytes);
        p.step();
        if commutative {
            // own ∘ prefix, which is prefix ∘ own.
            p.reduce_into(own, prefix, next);
        } else {
            p.copy(own, next);
            p.reduce(prefix, next, true);
        }
        p.send(rank + 1, next);
    }
    p
}

/// n − 1 hops down the chain, each combined. The fan-out's cost is written the same way:
/// its last rank takes n − 1 messages one after another and combines each, which on the
/// α-β model ties with the chain; the table decides between them from measurements (a tie
/// goes to the earlier row, the chain).
pub(crate) fn cost(m: &CollModel) -> f64 {
    let n = m.bytes();
    (m.procs() - 1.0) * (CollModel::msg(m.shift(), n) + m.gamma() * n)
}
