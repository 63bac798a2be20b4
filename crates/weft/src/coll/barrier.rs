//! MPI_Barrier (MPI-4.1 §6.3): no rank leaves before every rank has entered.

use super::algo;
use super::schedule::{Buf, Plan};
use super::select::Coll;
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Blocks until every rank of the communicator has called `barrier` (MPI_Barrier).
    pub fn barrier(&self) -> Result<()> {
        self.check()?;
        let c = self.coll_choose(Coll::Barrier, 0, true)?;
        let plan = match c.algo {
            "shm_counter" => algo::shm::barrier(),
            "knomial" => {
                // Empty messages up a k-nomial tree to rank 0, then back down it.
                let mut p = Plan::new();
                let (rank, size) = (self.rank(), self.size());
                algo::knomial_reduce::build(&mut p, rank, size, 0, c.radix, 0, true, Buf::Recv)?;
                algo::knomial_bcast::build(&mut p, rank, size, 0, c.radix, Buf::Recv, 0)?;
                p
            }
            _ => algo::dissemination::plan(self.rank(), self.size()),
        };
        self.coll_run(Coll::Barrier, plan, &[], &mut [], None)
    }
}
