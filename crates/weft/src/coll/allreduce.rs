//! MPI_Allreduce (MPI-4.1 §6.9.6): the element-wise reduction of every rank's buffer, on
//! every rank.

use super::algo;
use super::schedule::{Buf, Plan};
use super::select::Coll;
use super::{count_error, reduction, Datatype, Op};
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Combines every rank's `send` with `op` into every rank's `recv` (MPI_Allreduce);
    /// `recv` is as long as `send`. A non-commutative `op` is applied in rank order.
    pub fn allreduce<T: Datatype>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        self.check()?;
        let red = reduction::<T>(Coll::Allreduce, self.rank(), op)?;
        if recv.len() != send.len() {
            return Err(count_error(
                Coll::Allreduce,
                self.rank(),
                "the receive buffer",
                recv.len(),
                send.len(),
            ));
        }
        let bytes = std::mem::size_of_val(send);
        let c = self.coll_choose(Coll::Allreduce, bytes, op.is_commutative())?;
        let (rank, size) = (self.rank(), self.size());
        let plan = match c.algo {
            "ring" => algo::ring_allreduce::plan(rank, size, send.len(), std::mem::size_of::<T>()),
            "shm" => algo::shm::allreduce(
                rank,
                size,
                send.len(),
                std::mem::size_of::<T>(),
                self.coll_shm_slot_bytes().unwrap_or(64),
            ),
            "rabenseifner" => algo::rabenseifner::plan(
                rank,
                size,
                send.len(),
                std::mem::size_of::<T>(),
                algo::rabenseifner::Finish::Everyone,
            ),
            "knomial" => {
                // Reduce to rank 0, then broadcast from it: 2·log_k n levels.
                let mut p = Plan::new();
                algo::knomial_reduce::build(
                    &mut p,
                    rank,
                    size,
                    0,
                    c.radix,
                    bytes,
                    op.is_commutative(),
                    Buf::Recv,
                )?;
                algo::knomial_bcast::build(&mut p, rank, size, 0, c.radix, Buf::Recv, bytes)?;
                p
            }
            _ => algo::recursive_doubling::plan(rank, size, bytes),
        };
        self.coll_run(
            Coll::Allreduce,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            Some(red),
        )
    }
}
