//! MPI_Exscan (MPI-4.1 §6.11.2): exclusive prefix reduction in rank order.

use super::algo;
use super::select::Coll;
use super::{count_error, reduction, Datatype, Op};
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Leaves `send₀ ∘ … ∘ send_{r−1}` in rank r's `recv` (MPI_Exscan); rank 0's `recv` is
    /// not touched. `recv` is as long as `send`. Any operation, commutative or not.
    pub fn exscan<T: Datatype>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        self.check()?;
        let rank = self.rank();
        let red = reduction::<T>(Coll::Exscan, rank, op)?;
        if recv.len() != send.len() {
            return Err(count_error(
                Coll::Exscan,
                rank,
                "the receive buffer",
                recv.len(),
                send.len(),
            ));
        }
        let bytes = std::mem::size_of_val(send);
        let c = self.coll_choose(Coll::Exscan, bytes, op.is_commutative())?;
        debug_assert_eq!(c.algo, "linear");
        let plan = algo::linear_scan::exclusive(rank, self.size(), bytes);
        self.coll_run(
            Coll::Exscan,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            Some(red),
        )
    }
}
