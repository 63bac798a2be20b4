//! MPI_Allreduce (MPI-4.1 §6.9.6) and MPI_Iallreduce (§6.12.8): the element-wise reduction
//! of every rank's buffer, on every rank.

use super::select::Coll;
use super::{
    count_error, elements, reduction, CollRequest, Datatype, Mode, Op, PlanShape, TypeKind,
};
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Combines every rank's `send` with `op` into every rank's `recv` (MPI_Allreduce);
    /// `recv` is as long as `send`. A non-commutative `op` is applied in rank order.
    pub fn allreduce<T: Datatype>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        self.allreduce_bytes(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            T::KIND,
            op,
        )
    }

    /// Starts [`Comm::allreduce`] (MPI_Iallreduce).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read `send` and write `recv`.
    pub unsafe fn iallreduce<'a, T: Datatype>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        op: &Op,
    ) -> Result<CollRequest<'a>> {
        self.allreduce_start(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            T::KIND,
            op,
            Mode::Nonblocking,
        )
    }

    /// [`Comm::allreduce`] on byte buffers holding elements of `kind` (aligned for it).
    pub fn allreduce_bytes(
        &self,
        send: &[u8],
        recv: &mut [u8],
        kind: TypeKind,
        op: &Op,
    ) -> Result<()> {
        if let Some(done) = self.coll_repeat(Coll::Allreduce, 0, send, recv, Some((kind, op))) {
            return done;
        }
        self.allreduce_start(send, recv, kind, op, Mode::Blocking)?
            .wait()
    }

    /// [`Comm::iallreduce`] on byte buffers holding elements of `kind` (aligned for it).
    ///
    /// # Safety
    /// As for [`Comm::iallreduce`].
    pub unsafe fn iallreduce_bytes<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        kind: TypeKind,
        op: &Op,
    ) -> Result<CollRequest<'a>> {
        self.allreduce_start(send, recv, kind, op, Mode::Nonblocking)
    }

    fn allreduce_start<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        kind: TypeKind,
        op: &Op,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.check()?;
        let rank = self.rank();
        let red = reduction(Coll::Allreduce, rank, op, kind)?;
        let n = elements(Coll::Allreduce, rank, "the send buffer", send, kind)?;
        let got = elements(Coll::Allreduce, rank, "the receive buffer", recv, kind)?;
        if got != n {
            return Err(count_error(
                Coll::Allreduce,
                rank,
                "the receive buffer",
                got,
                n,
            ));
        }
        let es = kind.size_bytes();
        let bytes = send.len();
        let commutative = op.is_commutative();
        let key = self.coll_key(bytes, 0, es, commutative, mode);
        let plan = self.coll_prepared(Coll::Allreduce, key, &[], || {
            let c = self.coll_choose(Coll::Allreduce, bytes, commutative, mode)?;
            let shape = PlanShape {
                bytes,
                elem_bytes: es,
                commutative,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Allreduce, &c, shape, &[], &[])?;
            Ok((c, plan))
        })?;
        self.coll_start(Coll::Allreduce, plan, send, recv, Some(red), mode)
    }
}
