//! MPI_Barrier (MPI-4.1 §6.3) and MPI_Ibarrier (§6.12.1): no rank leaves before every rank
//! has entered.

use super::select::Coll;
use super::{CollRequest, Mode, PlanShape};
use crate::comm::Comm;
use weft_core::Result;

impl Comm {
    /// Blocks until every rank of the communicator has called `barrier` (MPI_Barrier).
    ///
    /// A barrier that was complete at its first look (the rank that arrives last at a
    /// counter barrier, the node's leader at a leader barrier, or a rank scheduled again
    /// only after everyone arrived) makes one progress pass before it returns: without it,
    /// a receive posted before the barrier would not be matched, nor a large or synchronous
    /// sender answered, until the rank's next call, however long the work that follows.
    /// A barrier that waited has polled already (at most a few polls' time before the end).
    pub fn barrier(&self) -> Result<()> {
        let passes = self.engine.borrow().progress_passes();
        self.barrier_start(Mode::Blocking)?.wait()?;
        let mut e = self.engine.borrow_mut();
        if e.progress_passes() == passes {
            e.clear_advancing();
            e.progress();
        }
        Ok(())
    }

    /// Starts a barrier (MPI_Ibarrier): the request completes once every rank has started
    /// it. It borrows no buffer, so it is safe to keep or leak.
    pub fn ibarrier(&self) -> Result<CollRequest<'static>> {
        self.barrier_start(Mode::Nonblocking)
    }

    fn barrier_start(&self, mode: Mode) -> Result<CollRequest<'static>> {
        self.check()?;
        let key = self.coll_key(0, 0, 0, true, mode);
        let plan = self.coll_prepared(Coll::Barrier, key, &[], || {
            let c = self.coll_choose(Coll::Barrier, 0, true, mode)?;
            let plan = self.coll_plan(Coll::Barrier, &c, PlanShape::default(), &[], &[])?;
            Ok((c, plan))
        })?;
        self.coll_start(Coll::Barrier, plan, &[], &mut [], None, mode)
    }
}
