//! MPI_Alltoallv (MPI-4.1 §6.8): alltoall with per-peer counts and displacements.

use super::select::Coll;
use super::PlanShape;
use super::{blocks, check_disjoint, check_len};
use super::{CollRequest, Mode};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Sends `send_counts[j]` elements at `send_displs[j]` to rank j, and receives
    /// `recv_counts[i]` elements from rank i at `recv_displs[i]` (MPI_Alltoallv). What rank
    /// i sends to j must be what j expects from i; receive blocks must not overlap.
    #[allow(clippy::too_many_arguments)]
    pub fn alltoallv<T: Pod>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        self.alltoallv_start(
            send,
            send_counts,
            send_displs,
            recv,
            recv_counts,
            recv_displs,
            Mode::Blocking,
        )?
        .wait()
    }

    /// Starts [`Comm::alltoallv`] (MPI_Ialltoallv).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read and write the buffers.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn ialltoallv<'a, T: Pod>(
        &self,
        send: &'a [T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &'a mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<CollRequest<'a>> {
        self.alltoallv_start(
            send,
            send_counts,
            send_displs,
            recv,
            recv_counts,
            recv_displs,
            Mode::Nonblocking,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn alltoallv_start<'a, T: Pod>(
        &self,
        send: &'a [T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &'a mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.check()?;
        let (rank, size) = (self.rank(), self.size());
        let c = Coll::Alltoallv;
        let es = std::mem::size_of::<T>();
        let mut key = self.coll_key(send.len(), 0, es, true, mode);
        key.extra = recv.len();
        let arrays = [send_counts, send_displs, recv_counts, recv_displs];
        let plan = self.coll_prepared(c, key, &arrays, || {
            check_len(c, rank, "send_counts", send_counts.len(), size)?;
            check_len(c, rank, "send_displs", send_displs.len(), size)?;
            check_len(c, rank, "recv_counts", recv_counts.len(), size)?;
            check_len(c, rank, "recv_displs", recv_displs.len(), size)?;
            let sb = blocks(c, rank, "send", send_counts, send_displs, send.len(), es)?;
            let rb = blocks(c, rank, "receive", recv_counts, recv_displs, recv.len(), es)?;
            check_disjoint(c, rank, "receive", &rb)?;
            if sb[rank as usize].1 != rb[rank as usize].1 {
                return Err(super::count_error(
                    c,
                    rank,
                    "the block to itself (recv_counts[rank])",
                    recv_counts[rank as usize],
                    send_counts[rank as usize],
                ));
            }
            let avg = send_counts.iter().sum::<usize>() * es / size as usize;
            let choice = self.coll_choose(c, avg, true, mode)?;
            let shape = PlanShape {
                bytes: avg,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(c, &choice, shape, &sb, &rb)?;
            Ok((choice, plan))
        })?;
        self.coll_start(
            c,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            None,
            mode,
        )
    }
}
