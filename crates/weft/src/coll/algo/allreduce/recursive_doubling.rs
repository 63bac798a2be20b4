//! Recursive-doubling allreduce: log2 n rounds in which partners `r ^ 2^i` swap their whole
//! partial results. For n not a power of two, the first 2·rem ranks pair up first (the odd
//! one folds in its even neighbour and takes part; the even one waits for the result).
//! Partial results always cover contiguous rank ranges and are combined lower range first,
//! so non-commutative operations are applied in rank order. Best for small messages.

use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, bytes: usize, commutative: bool) -> Plan {
    let mut p = Plan::new();
    let own = Region::new(Buf::Send, 0, bytes);
    let acc = Region::new(Buf::Recv, 0, bytes);
    let tmp = Region::new(p.tmp(bytes), 0, bytes);
    let pof2 = if size.is_power_of_two() {
        size
    } else {
        1 << (31 - size.leading_zeros())
    };
    let rem = size - pof2;
    // A rank whose partial result is still its own contribution at the first exchange
    // receives the partner's straight into the result and sends from its send buffer: no
    // copy first, no scratch for that round. The partner's operand comes second only for
    // the higher rank, which a non-commutative operation cannot combine in place (its
    // second form needs the operand in scratch): that rank copies as before.
    // The rank paired with group rank `nr` in the round of `mask`.
    let partner_of = |nr: u32, mask: u32| {
        let pn = nr ^ mask;
        if pn < rem {
            pn * 2 + 1
        } else {
            pn + rem
        }
    };
    let direct_first =
        rank >= 2 * rem && pof2 > 1 && (commutative || partner_of(rank - rem, 1) > rank);
    p.step();
    if !direct_first {
        p.copy(own, acc);
    }
    // Rank in the power-of-two group, or None for the even ranks that sit out.
    let new_rank = if rank < 2 * rem {
        if rank.is_multiple_of(2) {
            p.send(rank + 1, acc);
            None
        } else {
            p.recv(rank - 1, tmp);
            p.step();
            p.reduce(tmp, acc, true);
            Some(rank / 2)
        }
    } else {
        Some(rank - rem)
    };
    if let Some(nr) = new_rank {
        let mut mask = 1u32;
        if direct_first {
            let partner = partner_of(nr, 1);
            p.recv(partner, acc);
            p.send(partner, own);
            p.step();
            p.reduce(own, acc, partner > rank);
            mask = 2;
        }
        while mask < pof2 {
            let partner = partner_of(nr, mask);
            p.step();
            p.send(partner, acc);
            p.recv(partner, tmp);
            p.step();
            p.reduce(tmp, acc, partner < rank);
            mask <<= 1;
        }
    }
    if rank < 2 * rem {
        p.step();
        if rank.is_multiple_of(2) {
            p.recv(rank + 1, acc);
        } else {
            p.send(rank - 1, acc);
        }
    }
    p
}

/// ceil(log2 n) exchanges of the whole buffer, each combined, plus the fold of the ranks
/// beyond the largest power of two.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let n = m.bytes();
    let steps: f64 = (0..m.log2())
        .map(|i| CollModel::msg(m.xor(1 << i), n) + m.gamma() * n)
        .sum();
    (steps + m.fold(n)) * m.all_ranks_busy()
}
