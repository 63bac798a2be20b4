//! MPI_Gather (MPI-4.1 §6.5): every rank's block, in rank order, at the root.

use super::algo;
use super::count_error;
use super::select::Coll;
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Gathers every rank's `send` into the root's `recv`, rank i's block at `i·send.len()`
    /// (MPI_Gather). At the root `recv` holds `size·send.len()` elements; elsewhere it is not
    /// touched (pass `&mut []`).
    pub fn gather<T: Pod>(&self, send: &[T], recv: &mut [T], root: u32) -> Result<()> {
        self.coll_check_root(Coll::Gather, root)?;
        let (rank, size) = (self.rank(), self.size());
        let n = send.len();
        if rank == root && recv.len() != n * size as usize {
            return Err(count_error(
                Coll::Gather,
                rank,
                "the root's receive buffer",
                recv.len(),
                n * size as usize,
            ));
        }
        let blk = std::mem::size_of_val(send);
        let c = self.coll_choose(Coll::Gather, blk, true)?;
        let blocks: Vec<(usize, usize)> = (0..size as usize).map(|i| (i * blk, blk)).collect();
        let plan = match c.algo {
            "knomial" => algo::knomial_gather::gather(rank, size, root, c.radix, blk)?,
            _ => algo::linear_gather::plan(rank, root, &blocks, blk),
        };
        let out: &mut [T] = if rank == root { recv } else { &mut [] };
        self.coll_run(
            Coll::Gather,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(out),
            None,
        )
    }
}
