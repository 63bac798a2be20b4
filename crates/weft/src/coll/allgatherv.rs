//! MPI_Allgatherv (MPI-4.1 §6.7): blocks of varying length on every rank, at given
//! displacements.

use super::algo;
use super::select::Coll;
use super::{blocks, check_disjoint, check_len, count_error};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Gathers every rank's `send` into every rank's `recv`: rank i's `counts[i]` elements at
    /// element `displs[i]` (MPI_Allgatherv). Blocks must not overlap.
    pub fn allgatherv<T: Pod>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        self.check()?;
        let (rank, size) = (self.rank(), self.size());
        check_len(Coll::Allgatherv, rank, "counts", counts.len(), size)?;
        check_len(Coll::Allgatherv, rank, "displs", displs.len(), size)?;
        let es = std::mem::size_of::<T>();
        let layout = blocks(
            Coll::Allgatherv,
            rank,
            "receive",
            counts,
            displs,
            recv.len(),
            es,
        )?;
        check_disjoint(Coll::Allgatherv, rank, "receive", &layout)?;
        if counts[rank as usize] != send.len() {
            return Err(count_error(
                Coll::Allgatherv,
                rank,
                "the send buffer",
                send.len(),
                counts[rank as usize],
            ));
        }
        let c = self.coll_choose(Coll::Allgatherv, std::mem::size_of_val(send), true)?;
        debug_assert_eq!(c.algo, "ring");
        let plan = algo::ring_allgather::plan(rank, size, &layout);
        self.coll_run(
            Coll::Allgatherv,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            None,
        )
    }
}
