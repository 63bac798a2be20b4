//! MPI_Allgather (MPI-4.1 §6.7): every rank's block, in rank order, on every rank.

use super::algo;
use super::count_error;
use super::select::Coll;
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Gathers every rank's `send` into every rank's `recv`, rank i's block at
    /// `i·send.len()` (MPI_Allgather); `recv` holds `size·send.len()` elements.
    pub fn allgather<T: Pod>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.check()?;
        let (rank, size) = (self.rank(), self.size());
        let n = send.len();
        if recv.len() != n * size as usize {
            return Err(count_error(
                Coll::Allgather,
                rank,
                "the receive buffer",
                recv.len(),
                n * size as usize,
            ));
        }
        let blk = std::mem::size_of_val(send);
        let c = self.coll_choose(Coll::Allgather, blk, true)?;
        let blocks: Vec<(usize, usize)> = (0..size as usize).map(|i| (i * blk, blk)).collect();
        let plan = match c.algo {
            "bruck" => algo::bruck_allgather::plan(rank, size, blk),
            "recursive_doubling" => algo::recursive_doubling_allgather::plan(rank, size, blk),
            _ => algo::ring_allgather::plan(rank, size, &blocks),
        };
        self.coll_run(
            Coll::Allgather,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            None,
        )
    }
}
