//! MPI_Reduce_scatter_block (MPI-4.1 §6.10.1) and MPI_Ireduce_scatter_block (§6.12.9): the
//! reduction of every rank's buffer, block i of it to rank i.

use super::select::Coll;
use super::{count_error, elements, reduction, CollRequest, Datatype, Mode, Op, TypeKind};
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Combines every rank's `send` with `op` and leaves block i (of `recv.len()` elements)
    /// of the result in rank i's `recv` (MPI_Reduce_scatter_block); `send` holds
    /// `size·recv.len()` elements.
    pub fn reduce_scatter_block<T: Datatype>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &Op,
    ) -> Result<()> {
        self.reduce_scatter_block_bytes(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            T::KIND,
            op,
        )
    }

    /// Starts [`Comm::reduce_scatter_block`] (MPI_Ireduce_scatter_block).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read `send` and write `recv`.
    pub unsafe fn ireduce_scatter_block<'a, T: Datatype>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        op: &Op,
    ) -> Result<CollRequest<'a>> {
        self.reduce_scatter_block_start(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            T::KIND,
            op,
            Mode::Nonblocking,
        )
    }

    /// [`Comm::reduce_scatter_block`] on byte buffers holding elements of `kind` (aligned
    /// for it).
    pub fn reduce_scatter_block_bytes(
        &self,
        send: &[u8],
        recv: &mut [u8],
        kind: TypeKind,
        op: &Op,
    ) -> Result<()> {
        let c = Coll::ReduceScatterBlock;
        if let Some(done) = self.coll_repeat(c, 0, send, recv, Some((kind, op))) {
            return done;
        }
        self.reduce_scatter_block_start(send, recv, kind, op, Mode::Blocking)?
            .wait()
    }

    /// [`Comm::ireduce_scatter_block`] on byte buffers holding elements of `kind` (aligned
    /// for it).
    ///
    /// # Safety
    /// As for [`Comm::ireduce_scatter_block`].
    pub unsafe fn ireduce_scatter_block_bytes<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        kind: TypeKind,
        op: &Op,
    ) -> Result<CollRequest<'a>> {
        self.reduce_scatter_block_start(send, recv, kind, op, Mode::Nonblocking)
    }

    fn reduce_scatter_block_start<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        kind: TypeKind,
        op: &Op,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.check()?;
        let (rank, size) = (self.rank(), self.size());
        let c = Coll::ReduceScatterBlock;
        // Sizes and alignment depend on the buffers: checked on every call, before the memo.
        let n = elements(c, rank, "the receive buffer", recv, kind)?;
        let got = elements(c, rank, "the send buffer", send, kind)?;
        let mut key = self.coll_key(send.len(), 0, kind.size_bytes(), op.is_commutative(), mode);
        key.extra = recv.len();
        let plan = self.coll_prepared(c, key, &[], || {
            if got != n * size as usize {
                return Err(count_error(
                    c,
                    rank,
                    "the send buffer",
                    got,
                    n * size as usize,
                ));
            }
            self.reduce_scatter_plan(c, &vec![n; size as usize], kind, op, mode)
        })?;
        let red = reduction(c, rank, op, kind)?;
        self.coll_start(c, plan, send, recv, Some(red), mode)
    }
}
