//! MPI_Exscan (MPI-4.1 §6.11.2) and MPI_Iexscan (§6.12.15): exclusive prefix reduction in
//! rank order.

use super::select::Coll;
use super::PlanShape;
use super::{count_error, elements, reduction, CollRequest, Datatype, Mode, Op, TypeKind};
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Leaves `send₀ ∘ … ∘ send_{r−1}` in rank r's `recv` (MPI_Exscan); rank 0's `recv` is
    /// not touched. `recv` is as long as `send`. Any operation, commutative or not.
    pub fn exscan<T: Datatype>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        self.exscan_bytes(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            T::KIND,
            op,
        )
    }

    /// Starts [`Comm::exscan`] (MPI_Iexscan).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read `send` and write `recv`.
    pub unsafe fn iexscan<'a, T: Datatype>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        op: &Op,
    ) -> Result<CollRequest<'a>> {
        self.exscan_start(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            T::KIND,
            op,
            Mode::Nonblocking,
        )
    }

    /// [`Comm::exscan`] on byte buffers holding elements of `kind` (aligned for it).
    pub fn exscan_bytes(
        &self,
        send: &[u8],
        recv: &mut [u8],
        kind: TypeKind,
        op: &Op,
    ) -> Result<()> {
        if let Some(done) = self.coll_repeat(Coll::Exscan, 0, send, recv, Some((kind, op))) {
            return done;
        }
        self.exscan_start(send, recv, kind, op, Mode::Blocking)?
            .wait()
    }

    /// [`Comm::iexscan`] on byte buffers holding elements of `kind` (aligned for it).
    ///
    /// # Safety
    /// As for [`Comm::iexscan`].
    pub unsafe fn iexscan_bytes<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        kind: TypeKind,
        op: &Op,
    ) -> Result<CollRequest<'a>> {
        self.exscan_start(send, recv, kind, op, Mode::Nonblocking)
    }

    fn exscan_start<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        kind: TypeKind,
        op: &Op,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.check()?;
        let rank = self.rank();
        let red = reduction(Coll::Exscan, rank, op, kind)?;
        let n = elements(Coll::Exscan, rank, "the send buffer", send, kind)?;
        let got = elements(Coll::Exscan, rank, "the receive buffer", recv, kind)?;
        if got != n {
            return Err(count_error(
                Coll::Exscan,
                rank,
                "the receive buffer",
                got,
                n,
            ));
        }
        let bytes = send.len();
        let commutative = op.is_commutative();
        let key = self.coll_key(bytes, 0, kind.size_bytes(), commutative, mode);
        let plan = self.coll_prepared(Coll::Exscan, key, &[], || {
            let c = self.coll_choose(Coll::Exscan, bytes, commutative, mode)?;
            let shape = PlanShape {
                bytes,
                commutative,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Exscan, &c, shape, &[], &[])?;
            Ok((c, plan))
        })?;
        self.coll_start(Coll::Exscan, plan, send, recv, Some(red), mode)
    }
}
