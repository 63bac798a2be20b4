//! MPI_Reduce (MPI-4.1 §6.9.1) and MPI_Ireduce (§6.12.7): the element-wise reduction of
//! every rank's buffer, at the root.

use super::algo;
use super::schedule::{Buf, Plan};
use super::select::Coll;
use super::{count_error, elements, reduction, CollRequest, Datatype, Mode, Op, TypeKind};
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
        let (rank, size) = (self.rank(), self.size());
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
        let c = self.coll_choose(Coll::Reduce, bytes, op.is_commutative(), mode)?;
        let mut plan = Plan::new();
        if c.algo == "shm" {
            let slot = self.coll_shm_slot_bytes().unwrap_or(64);
            plan = algo::shm_reduce::plan(rank, size, root, n, kind.size_bytes(), slot);
        } else if c.algo == "hier_knomial" {
            let nodes = self.coll_nodes();
            algo::hierarchical::reduce(&mut plan, rank, &nodes, root, c.radix, bytes, Buf::Recv)?;
        } else if c.algo == "reduce_scatter_gather" {
            plan = algo::rabenseifner::plan(
                rank,
                size,
                n,
                kind.size_bytes(),
                algo::rabenseifner::Finish::Root(root),
            );
        } else {
            algo::knomial_reduce::build(
                &mut plan,
                rank,
                size,
                root,
                c.radix,
                bytes,
                op.is_commutative(),
                Buf::Recv,
            )?;
        }
        let out: &'a mut [u8] = if rank == root { recv } else { &mut [] };
        self.coll_start_rooted(Coll::Reduce, root, plan, send, out, Some(red))
    }
}
