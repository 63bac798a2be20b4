//! MPI_Reduce_scatter (MPI-4.1 §6.10.2) and MPI_Ireduce_scatter (§6.12.10): the reduction of
//! every rank's buffer, cut into blocks of given counts, block i to rank i. Also carries the
//! algorithms shared with reduce_scatter_block.

use super::schedule::Plan;
use super::select::{Choice, Coll};
use super::PlanShape;
use super::TypeKind;
use super::{check_len, count_error, elements, reduction, CollRequest, Datatype, Mode, Op};
use crate::comm::Comm;
use std::rc::Rc;
use weft_core::Result;

impl Comm {
    /// Combines every rank's `send` with `op` and leaves `counts[i]` elements of the result
    /// (from element `counts[0] + … + counts[i−1]`) in rank i's `recv` (MPI_Reduce_scatter).
    pub fn reduce_scatter<T: Datatype>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: &Op,
    ) -> Result<()> {
        self.reduce_scatter_bytes(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            counts,
            T::KIND,
            op,
        )
    }

    /// Starts [`Comm::reduce_scatter`] (MPI_Ireduce_scatter).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read `send` and write `recv`.
    pub unsafe fn ireduce_scatter<'a, T: Datatype>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        op: &Op,
    ) -> Result<CollRequest<'a>> {
        self.reduce_scatter_start(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            counts,
            T::KIND,
            op,
            Mode::Nonblocking,
        )
    }

    /// [`Comm::reduce_scatter`] on byte buffers holding elements of `kind` (aligned for it);
    /// `counts` are in elements.
    pub fn reduce_scatter_bytes(
        &self,
        send: &[u8],
        recv: &mut [u8],
        counts: &[usize],
        kind: TypeKind,
        op: &Op,
    ) -> Result<()> {
        self.reduce_scatter_start(send, recv, counts, kind, op, Mode::Blocking)?
            .wait()
    }

    /// [`Comm::ireduce_scatter`] on byte buffers holding elements of `kind` (aligned for
    /// it); `counts` are in elements.
    ///
    /// # Safety
    /// As for [`Comm::ireduce_scatter`].
    pub unsafe fn ireduce_scatter_bytes<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        counts: &[usize],
        kind: TypeKind,
        op: &Op,
    ) -> Result<CollRequest<'a>> {
        self.reduce_scatter_start(send, recv, counts, kind, op, Mode::Nonblocking)
    }

    fn reduce_scatter_start<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        counts: &[usize],
        kind: TypeKind,
        op: &Op,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.check()?;
        let (rank, size) = (self.rank(), self.size());
        let c = Coll::ReduceScatter;
        // Sizes and alignment depend on the buffers, not on the call's inputs: checked on
        // every call, before the memo.
        let n = elements(c, rank, "the send buffer", send, kind)?;
        let got = elements(c, rank, "the receive buffer", recv, kind)?;
        let mut key = self.coll_key(send.len(), 0, kind.size_bytes(), op.is_commutative(), mode);
        key.extra = recv.len();
        let plan = self.coll_prepared(c, key, &[counts], || {
            check_len(c, rank, "counts", counts.len(), size)?;
            let total: usize = counts.iter().sum();
            if n != total {
                return Err(count_error(
                    c,
                    rank,
                    "the send buffer (sum of counts)",
                    n,
                    total,
                ));
            }
            if got != counts[rank as usize] {
                return Err(count_error(
                    c,
                    rank,
                    "the receive buffer (counts[rank])",
                    got,
                    counts[rank as usize],
                ));
            }
            self.reduce_scatter_plan(c, counts, kind, op, mode)
        })?;
        let red = reduction(c, rank, op, kind)?;
        self.coll_start(c, plan, send, recv, Some(red), mode)
    }

    /// The choice and plan of a reduce-scatter with blocks of `counts` elements (checked by
    /// the caller) for either form.
    pub(crate) fn reduce_scatter_plan(
        &self,
        coll: Coll,
        counts: &[usize],
        kind: TypeKind,
        op: &Op,
        mode: Mode,
    ) -> Result<(Choice, Rc<Plan>)> {
        let size = self.size();
        let es = kind.size_bytes();
        let mut off = 0;
        let blocks: Vec<(usize, usize)> = counts
            .iter()
            .map(|&c| {
                let b = (off * es, c * es);
                off += c;
                b
            })
            .collect();
        let bytes = off * es / size as usize;
        let c = self.coll_choose(coll, bytes, op.is_commutative(), mode)?;
        let shape = PlanShape {
            bytes,
            elem_bytes: es,
            commutative: op.is_commutative(),
            ..PlanShape::default()
        };
        let plan = self.coll_plan(coll, &c, shape, &blocks, &[])?;
        Ok((c, plan))
    }
}
