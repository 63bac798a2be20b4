//! Linear scatter(v): the root sends each rank its block directly, all at once. One step.

use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// Appends to `p` the scatter of the root's `src`: `blocks[i]` is rank i's (offset, length)
/// in it; `mine` is this rank's receive length.
pub(crate) fn build(
    p: &mut Plan,
    rank: u32,
    root: u32,
    blocks: &[(usize, usize)],
    mine: usize,
    src: Buf,
) {
    p.step();
    if rank == root {
        for (i, &(off, len)) in blocks.iter().enumerate() {
            if i as u32 != root {
                p.send(i as u32, Region::new(src, off, len));
            }
        }
        // Its own block last, while the others move theirs.
        let (off, len) = blocks[root as usize];
        p.copy_after_posting(Region::new(src, off, len), Region::new(Buf::Recv, 0, len));
    } else {
        p.recv(root, Region::new(Buf::Recv, 0, mine));
    }
}

/// The scatter of the root's send buffer: `blocks[i]` is rank i's (offset, length) in it;
/// `mine` is this rank's receive length.
pub(crate) fn plan(rank: u32, root: u32, blocks: &[(usize, usize)], mine: usize) -> Plan {
    let mut p = Plan::new();
    build(&mut p, rank, root, blocks, mine, Buf::Send);
    p
}

/// The mirror of the linear gather: the root sends n − 1 messages one after another.
pub(crate) fn cost(m: &CollModel) -> f64 {
    crate::coll::algo::gather::linear::cost(m)
}
