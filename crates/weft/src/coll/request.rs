//! Nonblocking collectives (MPI-4.1 §6.12): a [`CollRequest`] owns a started schedule and
//! advances it when tested or waited; a blocking collective is the same request waited at
//! once. Also the per-communicator count of collectives started, which keeps the traffic of
//! several outstanding collectives on one communicator apart.
//!
//! Depends on the schedule and the engine's progress; knows nothing of algorithms.

use super::schedule::Schedule;
use crate::comm::Comm;
use weft_core::Result;

/// A collective in flight: its schedule, bound to buffers borrowed for `'a`.
///
/// The schedule moves only inside [`CollRequest::test`], [`CollRequest::wait`],
/// [`CollRequest::wait_all`] and at its start (messages already posted complete in the engine
/// meanwhile), so a rank that blocks elsewhere without testing its outstanding collectives
/// can keep its peers waiting — as with MPI's weak progress. When ranks complete several
/// collectives in different orders, complete them with `wait_all` or a loop of `test`: a
/// `wait` on one while a peer waits on another would wait for ever. Dropping an unfinished request waits for it (its error, if any, is
/// lost); leaking one (`std::mem::forget`) would leave the engine with pointers into the
/// borrowed buffers, which is why the functions that start one are `unsafe`.
#[must_use = "a collective request does nothing until it is tested or waited"]
pub struct CollRequest<'a> {
    comm: Comm,
    schedule: Schedule<'a>,
    finished: bool,
}

impl std::fmt::Debug for CollRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CollRequest({} on {:?}, finished: {})",
            self.schedule.what(),
            self.comm,
            self.finished
        )
    }
}

impl<'a> CollRequest<'a> {
    /// Wraps a schedule and moves it as far as it goes without waiting (its first step's
    /// messages are posted before this returns).
    pub(crate) fn start(comm: &Comm, schedule: Schedule<'a>) -> Result<CollRequest<'a>> {
        let mut r = CollRequest {
            comm: comm.clone(),
            schedule,
            finished: false,
        };
        r.test()?;
        Ok(r)
    }

    /// Advances the collective without blocking; true once it has completed on this rank
    /// (MPI_Test). After an error the request is finished and later calls return true.
    pub fn test(&mut self) -> Result<bool> {
        if self.finished {
            return Ok(true);
        }
        let mut e = self.comm.engine.borrow_mut();
        let outcome = self.schedule.advance(&mut e);
        self.finished = !matches!(outcome, Ok(false));
        outcome
    }

    /// True once the collective has completed (or failed) on this rank; does not advance it.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Waits until the collective has completed on this rank (MPI_Wait).
    pub fn wait(mut self) -> Result<()> {
        self.finish()
    }

    /// Waits until every request has completed, advancing all of them together, so ranks
    /// may list their outstanding collectives in different orders (MPI_Waitall). Returns the
    /// first error; every request is finished either way.
    pub fn wait_all(mut reqs: Vec<CollRequest<'a>>) -> Result<()> {
        let mut first_err = None;
        loop {
            let mut unfinished = false;
            for r in reqs.iter_mut() {
                match r.test() {
                    Ok(done) => unfinished |= !done,
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            if !unfinished {
                break;
            }
            // Sleep in the engine until some request's current step can move on.
            let engine = reqs[0].comm.engine.clone();
            let mut e = engine.borrow_mut();
            e.wait_until(|e| reqs.iter().any(|r| !r.finished && r.schedule.step_done(e)));
        }
        first_err.map_or(Ok(()), Err)
    }

    fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        let mut e = self.comm.engine.borrow_mut();
        let s = &mut self.schedule;
        let outcome = loop {
            match s.advance(&mut e) {
                Ok(false) => e.wait_until(|e| s.step_done(e)),
                Ok(true) => break Ok(()),
                Err(err) => break Err(err),
            }
        };
        self.finished = true;
        outcome
    }
}

impl Drop for CollRequest<'_> {
    fn drop(&mut self) {
        // The engine may still write into (or read from) the borrowed buffers: finish before
        // the borrow ends. There is no one to give an error to here. A panic that unwinds
        // through a frame holding the engine cannot be waited on (a second panic would
        // abort); the process is going down with that panic anyway.
        if self.comm.engine.try_borrow_mut().is_err() {
            return;
        }
        let _ = self.finish();
    }
}

/// The sequence number of the next collective on `comm`: 0, 1, 2, ... in the order this
/// rank starts them, which MPI requires to be the same order on every rank.
pub(crate) fn next_seq(comm: &Comm) -> u32 {
    let seq = comm.data.coll_seq.get();
    comm.data.coll_seq.set(seq.wrapping_add(1));
    seq
}
