//! MPI_Reduce_scatter_block (MPI-4.1 §6.10.1): the reduction of every rank's buffer, block
//! i of it to rank i.

use super::select::Coll;
use super::{count_error, Datatype, Op};
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Combines every rank's `send` with `op` and leaves block i (of `recv.len()` elements)
    /// of the result in rank i's `recv` (MPI_Reduce_scatter_block); `send` holds
    /// `size·recv.len()` elements.
    pub fn reduce_scatter_block<T: Datatype>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &Op,
    ) -> Result<()> {
        self.check()?;
        let (rank, size) = (self.rank(), self.size());
        let n = recv.len();
        if send.len() != n * size as usize {
            return Err(count_error(
                Coll::ReduceScatterBlock,
                rank,
                "the send buffer",
                send.len(),
                n * size as usize,
            ));
        }
        let counts = vec![n; size as usize];
        self.reduce_scatter_impl(Coll::ReduceScatterBlock, send, recv, &counts, op)
    }
}
