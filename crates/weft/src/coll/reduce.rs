//! MPI_Reduce (MPI-4.1 §6.9.1) and MPI_Ireduce (§6.12.7): the element-wise reduction of
//! every rank's buffer, at the root.

use super::select::Coll;
use super::{
    count_error, elements, reduction, CollRequest, Datatype, Mode, Op, PlanShape, TypeKind,
};
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Combines every rank's `send` with `op` into the root's `recv` (MPI_Reduce). `recv`
    /// must be as long as `send` at the root and is not touched elsewhere (pass `&mut []`).
    /// A non-commutative `op` is applied in rank order.
    pub fn reduce<T: Datatype>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &Op,
        root: u32,
    ) -> Result<()> {
        self.reduce_bytes(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            T::KIND,
            op,
            root,
        )
    }

    /// Starts [`Comm::reduce`] (MPI_Ireduce).
    ///
    /// # Safety
    /// The request must not be leaked (`std::mem::forget`, a reference cycle): until it is
    /// finished, waited or dropped the engine may read `send` and write `recv`.
    pub unsafe fn ireduce<'a, T: Datatype>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        op: &Op,
        root: u32,
    ) -> Result<CollRequest<'a>> {
        self.reduce_start(
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            T::KIND,
            op,
            root,
            Mode::Nonblocking,
        )
    }

    /// [`Comm::reduce`] on byte buffers holding elements of `kind` (aligned for it).
    pub fn reduce_bytes(
        &self,
        send: &[u8],
        recv: &mut [u8],
        kind: TypeKind,
        op: &Op,
        root: u32,
    ) -> Result<()> {
        // Only the root's receive buffer counts, as in the usual way.
        let out: &mut [u8] = if root == self.rank() {
            &mut *recv
        } else {
            &mut []
        };
        if let Some(done) = self.coll_repeat(Coll::Reduce, root, send, out, Some((kind, op))) {
            return done;
        }
        self.reduce_start(send, recv, kind, op, root, Mode::Blocking)?
            .wait()
    }

    /// [`Comm::ireduce`] on byte buffers holding elements of `kind` (aligned for it).
    ///
    /// # Safety
    /// As for [`Comm::ireduce`].
    pub unsafe fn ireduce_bytes<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        kind: TypeKind,
        op: &Op,
        root: u32,
    ) -> Result<CollRequest<'a>> {
        self.reduce_start(send, recv, kind, op, root, Mode::Nonblocking)
    }

    fn reduce_start<'a>(
        &self,
        send: &'a [u8],
        recv: &'a mut [u8],
        kind: TypeKind,
        op: &Op,
        root: u32,
        mode: Mode,
    ) -> Result<CollRequest<'a>> {
        self.coll_check_root(Coll::Reduce, root)?;
        let rank = self.rank();
        let red = reduction(Coll::Reduce, rank, op, kind)?;
        let n = elements(Coll::Reduce, rank, "the send buffer", send, kind)?;
        if rank == root {
            let got = elements(Coll::Reduce, rank, "the root's receive buffer", recv, kind)?;
            if got != n {
                return Err(count_error(
                    Coll::Reduce,
                    rank,
                    "the root's receive buffer",
                    got,
                    n,
                ));
            }
        }
        let bytes = send.len();
        let commutative = op.is_commutative();
        let es = kind.size_bytes();
        let key = self.coll_key(bytes, root, es, commutative, mode);
        let plan = self.coll_prepared(Coll::Reduce, key, &[], || {
            let c = self.coll_choose(Coll::Reduce, bytes, commutative, mode)?;
            let shape = PlanShape {
                bytes,
                root,
                elem_bytes: es,
                commutative,
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Reduce, &c, shape, &[], &[])?;
            Ok((c, plan))
        })?;
        let out: &'a mut [u8] = if rank == root { recv } else { &mut [] };
        self.coll_start_rooted(Coll::Reduce, root, plan, send, out, Some(red), mode)
    }
}
