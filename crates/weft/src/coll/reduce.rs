//! MPI_Reduce (MPI-4.1 §6.9.1): the element-wise reduction of every rank's buffer, at the
//! root.

use super::algo;
use super::schedule::{Buf, Plan};
use super::select::Coll;
use super::{count_error, reduction, Datatype, Op};
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Combines every rank's `send` with `op` into the root's `recv` (MPI_Reduce). `recv`
    /// must be as long as `send` at the root and is not touched elsewhere (pass `&mut []`).
    /// A non-commutative `op` is applied in rank order.
    pub fn reduce<T: Datatype>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &Op,
        root: u32,
    ) -> Result<()> {
        self.coll_check_root(Coll::Reduce, root)?;
        let red = reduction::<T>(Coll::Reduce, self.rank(), op)?;
        if self.rank() == root && recv.len() != send.len() {
            return Err(count_error(
                Coll::Reduce,
                self.rank(),
                "the root's receive buffer",
                recv.len(),
                send.len(),
            ));
        }
        let bytes = std::mem::size_of_val(send);
        let c = self.coll_choose(Coll::Reduce, bytes, op.is_commutative())?;
        let mut plan = Plan::new();
        if c.algo == "reduce_scatter_gather" {
            plan = algo::rabenseifner::plan(
                self.rank(),
                self.size(),
                send.len(),
                std::mem::size_of::<T>(),
                algo::rabenseifner::Finish::Root(root),
            );
        } else {
            algo::knomial_reduce::build(
                &mut plan,
                self.rank(),
                self.size(),
                root,
                c.radix,
                bytes,
                op.is_commutative(),
                Buf::Recv,
            )?;
        }
        let out: &mut [T] = if self.rank() == root { recv } else { &mut [] };
        self.coll_run(
            Coll::Reduce,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(out),
            Some(red),
        )
    }
}
