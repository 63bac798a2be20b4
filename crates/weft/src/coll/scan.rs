//! MPI_Scan (MPI-4.1 §6.11.1) and MPI_Iscan (§6.12.14): inclusive prefix reduction in rank order.

use super::select::Coll;
use super::PlanShape;
use super::{count_error, elements, reduction, CollRequest, Datatype, Mode, Op, TypeKind};
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Leaves `send₀ ∘ … ∘ send_r` in rank r's `recv` (MPI_Scan); `recv` is as long as
    /// `send`. Any operation, commutative or not.
    pub fn scan<T: Datatype>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        self.scan_bytes(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            T::KIND,
            op,
        )
    }

    /// Starts [`Comm::scan`] (MPI_Iscan).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read `send` and write `recv`.
    pub unsafe fn iscan<'a, T: Datatype>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        op: &Op,
    ) -> Result<CollRequest<'a>> {
        self.scan_start(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            T::KIND,
            op,
            Mode::Nonblocking,
        )
    }

    /// [`Comm::scan`] on byte buffers holding elements of `kind` (aligned for it).
    pub fn scan_bytes(&self, send: &[u8], recv: &mut [u8], kind: TypeKind, op: &Op) -> Result<()> {
        if let Some(done) = self.coll_repeat(Coll::Scan, 0, send, recv, Some((kind, op))) {
            return done;
        }
        self.scan_start(send, recv, kind, op, Mode::Blocking)?
            .wait()
    }

    /// [`Comm::iscan`] on byte buffers holding elements of `kind` (aligned for it).
    ///
    /// # Safety
    /// As for [`Comm::iscan`].
    pub unsafe fn iscan_bytes<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        kind: TypeKind,
        op: &Op,
    ) -> Result<CollRequest<'a>> {
        self.scan_start(send, recv, kind, op, Mode::Nonblocking)
    }

    fn scan_start<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        kind: TypeKind,
        op: &Op,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.check()?;
        let rank = self.rank();
        let red = reduction(Coll::Scan, rank, op, kind)?;
        let n = elements(Coll::Scan, rank, "the send buffer", send, kind)?;
        let got = elements(Coll::Scan, rank, "the receive buffer", recv, kind)?;
        if got != n {
            return Err(count_error(Coll::Scan, rank, "the receive buffer", got, n));
        }
        let bytes = send.len();
        let commutative = op.is_commutative();
        let key = self.coll_key(bytes, 0, kind.size_bytes(), commutative, mode);
        let plan = self.coll_prepared(Coll::Scan, key, &[], || {
            let c = self.coll_choose(Coll::Scan, bytes, commutative, mode)?;
            let shape = PlanShape {
                bytes,
                commutative,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Scan, &c, shape, &[], &[])?;
            Ok((c, plan))
        })?;
        self.coll_start(Coll::Scan, plan, send, recv, Some(red), mode)
    }
}
