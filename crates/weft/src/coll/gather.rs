//! MPI_Gather (MPI-4.1 §6.5): every rank's block, in rank order, at the root.

use super::count_error;
use super::select::Coll;
use super::{CollRequest, Mode, PlanShape};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Gathers every rank's `send` into the root's `recv`, rank i's block at `i·send.len()`
    /// (MPI_Gather). At the root `recv` holds `size·send.len()` elements; elsewhere it is not
    /// touched (pass `&mut []`).
    pub fn gather<T: Pod>(&self, send: &[T], recv: &mut [T], root: u32) -> Result<()> {
        // Only the root's receive buffer counts, as in the usual way.
        let out: &mut [T] = if root == self.rank() {
            &mut *recv
        } else {
            &mut []
        };
        let (s, r) = (bytemuck::cast_slice(send), bytemuck::cast_slice_mut(out));
        if let Some(done) = self.coll_repeat(Coll::Gather, root, s, r, None) {
            return done;
        }
        self.gather_start(send, recv, root, Mode::Blocking)?.wait()
    }

    /// Starts [`Comm::gather`] (MPI_Igather).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read and write the buffers.
    pub unsafe fn igather<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        root: u32,
    ) -> Result<CollRequest<'a>> {
        self.gather_start(send, recv, root, Mode::Nonblocking)
    }

    fn gather_start<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        root: u32,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.coll_check_root(Coll::Gather, root)?;
        let (rank, size) = (self.rank(), self.size());
        let n = send.len();
        if rank == root && recv.len() != n * size as usize {
            return Err(count_error(
                Coll::Gather,
                rank,
                "the root's receive buffer",
                recv.len(),
                n * size as usize,
            ));
        }
        let blk = std::mem::size_of_val(send);
        let key = self.coll_key(blk, root, 0, true, mode);
        let plan = self.coll_prepared(Coll::Gather, key, &[], || {
            let c = self.coll_choose(Coll::Gather, blk, true, mode)?;
            let shape = PlanShape {
                bytes: blk,
                root,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Gather, &c, shape, &[], &[])?;
            Ok((c, plan))
        })?;
        let out: &'a mut [T] = if rank == root { recv } else { &mut [] };
        self.coll_start_rooted(
            Coll::Gather,
            root,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(out),
            None,
            mode,
        )
    }
}
