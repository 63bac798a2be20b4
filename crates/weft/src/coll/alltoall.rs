//! MPI_Alltoall (MPI-4.1 §6.8): block j of rank i's send buffer becomes block i of rank j's
//! receive buffer.

use super::count_error;
use super::select::Coll;
use super::PlanShape;
use super::{CollRequest, Mode};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::{Error, ErrorKind, Result};

impl Comm {
    /// Sends block j of `send` to rank j, which stores it as block i of its `recv`
    /// (MPI_Alltoall). Both buffers hold `size` equal blocks.
    pub fn alltoall<T: Pod>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let (s, r) = (
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(&mut *recv),
        );
        if let Some(done) = self.coll_repeat(Coll::Alltoall, 0, s, r, None) {
            return done;
        }
        self.alltoall_start(send, recv, Mode::Blocking)?.wait()
    }

    /// Starts [`Comm::alltoall`] (MPI_Ialltoall).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read and write the buffers.
    pub unsafe fn ialltoall<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<CollRequest<'a>> {
        self.alltoall_start(send, recv, Mode::Nonblocking)
    }

    fn alltoall_start<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
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
        let key = self.coll_key(blk, 0, 0, true, mode);
        let plan = self.coll_prepared(Coll::Alltoall, key, &[], || {
            let c = self.coll_choose(Coll::Alltoall, blk, true, mode)?;
            let shape = PlanShape {
                bytes: blk,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Alltoall, &c, shape, &[], &[])?;
            Ok((c, plan))
        })?;
        self.coll_start(
            Coll::Alltoall,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            None,
            mode,
        )
    }
}
