//! MPI_Allreduce (MPI-4.1 §6.9.6) and MPI_Iallreduce (§6.12.8): the element-wise reduction
//! of every rank's buffer, on every rank.

use super::algo;
use super::schedule::{Buf, Plan};
use super::select::{Choice, Coll};
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
            let slot = match c.algo {
                "shm" | "shm_one_shot" => self.coll_shm_slot_bytes().unwrap_or(64),
                _ => 0,
            };
            let shape = PlanShape {
                bytes,
                elem_bytes: es,
                slot_bytes: slot,
                commutative,
                near_first: c.algo == "rabenseifner" && self.coll_near_first(),
                ..PlanShape::default()
            };
            let plan = self.coll_plan(Coll::Allreduce, &c, shape, || {
                self.allreduce_plan(&c, n, es, commutative, slot, shape.near_first)
            })?;
            Ok((c, plan))
        })?;
        self.coll_start(Coll::Allreduce, plan, send, recv, Some(red), mode)
    }

    fn allreduce_plan(
        &self,
        c: &Choice,
        n: usize,
        es: usize,
        commutative: bool,
        slot: usize,
        near_first: bool,
    ) -> Result<Plan> {
        let (rank, size) = (self.rank(), self.size());
        let bytes = n * es;
        Ok(match c.algo {
            "ring" => algo::ring_allreduce::plan(rank, size, n, es),
            "shm" => algo::shm::allreduce(rank, size, n, es, slot),
            "shm_one_shot" => algo::shm_one_shot::allreduce(rank, size, n, es, slot),
            "rabenseifner" => algo::rabenseifner::plan(
                rank,
                size,
                n,
                es,
                algo::rabenseifner::Finish::Everyone,
                near_first,
            ),
            "hier_knomial" => {
                algo::hierarchical::allreduce(rank, &self.coll_nodes(), c.radix, bytes)?
            }
            "knomial" => {
                // Reduce to rank 0, then broadcast from it: 2·log_k n levels.
                let mut p = Plan::new();
                algo::knomial_reduce::build(
                    &mut p,
                    rank,
                    size,
                    0,
                    c.radix,
                    bytes,
                    commutative,
                    Buf::Recv,
                )?;
                algo::knomial_bcast::build(&mut p, rank, size, 0, c.radix, Buf::Recv, bytes)?;
                p
            }
            _ => algo::recursive_doubling::plan(rank, size, bytes, commutative),
        })
    }
}
