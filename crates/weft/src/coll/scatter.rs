//! MPI_Scatter (MPI-4.1 §6.6): the root's buffer cut into equal blocks, block i to rank i.

use super::count_error;
use super::select::Coll;
use super::{CollRequest, Mode, PlanShape};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Sends block i (of `recv.len()` elements) of the root's `send` to rank i's `recv`
    /// (MPI_Scatter). `send` matters at the root only (pass `&[]` elsewhere).
    pub fn scatter<T: Pod>(&self, send: &[T], recv: &mut [T], root: u32) -> Result<()> {
        // Only the root's send buffer counts, as in the usual way.
        let src: &[T] = if root == self.rank() { send } else { &[] };
        let (s, r) = (
            bytemuck::cast_slice(src),
            bytemuck::cast_slice_mut(&mut *recv),
        );
        if let Some(done) = self.coll_repeat(Coll::Scatter, root, s, r, None) {
            return done;
        }
        self.scatter_start(send, recv, root, Mode::Blocking)?.wait()
    }

    /// Starts [`Comm::scatter`] (MPI_Iscatter).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read and write the buffers.
    pub unsafe fn iscatter<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        root: u32,
    ) -> Result<CollRequest<'a>> {
        self.scatter_start(send, recv, root, Mode::Nonblocking)
    }

    fn scatter_start<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        root: u32,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.coll_check_root(Coll::Scatter, root)?;
        let (rank, size) = (self.rank(), self.size());
        let n = recv.len();
        if rank == root && send.len() != n * size as usize {
            return Err(count_error(
                Coll::Scatter,
                rank,
                "the root's send buffer",
                send.len(),
                n * size as usize,
            ));
        }
        let blk = std::mem::size_of_val(recv);
        let key = self.coll_key(blk, root, 0, true, mode);
        let plan = self.coll_prepared(Coll::Scatter, key, &[], || {
            let c = self.coll_choose(Coll::Scatter, blk, true, mode)?;
            let shape = PlanShape {
                bytes: blk,
                root,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Scatter, &c, shape, &[], &[])?;
            Ok((c, plan))
        })?;
        let src: &'a [T] = if rank == root { send } else { &[] };
        self.coll_start_rooted(
            Coll::Scatter,
            root,
            plan,
            bytemuck::cast_slice(src),
            bytemuck::cast_slice_mut(recv),
            None,
            mode,
        )
    }
}
