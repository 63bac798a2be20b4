//! MPI_Allgather (MPI-4.1 §6.7): every rank's block, in rank order, on every rank.

use super::count_error;
use super::select::Coll;
use super::PlanShape;
use super::{CollRequest, Mode};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Gathers every rank's `send` into every rank's `recv`, rank i's block at
    /// `i·send.len()` (MPI_Allgather); `recv` holds `size·send.len()` elements.
    pub fn allgather<T: Pod>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let (s, r) = (
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(&mut *recv),
        );
        if let Some(done) = self.coll_repeat(Coll::Allgather, 0, s, r, None) {
            return done;
        }
        self.allgather_start(send, recv, Mode::Blocking)?.wait()
    }

    /// Starts [`Comm::allgather`] (MPI_Iallgather).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read and write the buffers.
    pub unsafe fn iallgather<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<CollRequest<'a>> {
        self.allgather_start(send, recv, Mode::Nonblocking)
    }

    fn allgather_start<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
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
        let key = self.coll_key(blk, 0, 0, true, mode);
        let plan = self.coll_prepared(Coll::Allgather, key, &[], || {
            let c = self.coll_choose(Coll::Allgather, blk, true, mode)?;
            let shape = PlanShape {
                bytes: blk,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Allgather, &c, shape, &[], &[])?;
            Ok((c, plan))
        })?;
        self.coll_start(
            Coll::Allgather,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            None,
            mode,
        )
    }
}
