//! MPI_Scatterv (MPI-4.1 §6.6): blocks of varying length from the root, at given
//! displacements.
//!
//! The algorithm is linear whatever the tuning (the leaves know only their own count), so a
//! repeated blocking call needs no plan: the root checks its arrays and sends each block
//! ([`direct::root_scatter_now`](super::direct::root_scatter_now)), a leaf whose message
//! is already here takes it ([`direct::leaf_take_now`](super::direct::leaf_take_now)),
//! without the memo lookup that compares the arrays and the direct run's setup. np=4 on 2
//! cores, 8 B, callgrind per call: root 1684 -> 1353 instructions, leaf 638 -> 364 (Open
//! MPI's 1581 and 590); coll_lat p50, 5 interleaved jobs: 0.145 -> 0.123 us (Open MPI
//! 0.123), np=2 0.165 -> 0.140 (Open MPI 0.165).

use super::select::Coll;
use super::PlanShape;
use super::{blocks, check_len, count_error};
use super::{CollRequest, Mode};
use crate::comm::Comm;
use bytemuck::Pod;
use weft_core::Result;

impl Comm {
    /// Sends `counts[i]` elements at element `displs[i]` of the root's `send` to rank i's
    /// `recv` (MPI_Scatterv). `send`, `counts` and `displs` matter at the root only.
    pub fn scatterv<T: Pod>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: u32,
    ) -> Result<()> {
        if self.rank() != root {
            let bytes = bytemuck::cast_slice_mut(recv);
            if super::direct::leaf_take_now(self, Coll::Scatterv, root, bytes) {
                return Ok(());
            }
        } else if let Some(done) = self.scatterv_root_now(send, counts, displs, recv, root) {
            return done;
        }
        self.scatterv_start(send, counts, displs, recv, root, Mode::Blocking)?
            .wait()
    }

    /// A blocking call at the root, run without its plan when the arguments are good
    /// ([`direct::root_scatter_now`](super::direct::root_scatter_now)); None when they are
    /// not (the usual way reports it) or the call cannot run so.
    #[inline(always)]
    fn scatterv_root_now<T: Pod>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: u32,
    ) -> Option<Result<()>> {
        let size = self.size() as usize;
        if counts.len() != size || displs.len() != size || counts[root as usize] != recv.len() {
            return None;
        }
        let fits = counts
            .iter()
            .zip(displs)
            .all(|(&c, &d)| c == 0 || d.checked_add(c).is_some_and(|end| end <= send.len()));
        if !fits {
            return None;
        }
        let es = std::mem::size_of::<T>();
        super::direct::root_scatter_now(
            self,
            Coll::Scatterv,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            // An empty block's displacement means nothing (MPI gives it none).
            |i| match counts[i] {
                0 => (0, 0),
                c => (displs[i] * es, c * es),
            },
        )
    }

    /// Starts [`Comm::scatterv`] (MPI_Iscatterv).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read and write the buffers.
    pub unsafe fn iscatterv<'a, T: Pod>(
        &self,
        send: &'a [T],
        counts: &[usize],
        displs: &[usize],
        recv: &'a mut [T],
        root: u32,
    ) -> Result<CollRequest<'a>> {
        self.scatterv_start(send, counts, displs, recv, root, Mode::Nonblocking)
    }

    fn scatterv_start<'a, T: Pod>(
        &self,
        send: &'a [T],
        counts: &[usize],
        displs: &[usize],
        recv: &'a mut [T],
        root: u32,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.coll_check_root(Coll::Scatterv, root)?;
        let (rank, size) = (self.rank(), self.size());
        let es = std::mem::size_of::<T>();
        let mine = std::mem::size_of_val(recv);
        // The arrays and the send buffer matter at the root only.
        let mut key = self.coll_key(mine, root, es, true, mode);
        let both = [counts, displs];
        let arrays: &[&[usize]] = if rank == root {
            key.extra = send.len();
            &both
        } else {
            &[]
        };
        let plan = self.coll_prepared(Coll::Scatterv, key, arrays, || {
            let mut layout = Vec::new();
            if rank == root {
                check_len(Coll::Scatterv, rank, "counts", counts.len(), size)?;
                check_len(Coll::Scatterv, rank, "displs", displs.len(), size)?;
                layout = blocks(Coll::Scatterv, rank, "send", counts, displs, send.len(), es)?;
                if counts[rank as usize] != recv.len() {
                    return Err(count_error(
                        Coll::Scatterv,
                        rank,
                        "the root's receive buffer",
                        recv.len(),
                        counts[rank as usize],
                    ));
                }
            }
            let c = self.coll_choose(Coll::Scatterv, mine, true, mode)?;
            let shape = PlanShape {
                bytes: mine,
                root,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Scatterv, &c, shape, &layout, &[])?;
            Ok((c, plan))
        })?;
        let src: &'a [T] = if rank == root { send } else { &[] };
        self.coll_start_rooted(
            Coll::Scatterv,
            root,
            plan,
            bytemuck::cast_slice(src),
            bytemuck::cast_slice_mut(recv),
            None,
            mode,
        )
    }
}
