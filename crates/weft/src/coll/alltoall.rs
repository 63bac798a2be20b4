//! MPI_Alltoall (MPI-4.1 §6.8): block j of rank i's send buffer becomes block i of rank j's
//! receive buffer.

use super::algo;
use super::count_error;
use super::select::Coll;
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::{Error, ErrorKind, Result};

impl Comm {
    /// Sends block j of `send` to rank j, which stores it as block i of its `recv`
    /// (MPI_Alltoall). Both buffers hold `size` equal blocks.
    pub fn alltoall<T: Pod>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.check()?;
        let (rank, size) = (self.rank(), self.size());
        if !send.len().is_multiple_of(size as usize) {
            return Err(Error::new(
                ErrorKind::InvalidCount,
                format!("alltoall on rank {rank}: the send buffer's {} elements do not split into {size} equal blocks", send.len()),
            ));
        }
        if recv.len() != send.len() {
            return Err(count_error(
                Coll::Alltoall,
                rank,
                "the receive buffer",
                recv.len(),
                send.len(),
            ));
        }
        let es = std::mem::size_of::<T>();
        let blk = send.len() / size as usize * es;
        let c = self.coll_choose(Coll::Alltoall, blk, true)?;
        debug_assert_eq!(c.algo, "pairwise");
        let blocks: Vec<(usize, usize)> = (0..size as usize).map(|i| (i * blk, blk)).collect();
        let plan = algo::pairwise::plan(rank, size, &blocks, &blocks);
        self.coll_run(
            Coll::Alltoall,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            None,
        )
    }
}
