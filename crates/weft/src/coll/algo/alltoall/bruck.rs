//! Bruck alltoall: ceil(log2 n) steps for any n, each moving about half the blocks, instead
//! of pairwise exchange's n − 1 steps — fewer, larger messages, for small blocks. Blocks are
//! first rotated so that position i holds the block for rank `r + i`; in the step of
//! distance d every rank sends the blocks whose position has bit d set to `r + d` and
//! receives the same positions from `r − d`; at the end position i holds the block from
//! rank `r − i`. The blocks of a step are not contiguous: they are packed into a temporary
//! and unpacked on arrival (the price of the fewer messages), a run of consecutive positions
//! in one copy. Equal blocks only.

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
    let blocks = |buf: Buf, i: usize, count: usize| Region::new(buf, i * block, count * block);
    p.step();
    // Position i takes the block for rank r + i: the send buffer from r on, then from 0.
    p.copy(blocks(Buf::Send, r, n - r), blocks(tmp, 0, n - r));
    if r > 0 {
        p.copy(blocks(Buf::Send, 0, r), blocks(tmp, n - r, r));
    }
    // The positions with bit d set come in runs of d: [d, 2d), [3d, 4d), ... (cut at n),
    // each packed and unpacked in one copy.
    let runs = |d: usize| (d..n).step_by(2 * d).map(move |s| (s, d.min(n - s)));
    let mut last: Option<usize> = None;
    let mut d = 1usize;
    while d < n {
        p.step();
        if let Some(ld) = last {
            let mut j = 0;
            for (s, len) in runs(ld) {
                p.copy(blocks(unpack, j, len), blocks(tmp, s, len));
                j += len;
            }
        }
        let mut moved = 0;
        for (s, len) in runs(d) {
            p.copy(blocks(tmp, s, len), blocks(pack, moved, len));
            moved += len;
        }
        p.recv(sub(rank, d as u32, size), blocks(unpack, 0, moved));
        p.send(((r + d) % n) as u32, blocks(pack, 0, moved));
        last = Some(d);
        d *= 2;
    }
    p.step();
    if let Some(ld) = last {
        let mut j = 0;
        for (s, len) in runs(ld) {
            p.copy(blocks(unpack, j, len), blocks(tmp, s, len));
            j += len;
        }
    }
    for i in 0..n {
        p.copy(blocks(tmp, i, 1), blocks(Buf::Recv, (r + n - i) % n, 1));
    }
    p
}

/// ceil(log2 n) steps of about half the blocks, each packed and unpacked.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (pf, n) = (m.procs(), m.bytes());
    let t = m.log2() as f64 * CollModel::msg(m.shift(), pf / 2.0 * n)
        + 2.0 * m.intra().bytes_ns(pf * n);
    t * m.all_ranks_busy()
}
