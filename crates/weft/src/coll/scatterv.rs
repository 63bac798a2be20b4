//! MPI_Scatterv (MPI-4.1 §6.6): blocks of varying length from the root, at given
//! displacements.

use super::algo;
use super::schedule::{Buf, Plan};
use super::select::Coll;
use super::{blocks, check_len, count_error};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Sends `counts[i]` elements at element `displs[i]` of the root's `send` to rank i's
    /// `recv` (MPI_Scatterv). `send`, `counts` and `displs` matter at the root only.
    pub fn scatterv<T: Pod>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: u32,
    ) -> Result<()> {
        self.coll_check_root(Coll::Scatterv, root)?;
        let (rank, size) = (self.rank(), self.size());
        let es = std::mem::size_of::<T>();
        let mut layout = Vec::new();
        if rank == root {
            check_len(Coll::Scatterv, rank, "counts", counts.len(), size)?;
            check_len(Coll::Scatterv, rank, "displs", displs.len(), size)?;
            layout = blocks(Coll::Scatterv, rank, "send", counts, displs, send.len(), es)?;
            if counts[rank as usize] != recv.len() {
                return Err(count_error(
                    Coll::Scatterv,
                    rank,
                    "the root's receive buffer",
                    recv.len(),
                    counts[rank as usize],
                ));
            }
        }
        let c = self.coll_choose(Coll::Scatterv, std::mem::size_of_val(recv), true)?;
        debug_assert_eq!(c.algo, "linear");
        let mut plan = Plan::new();
        let mine = std::mem::size_of_val(recv);
        algo::linear_scatter::build(&mut plan, rank, root, &layout, mine, Buf::Send);
        let src: &[T] = if rank == root { send } else { &[] };
        self.coll_run(
            Coll::Scatterv,
            plan,
            bytemuck::cast_slice(src),
            bytemuck::cast_slice_mut(recv),
            None,
        )
    }
}
