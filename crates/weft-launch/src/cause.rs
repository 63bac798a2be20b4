//! Which death of a failing job is its cause: the rule both job loops (single-host and
//! multi-host) apply before they print the one line and pick the exit code.
//!
//! When a rank dies, its peers notice and usually abort in turn (an MPI program's fatal
//! error handler reports "a peer process aborted" and exits with that class, 58). Those
//! aborts can reach the launcher before the death that caused them is seen (a TCP reset
//! arrives before the kernel turns the dead rank into a zombie; another host's agent reports
//! an exit up to a tick later). The rule:
//! - an abort is held for [`ABORT_GRACE`] before it ends the job;
//! - a rank that asked to abort never becomes the cause by exiting afterwards;
//! - a failing exit of any other rank seen while an abort is held wins over it (it died
//!   without asking: killed, crashed, `exit(3)`), a signal death before an exit code when
//!   several are seen at once;
//! - the held abort ends the job when its grace is over, or at once when no rank is left.
//!
//! Pure bookkeeping: no I/O, no clock of its own (callers pass `now`).

use crate::status::RankExit;
use std::time::{Duration, Instant};

/// How long an abort waits for the death that may have caused it to be seen.
pub(crate) const ABORT_GRACE: Duration = Duration::from_millis(250);

/// An abort held back for [`ABORT_GRACE`].
#[derive(Clone, Debug)]
pub(crate) struct HeldAbort {
    /// When it arrived.
    pub(crate) at: Instant,
    /// The job's exit code if it ends the job.
    pub(crate) exit_code: i32,
    /// The line printed if it ends the job.
    pub(crate) line: String,
}

/// The aborts seen so far and the first of them.
#[derive(Debug, Default)]
pub(crate) struct FirstCause {
    aborters: Vec<u32>,
    unknown_aborter: bool,
    held: Option<HeldAbort>,
}

impl FirstCause {
    /// Records an abort by `rank` (None: a rank that did not say which it is).
    pub(crate) fn abort(&mut self, rank: Option<u32>, exit_code: i32, line: String, now: Instant) {
        match rank {
            Some(r) if !self.aborters.contains(&r) => self.aborters.push(r),
            Some(_) => {}
            None => self.unknown_aborter = true,
        }
        if self.held.is_none() {
            self.held = Some(HeldAbort {
                at: now,
                exit_code,
                line,
            });
        }
    }

    /// True when `rank` asked to abort: its exit is the abort's consequence, not a cause.
    pub(crate) fn aborted(&self, rank: u32) -> bool {
        self.aborters.contains(&rank)
    }

    /// Of the failing exits just seen (rank, exit), the one that is the job's cause, if any:
    /// ranks that aborted are skipped, signal deaths come before exit codes, then rank order.
    pub(crate) fn pick(&self, failed: &[(u32, RankExit)]) -> Option<usize> {
        let candidates = failed
            .iter()
            .enumerate()
            .filter(|(_, (r, e))| !e.is_success() && !self.aborted(*r))
            // An anonymous aborter exits with a code: only signal deaths are then certain.
            .filter(|(_, (_, e))| !self.unknown_aborter || matches!(e, RankExit::Signal(_)));
        let key =
            |(i, (r, e)): &(usize, &(u32, RankExit))| (!matches!(e, RankExit::Signal(_)), *r, *i);
        candidates.min_by_key(key).map(|(i, _)| i)
    }

    /// The held abort, once its grace is over at `now` (or at once when `no_rank_left`).
    pub(crate) fn due(&self, now: Instant, no_rank_left: bool) -> Option<&HeldAbort> {
        self.held
            .as_ref()
            .filter(|h| no_rank_left || now.duration_since(h.at) >= ABORT_GRACE)
    }

    /// True when an abort is held (the job is ending; the caller keeps watching briefly).
    pub(crate) fn holding(&self) -> bool {
        self.held.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_killed_rank_wins_over_the_survivors_aborts() {
        let t0 = Instant::now();
        let mut c = FirstCause::default();
        c.abort(Some(0), 58, "rank 0 aborted".into(), t0);
        c.abort(Some(2), 58, "rank 2 aborted".into(), t0);
        // The aborters' own exits and the killed rank are seen in one pass.
        let seen = [
            (0, RankExit::Code(58)),
            (1, RankExit::Code(3)),
            (2, RankExit::Code(58)),
            (3, RankExit::Signal(9)),
        ];
        assert_eq!(c.pick(&seen), Some(3), "a signal death first");
        assert_eq!(
            c.pick(&seen[..3]),
            Some(1),
            "then a non-aborter's exit code"
        );
        assert_eq!(c.pick(&[(0, RankExit::Code(58))]), None);
        assert_eq!(
            c.pick(&[(1, RankExit::Code(0))]),
            None,
            "success is no cause"
        );
        // Only the first abort is held, and only once its grace is over.
        assert!(c.due(t0, false).is_none());
        assert_eq!(c.due(t0, true).unwrap().line, "rank 0 aborted");
        let later = t0 + ABORT_GRACE;
        assert_eq!(c.due(later, false).unwrap().exit_code, 58);
        assert!(c.holding());
        c.abort(None, 5, "someone aborted".into(), later);
        assert_eq!(
            c.pick(&seen[..3]),
            None,
            "any code may be the anonymous aborter's"
        );
        assert_eq!(c.pick(&seen), Some(3));
    }
}
