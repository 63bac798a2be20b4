//! Linear scatter(v): the root sends each rank its block directly, all at once. One step.

use crate::coll::schedule::{Buf, Plan, Region};

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
