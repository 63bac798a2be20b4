//! MPI_Scatterv (MPI-4.1 §6.6): blocks of varying length from the root, at given
//! displacements.

use super::algo;
use super::schedule::{Buf, Plan};
use super::select::Coll;
use super::{blocks, check_len, count_error};
use super::{CollRequest, Mode};
use crate::comm::Comm;
use bytemuck::Pod;
use std::rc::Rc;
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
        self.scatterv_start(send, counts, displs, recv, root, Mode::Blocking)?
            .wait()
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
            debug_assert_eq!(c.algo, "linear");
            let mut plan = Plan::new();
            algo::linear_scatter::build(&mut plan, rank, root, &layout, mine, Buf::Send);
            let plan = Rc::new(plan);
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
