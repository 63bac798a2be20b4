//! Bruck alltoall: ceil(log2 n) steps for any n, each moving about half the blocks, instead
//! of pairwise exchange's n − 1 steps — fewer, larger messages, for small blocks. Blocks are
//! first rotated so that position i holds the block for rank `r + i`; in the step of
//! distance d every rank sends the blocks whose position has bit d set to `r + d` and
//! receives the same positions from `r − d`; at the end position i holds the block from
//! rank `r − i`. The blocks of a step are not contiguous: they are packed into a temporary
//! and unpacked on arrival (the price of the fewer messages). Equal blocks only.

use crate::coll::algo::sub;
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, block: usize) -> Plan {
    let mut p = Plan::new();
    let n = size as usize;
    let r = rank as usize;
    let tmp = p.tmp(n * block);
    let most = n.div_ceil(2);
    let pack = p.tmp(most * block);
    let unpack = p.tmp(most * block);
    let at = |buf: Buf, i: usize| Region::new(buf, i * block, block);
    p.step();
    for i in 0..n {
        p.copy(at(Buf::Send, (r + i) % n), at(tmp, i));
    }
    let mut last: Vec<usize> = Vec::new();
    let mut d = 1usize;
    while d < n {
        let moved: Vec<usize> = (0..n).filter(|i| i & d != 0).collect();
        p.step();
        for (j, &i) in last.iter().enumerate() {
            p.copy(at(unpack, j), at(tmp, i));
        }
        for (j, &i) in moved.iter().enumerate() {
            p.copy(at(tmp, i), at(pack, j));
        }
        let len = moved.len() * block;
        p.recv(sub(rank, d as u32, size), Region::new(unpack, 0, len));
        p.send(((r + d) % n) as u32, Region::new(pack, 0, len));
        last = moved;
        d *= 2;
    }
    p.step();
    for (j, &i) in last.iter().enumerate() {
        p.copy(at(unpack, j), at(tmp, i));
    }
    for i in 0..n {
        p.copy(at(tmp, i), at(Buf::Recv, (r + n - i) % n));
    }
    p
}

/// ceil(log2 n) steps of about half the blocks, each packed and unpacked.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (pf, n) = (m.procs(), m.bytes());
    m.log2() as f64 * CollModel::msg(m.shift(), pf / 2.0 * n) + 2.0 * m.intra().bytes_ns(pf * n)
}
