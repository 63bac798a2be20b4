//! MPI_Gatherv (MPI-4.1 §6.5): blocks of varying length at the root, at given displacements.
//!
//! The algorithm is linear whatever the tuning (the leaves know only their own count), so a
//! repeated blocking call's leaf needs no plan: it sends its block to the root
//! ([`direct::leaf_send_now`](super::direct::leaf_send_now)), without the memo lookup and
//! the direct run's setup. np=4 on 2 cores, 8 B, callgrind per call: leaf 637 -> 363
//! instructions (Open MPI's 507); coll_lat p50: np=2 0.136 -> 0.115 us (Open MPI 0.160,
//! 9 interleaved jobs), np=4 0.911 -> 0.901 (Open MPI 0.894, 15 jobs: the root waits for
//! its leaves to be scheduled).

use super::select::Coll;
use super::{blocks, check_disjoint, check_len, count_error};
use super::{CollRequest, Mode, PlanShape};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Gathers every rank's `send` into the root's `recv`: rank i's block (of `counts[i]`
    /// elements) at element `displs[i]` (MPI_Gatherv). `counts`, `displs` and `recv` matter
    /// at the root only; blocks must not overlap.
    pub fn gatherv<T: Pod>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: u32,
    ) -> Result<()> {
        if self.rank() != root {
            let bytes = bytemuck::cast_slice(send);
            if let Some(done) = super::direct::leaf_send_now(self, Coll::Gatherv, root, bytes) {
                return done;
            }
        }
        self.gatherv_start(send, recv, counts, displs, root, Mode::Blocking)?
            .wait()
    }

    /// Starts [`Comm::gatherv`] (MPI_Igatherv).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read and write the buffers.
    pub unsafe fn igatherv<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
        root: u32,
    ) -> Result<CollRequest<'a>> {
        self.gatherv_start(send, recv, counts, displs, root, Mode::Nonblocking)
    }

    fn gatherv_start<'a, T: Pod>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
        root: u32,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.coll_check_root(Coll::Gatherv, root)?;
        let (rank, size) = (self.rank(), self.size());
        let es = std::mem::size_of::<T>();
        let mine = std::mem::size_of_val(send);
        // The arrays and the receive buffer matter at the root only.
        let mut key = self.coll_key(mine, root, es, true, mode);
        let both = [counts, displs];
        let arrays: &[&[usize]] = if rank == root {
            key.extra = recv.len();
            &both
        } else {
            &[]
        };
        let plan = self.coll_prepared(Coll::Gatherv, key, arrays, || {
            let mut layout = Vec::new();
            if rank == root {
                check_len(Coll::Gatherv, rank, "counts", counts.len(), size)?;
                check_len(Coll::Gatherv, rank, "displs", displs.len(), size)?;
                layout = blocks(
                    Coll::Gatherv,
                    rank,
                    "receive",
                    counts,
                    displs,
                    recv.len(),
                    es,
                )?;
                check_disjoint(Coll::Gatherv, rank, "receive", &layout)?;
                if counts[rank as usize] != send.len() {
                    return Err(count_error(
                        Coll::Gatherv,
                        rank,
                        "the root's send buffer",
                        send.len(),
                        counts[rank as usize],
                    ));
                }
            }
            let c = self.coll_choose(Coll::Gatherv, mine, true, mode)?;
            let shape = PlanShape {
                bytes: mine,
                root,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Gatherv, &c, shape, &[], &layout)?;
            Ok((c, plan))
        })?;
        let out: &'a mut [T] = if rank == root { recv } else { &mut [] };
        self.coll_start_rooted(
            Coll::Gatherv,
            root,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(out),
            None,
            mode,
        )
    }
}
