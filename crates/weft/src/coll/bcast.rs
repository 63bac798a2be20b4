//! MPI_Bcast (MPI-4.1 §6.4): the root's buffer is copied to every rank.

use super::select::Coll;
use super::{CollRequest, Mode, PlanShape};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Copies `buf` of rank `root` into `buf` of every rank (MPI_Bcast). Every rank passes
    /// the same length; a rank whose length differs from the root's gets an `InvalidCount`
    /// error.
    pub fn bcast<T: Pod>(&self, buf: &mut [T], root: u32) -> Result<()> {
        let bytes = bytemuck::cast_slice_mut(&mut *buf);
        if let Some(done) = self.coll_repeat(Coll::Bcast, root, &[], bytes, None) {
            return done;
        }
        self.bcast_start(buf, root, Mode::Blocking)?.wait()
    }

    /// Starts [`Comm::bcast`] (MPI_Ibcast).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read and write the buffers.
    pub unsafe fn ibcast<'a, T: Pod>(
        &self,
        buf: &'a mut [T],
        root: u32,
    ) -> Result<CollRequest<'a>> {
        self.bcast_start(buf, root, Mode::Nonblocking)
    }

    fn bcast_start<'a, T: Pod>(
        &self,
        buf: &'a mut [T],
        root: u32,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.coll_check_root(Coll::Bcast, root)?;
        let bytes = std::mem::size_of_val(buf);
        let key = self.coll_key(bytes, root, 0, true, mode);
        let plan = self.coll_prepared(Coll::Bcast, key, &[], || {
            let c = self.coll_choose(Coll::Bcast, bytes, true, mode)?;
            let shape = PlanShape {
                bytes,
                root,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Bcast, &c, shape, &[], &[])?;
            Ok((c, plan))
        })?;
        let buf: &'a mut [u8] = bytemuck::cast_slice_mut(buf);
        self.coll_start_rooted(Coll::Bcast, root, plan, &[], buf, None, mode)
    }
}
