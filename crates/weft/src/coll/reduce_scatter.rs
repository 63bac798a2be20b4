//! MPI_Reduce_scatter (MPI-4.1 §6.10.2): the reduction of every rank's buffer, cut into
//! blocks of given counts, block i to rank i. Also carries the algorithms shared with
//! reduce_scatter_block.

use super::algo;
use super::schedule::{Buf, Plan};
use super::select::Coll;
use super::{check_len, count_error, reduction, Datatype, Op};
use crate::comm::Comm;
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
        self.check()?;
        let (rank, size) = (self.rank(), self.size());
        check_len(Coll::ReduceScatter, rank, "counts", counts.len(), size)?;
        let total: usize = counts.iter().sum();
        if send.len() != total {
            return Err(count_error(
                Coll::ReduceScatter,
                rank,
                "the send buffer (sum of counts)",
                send.len(),
                total,
            ));
        }
        if recv.len() != counts[rank as usize] {
            return Err(count_error(
                Coll::ReduceScatter,
                rank,
                "the receive buffer (counts[rank])",
                recv.len(),
                counts[rank as usize],
            ));
        }
        self.reduce_scatter_impl(Coll::ReduceScatter, send, recv, counts, op)
    }

    pub(crate) fn reduce_scatter_impl<T: Datatype>(
        &self,
        coll: Coll,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: &Op,
    ) -> Result<()> {
        let (rank, size) = (self.rank(), self.size());
        let red = reduction::<T>(coll, rank, op)?;
        let es = std::mem::size_of::<T>();
        let mut off = 0;
        let blocks: Vec<(usize, usize)> = counts
            .iter()
            .map(|&c| {
                let b = (off * es, c * es);
                off += c;
                b
            })
            .collect();
        let total = off * es;
        let c = self.coll_choose(coll, total / size as usize, op.is_commutative())?;
        let plan = match c.algo {
            "ring" => algo::ring_reduce_scatter::plan(rank, size, &blocks, total),
            _ => {
                // Reduce the whole buffer to rank 0 (in rank order), then scatter its blocks.
                let mut p = Plan::new();
                let full = if rank == 0 { p.tmp(total) } else { Buf::Recv };
                algo::knomial_reduce::build(
                    &mut p,
                    rank,
                    size,
                    0,
                    c.radix,
                    total,
                    op.is_commutative(),
                    full,
                )?;
                algo::linear_scatter::build(
                    &mut p,
                    rank,
                    0,
                    &blocks,
                    blocks[rank as usize].1,
                    full,
                );
                p
            }
        };
        self.coll_run(
            coll,
            plan,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            Some(red),
        )
    }
}
