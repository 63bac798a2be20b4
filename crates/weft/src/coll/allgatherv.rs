//! MPI_Allgatherv (MPI-4.1 §6.7): blocks of varying length on every rank, at given
//! displacements.

use super::select::Coll;
use super::PlanShape;
use super::{blocks, check_disjoint, check_len, count_error};
use super::{CollRequest, Mode};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Gathers every rank's `send` into every rank's `recv`: rank i's `counts[i]` elements at
    /// element `displs[i]` (MPI_Allgatherv). Blocks must not overlap.
    pub fn allgatherv<T: Pod>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        self.allgatherv_start(send, recv, counts, displs, Mode::Blocking)?
            .wait()
    }

    /// Starts [`Comm::allgatherv`] (MPI_Iallgatherv).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read and write the buffers.
    pub unsafe fn iallgatherv<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<CollRequest<'a>> {
        self.allgatherv_start(send, recv, counts, displs, Mode::Nonblocking)
    }

    fn allgatherv_start<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.check()?;
        let (rank, size) = (self.rank(), self.size());
        let es = std::mem::size_of::<T>();
        let mine = std::mem::size_of_val(send);
        let mut key = self.coll_key(mine, 0, es, true, mode);
        key.extra = recv.len();
        let arrays = [counts, displs];
        let plan = self.coll_prepared(Coll::Allgatherv, key, &arrays, || {
            check_len(Coll::Allgatherv, rank, "counts", counts.len(), size)?;
            check_len(Coll::Allgatherv, rank, "displs", displs.len(), size)?;
            let layout = blocks(
                Coll::Allgatherv,
                rank,
                "receive",
                counts,
                displs,
                recv.len(),
                es,
            )?;
            check_disjoint(Coll::Allgatherv, rank, "receive", &layout)?;
            if counts[rank as usize] != send.len() {
                return Err(count_error(
                    Coll::Allgatherv,
                    rank,
                    "the send buffer",
                    send.len(),
                    counts[rank as usize],
                ));
            }
            // Every rank must choose alike: by the largest block, which all of them know
            // (their own blocks differ, and the area and the ring do not mix).
            let largest = layout.iter().map(|&(_, len)| len).max().unwrap_or(0);
            let c = self.coll_choose(Coll::Allgatherv, largest, true, mode)?;
            let shape = PlanShape {
                bytes: largest,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Allgatherv, &c, shape, &[], &layout)?;
            Ok((c, plan))
        })?;
        self.coll_start(
            Coll::Allgatherv,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            None,
            mode,
        )
    }
}
