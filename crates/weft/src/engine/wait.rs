//! Waiting: the spin, pause, yield and sleep policy of blocking waits, and the learned spin
//! of point-to-point waits on an oversubscribed node.
//!
//! A wait spins first (a reply is likely near), then yields the core, then sleeps in the
//! kernel on a futex in the node's segment (`WEFT_BLOCK`) until the peer that delivers
//! something for it (a message into one of its rings, an arrival in the collective area)
//! wakes it. On a core shared with other work a rank that only yields keeps handing the
//! core back and forth with a program that spins, and the rank it waits for does not get
//! to run; a sleeper takes no turn until it is woken, and then the scheduler runs it at
//! once. A sender pays one fence and one load of the receiver's flag per message while
//! nobody sleeps, and a system call only when it wakes a sleeper (`ShmNode::wake`). A sleep
//! lasts at most `WEFT_BLOCK_SLEEP_MS` (10 ms): the wait then checks that its peers are alive, so a peer
//! that dies while its partner sleeps is noticed within a bounded time.

use super::liveness::{LIVENESS_PERIOD, LIVENESS_PERIOD_SPINNING};
use super::request::{ReqKind, Status};
use super::{Engine, ReqId, Route};
use crate::config::BlockMode;
use crate::node_load;
use weft_core::Result;

/// Idle polls of a wait made without a pause instruction before the next poll. A pause
/// costs about 24 ns on the machines measured here (AMD family 26: a C loop of 10^7
/// `_mm_pause`), where an idle poll of the rings is 80-100 instructions (callgrind), so
/// pausing on every idle poll made an answer wait for half a pause on average before it
/// was seen; a wait longer than these
/// polls (a microsecond or two) pauses on every poll again, as a spin should for its
/// hyperthread sibling.
const POLLS_BEFORE_PAUSING: u32 = 128;

/// The pause of an idle poll, after the first [`POLLS_BEFORE_PAUSING`] of a stretch.
#[inline]
fn idle_pause(idle: u32) {
    if idle > POLLS_BEFORE_PAUSING {
        std::hint::spin_loop();
    }
}

/// Idle polls between two readings of the clock while a rank spins through its spin window
/// (about 25 us): a wait answered sooner never reads it.
const POLLS_PER_CLOCK_READ: u32 = 1 << 10;

/// Longest spin of a point-to-point wait on an oversubscribed node before it yields (see
/// [`Engine::wait_p2p_until`]).
const P2P_SPIN_MAX_NS: u32 = 50_000;

/// The spin of a probing wait while the learned spin is nothing, and how often such a wait
/// probes.
const P2P_SPIN_PROBE_NS: u32 = 4_000;

const P2P_PROBE_EVERY_WAITS: u32 = 8;

/// Idle polls between two readings of the clock in a point-to-point spin.
const P2P_POLLS_PER_CLOCK_READ: u32 = 32;

/// Longest a wait keeps its core because no co-located rank is needed
/// ([`Engine::wait_until_sharing`]): a co-located rank might still have work for a peer
/// that the wait cannot see (a pipelined send), which then waits this long at most before
/// the rank yields again.
const KEEP_CORE_MAX: std::time::Duration = std::time::Duration::from_micros(50);

/// How a wait went ([`Engine::wait_p2p_until`] learns from it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spun {
    /// Done before any idle poll.
    Never,
    /// Done within the spin.
    Enough,
    /// It yielded.
    Yielded,
}

/// The spin of the next point-to-point wait, after one that spun `budget_ns` (the learned
/// `spin_ns`, or a probe) and went `got`.
fn learned_spin_ns(spin_ns: u32, budget_ns: u32, got: Spun) -> u32 {
    match got {
        Spun::Never => spin_ns,
        Spun::Enough => (budget_ns * 2).clamp(P2P_SPIN_PROBE_NS, P2P_SPIN_MAX_NS),
        Spun::Yielded => match budget_ns / 2 {
            b if b < P2P_SPIN_PROBE_NS => 0,
            b => b,
        },
    }
}

/// Whether a request waiting on these peers (None: any source) could be completed by a rank
/// not pinned to this rank's core (`colocated`: the local ranks that are).
fn waits_off_my_core(
    mut waited_on: impl Iterator<Item = Option<Route>>,
    colocated: &[u32],
) -> bool {
    waited_on.any(|peer| match peer {
        Some(Route::Local(l)) => !colocated.contains(&l),
        _ => true,
    })
}

/// Whether a wait may sleep in the kernel until a peer wakes it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MaySleep {
    /// The condition waited for comes true only through what the engine polls from its
    /// peers (ring messages, arrivals in the collective area), each of which rings a
    /// sleeping rank's bell.
    Yes,
    /// The condition may come true through something that rings no bell (a lock word
    /// written by a peer, a helper thread, a file operation): the wait never sleeps.
    No,
}

impl Engine {
    /// Drives progress until `done(self)` holds, yielding when configured and checking now
    /// and then that the peers the pending requests wait for are alive. `done` must come
    /// true through what the peers deliver (messages, collective arrivals): the wait may
    /// sleep until a peer's delivery wakes it (`WEFT_BLOCK`).
    pub(crate) fn wait_until(&mut self, done: impl FnMut(&Engine) -> bool) {
        self.wait_spinning(done, 0, |_| false, MaySleep::Yes);
    }

    /// [`Engine::wait_until`] for a condition that may come true without a delivery that
    /// wakes a sleeper (a file operation's helper thread): spins and yields, never sleeps.
    pub(crate) fn wait_until_polled(&mut self, done: impl FnMut(&Engine) -> bool) {
        self.wait_spinning(done, 0, |_| false, MaySleep::No);
    }

    /// [`Engine::wait_until`] for a wait that knows whom it waits for: where the rank would
    /// yield, it keeps polling instead while `keep_core` says that no rank pinned to its
    /// core is needed for the wait to end (a collective area wait whose co-located ranks
    /// have all arrived: yielding would only switch to one of them, which has nothing to do
    /// but wait too, and back), for at most [`KEEP_CORE_MAX`] of the wait. np=4 on 2 cores,
    /// 8 B, p50 us, 4 jobs each: allgather 2.13-2.21 -> 1.94-2.06, alltoall 2.18-2.26 ->
    /// 1.95-2.10, reduce_scatter 2.28-2.33 -> 2.07-2.20.
    pub(crate) fn wait_until_sharing(
        &mut self,
        done: impl FnMut(&Engine) -> bool,
        keep_core: impl Fn(&Engine) -> bool,
    ) {
        self.wait_spinning(done, 0, keep_core, MaySleep::Yes);
    }

    /// [`Engine::wait_until`] (`rung`: whatever makes `done` true rings this rank's bell,
    /// so the wait may sleep) or [`Engine::wait_until_polled`] (not `rung`) whose spin
    /// before it yields lasts at most `spin_max` (a window's fence: a member still missing
    /// after a short spin is mostly copying its puts and gets, which a spinning waiter
    /// slows).
    pub(crate) fn wait_until_spin_max(
        &mut self,
        done: impl FnMut(&Engine) -> bool,
        spin_max: std::time::Duration,
        rung: bool,
    ) {
        let window = self.spin_window;
        self.spin_window = window.min(spin_max);
        let may_sleep = if rung { MaySleep::Yes } else { MaySleep::No };
        self.wait_spinning(done, 0, |_| false, may_sleep);
        self.spin_window = window;
    }

    /// [`Engine::wait_until`] for point-to-point completions. On a node with more ranks
    /// than cores (`WEFT_YIELD=auto`) it spins a learned time before it yields, as an
    /// adaptive lock does: the spin doubles (up to 50 us) after a wait that ended within it,
    /// and halves after one that had to yield (below 4 us it is nothing); at nothing, every
    /// 8th wait probes with a 4 us spin ([`learned_spin_ns`]). Two partners that run at the same time (a
    /// ping-pong) then answer each other without a trip through the scheduler, while a wait
    /// on a rank that is not running soon goes back to yielding at once. Collectives keep
    /// yielding at once: their waits depend on every rank being scheduled. A pinned rank
    /// whose unfinished requests all wait on ranks pinned to its own core yields at once
    /// and learns nothing from the wait: those ranks cannot run while it spins (a root
    /// receiving from its 3 leaves in turn, np=4 on 2 cores, spun its whole learned 50 us
    /// before the leaf on its core could send: 56 -> 5.3 us per round).
    ///
    /// A rank that yields at once with network peers (`WEFT_YIELD=on`, or `auto` on an
    /// oversubscribed node) learns the same spin for its waits on a network peer: a yield
    /// on every idle poll hands the core to another rank of the node on every poll of a
    /// wait that a message from the network ends a few microseconds later (2 namespace
    /// hosts x 2 ranks on 2 cores, 8 B ping-pong over UCX's TCP: 343 000 context switches
    /// in 20 000 round trips against Open MPI's 27 000; Open MPI polls its worker 100
    /// times between two yields). A wait whose partner is not running soon still halves
    /// the spin towards yielding at once, so ranks beside busy programs give their core
    /// away as before.
    pub(crate) fn wait_p2p_until(&mut self, done: impl FnMut(&Engine) -> bool) {
        self.wait_p2p(done, MaySleep::Yes);
    }

    /// [`Engine::wait_p2p_until`] for a condition of the caller's that may come true
    /// without a delivery that wakes a sleeper (a lock word in a peer's memory): never
    /// sleeps.
    pub(crate) fn wait_p2p_until_polled(&mut self, done: impl FnMut(&Engine) -> bool) {
        self.wait_p2p(done, MaySleep::No);
    }

    fn wait_p2p(&mut self, mut done: impl FnMut(&Engine) -> bool, may_sleep: MaySleep) {
        let learns = self.adaptive_spin || (self.net_spin && !done(self) && self.waits_on_net());
        if !learns {
            self.wait_spinning(done, 0, |_| false, may_sleep);
            return;
        }
        if !self.colocated.is_empty() && !done(self) && !self.spin_may_help() {
            self.wait_spinning(done, 0, |_| false, may_sleep);
            return;
        }
        self.p2p_waits = self.p2p_waits.wrapping_add(1);
        let budget = if self.p2p_spin_ns == 0 {
            if self.p2p_waits.is_multiple_of(P2P_PROBE_EVERY_WAITS) {
                P2P_SPIN_PROBE_NS
            } else {
                0
            }
        } else {
            self.p2p_spin_ns
        };
        let got = self.wait_spinning(done, budget, |_| false, may_sleep);
        self.p2p_spin_ns = learned_spin_ns(self.p2p_spin_ns, budget, got);
    }

    /// Whether one of the unfinished requests waits on a network peer (a receive from any
    /// source may).
    fn waits_on_net(&self) -> bool {
        self.core
            .reqs
            .iter()
            .filter(|r| r.kind != ReqKind::Free && !r.done)
            .any(|r| match r.peer_world {
                Some(w) => matches!(self.routes[w as usize], Route::Net(_)),
                None => true,
            })
    }

    /// Whether a rank not pinned to this rank's core could complete one of its unfinished
    /// requests (a receive from any source could be).
    fn spin_may_help(&self) -> bool {
        let waited_on = self
            .core
            .reqs
            .iter()
            .filter(|r| r.kind != ReqKind::Free && !r.done)
            .map(|r| r.peer_world.map(|w| self.routes[w as usize]));
        waits_off_my_core(waited_on, &self.colocated)
    }

    /// Whether a wait may sleep now: everything it could wait for rings this rank's bell.
    /// Not with a network endpoint (its sockets ring no bell: waits with network peers
    /// yield), nor with work of its own stuck (a ring full towards a peer, which frees room
    /// without ringing, a CMA read to do), nor with file operations in flight, nor in a
    /// process of several weft instances (another instance's deliveries ring another bell).
    fn can_sleep(&self) -> bool {
        !self.in_several_instances()
            && self.shm.is_some()
            && self.net.is_none()
            && self.core.outq_len == 0
            && self.core.deferred_reads.is_empty()
            && self.io_ops.is_empty()
    }

    /// One sleep of a wait: announce it, look once more for work (`progress`, `done`), and
    /// sleep on the bell until a peer's delivery rings it or `WEFT_BLOCK_SLEEP_MS` passes. True when
    /// the last look found work (then it did not sleep). See `ShmNode::sleep_prepare` for
    /// why no wake-up is lost.
    fn sleep_once(&mut self, done: &mut impl FnMut(&Engine) -> bool) -> bool {
        let Some(shm) = self.shm.as_ref() else {
            return false;
        };
        let bell = shm.sleep_prepare();
        if self.progress() || done(self) {
            if let Some(shm) = self.shm.as_ref() {
                shm.sleep_cancel();
            }
            return true;
        }
        if let Some(shm) = self.shm.as_mut() {
            shm.sleep(bell, self.sleep_max);
        }
        false
    }

    /// The wait loop. An idle stretch is the polls since the last progress. A rank that
    /// yields when idle first spins for `spin_ns` of each stretch. A rank with a
    /// core of its own spins through the spin window (`WEFT_YIELD_AFTER_US`): a reply is
    /// likely near, and on a loaded machine each yield can hand the core to another program
    /// for a whole time slice. After the window, or at once when the node has more ranks
    /// than cores, it yields on every idle poll. The clock is read only every few hundred
    /// idle polls (every 32 in a yielding rank's spin), so a short wait never reads it.
    ///
    /// Sleeping (`WEFT_BLOCK`, when `may_sleep` and [`Engine::can_sleep`]): `on` sleeps at
    /// the first idle poll; `auto` sleeps where it would yield when
    /// [`node_load::auto_sleeps`] says so (other programs compete for the cores and the
    /// stretch has yielded for `WEFT_BLOCK_AFTER_US`, or, a rank that yields at once, a
    /// recent yield lost the core; or the stretch has yielded for
    /// [`node_load::IDLE_SLEEP_AFTER`]): a rank that keeps yielding to a program that spins
    /// gets the core back for a moment now and then, while a sleeper woken by its peer is run
    /// at once by the scheduler. The spin before stays: a wait answered within it (partners running
    /// at the same time) never pays a wake-up, which costs tens of microseconds in a VM.
    ///
    /// Liveness goes by the clock: every [`LIVENESS_PERIOD`] of a yielding or sleeping
    /// stretch (a sleep lasts at most `WEFT_BLOCK_SLEEP_MS`), every [`LIVENESS_PERIOD_SPINNING`] of
    /// a spinning one, the peers the wait depends on are checked, however rarely the rank
    /// gets its core.
    fn wait_spinning(
        &mut self,
        mut done: impl FnMut(&Engine) -> bool,
        spin_ns: u32,
        keep_core: impl Fn(&Engine) -> bool,
        may_sleep: MaySleep,
    ) -> Spun {
        use std::time::Instant;
        let mut idle: u32 = 0;
        let mut spun = Spun::Never;
        let may_sleep = may_sleep == MaySleep::Yes && self.block_mode != BlockMode::Never;
        // The end of this stretch's spin (a yielding rank's), once the clock was read.
        let mut spin_end: Option<Instant> = None;
        let mut spinning = spin_ns > 0;
        let mut spin_until: Option<Instant> = None;
        let mut yielding = self.yield_when_idle;
        // Keeping the core (`keep_core`) ends for good after KEEP_CORE_MAX of one wait.
        let mut keeping = true;
        let mut keep_until: Option<Instant> = None;
        // When this stretch started yielding, and when the peers were last checked (the
        // first reading of the clock starts the period: a shorter wait checks nothing).
        let mut yield_since: Option<Instant> = None;
        let mut last_check: Option<Instant> = None;
        while !done(self) {
            if self.progress() {
                idle = 0;
                spin_until = None;
                spin_end = None;
                yield_since = None;
                spinning = spin_ns > 0;
                yielding = self.yield_when_idle;
                continue;
            }
            idle = idle.wrapping_add(1);
            if may_sleep && self.block_mode == BlockMode::Now && self.can_sleep() {
                spun = Spun::Yielded;
                if !self.sleep_once(&mut done) {
                    self.check_peers_by_clock(&mut last_check, LIVENESS_PERIOD);
                }
                continue;
            }
            if yielding && spinning {
                if spun == Spun::Never {
                    spun = Spun::Enough;
                }
                idle_pause(idle);
                if idle.is_multiple_of(P2P_POLLS_PER_CLOCK_READ) {
                    let now = Instant::now();
                    match spin_end {
                        None => {
                            spin_end = Some(now + std::time::Duration::from_nanos(spin_ns.into()))
                        }
                        Some(t) if now >= t => spinning = false,
                        Some(_) => {}
                    }
                }
                continue;
            }
            if !yielding {
                idle_pause(idle);
                if idle.is_multiple_of(POLLS_PER_CLOCK_READ) {
                    let now = Instant::now();
                    if !self.never_yield {
                        match spin_until {
                            None => spin_until = Some(now + self.spin_window),
                            Some(t) if now >= t => yielding = true,
                            Some(_) => {}
                        }
                    }
                    let last = *last_check.get_or_insert(now);
                    if now.duration_since(last) >= LIVENESS_PERIOD_SPINNING {
                        last_check = Some(now);
                        self.check_peers();
                    }
                }
                continue;
            }
            if keeping && keep_core(self) {
                idle_pause(idle);
                if idle.is_multiple_of(P2P_POLLS_PER_CLOCK_READ) {
                    let now = Instant::now();
                    match keep_until {
                        None => keep_until = Some(now + KEEP_CORE_MAX),
                        Some(t) if now >= t => keeping = false,
                        Some(_) => {}
                    }
                }
                continue;
            }
            // About to give the core away: look at the network endpoint first. An idle one is
            // polled only every `WEFT_TCP_POLL_EVERY` progress calls while shared-memory
            // peers exist, so a rank that yields on every idle poll would otherwise yield that
            // many times (16 by default) before it saw a message that had already arrived.
            if self.net.is_some() && !self.net_just_polled() && self.progress_net(true) {
                idle = 0;
                yield_since = None;
                continue;
            }
            spun = Spun::Yielded;
            let before = Instant::now();
            let since = *yield_since.get_or_insert(before);
            if may_sleep
                && self.can_sleep()
                && (self.block_mode == BlockMode::Now
                    || self.auto_sleeps_now(before, before.duration_since(since)))
            {
                let rung_before = self.shm.as_ref().map_or(0, |s| s.sleeps_woken());
                if !self.sleep_once(&mut done) {
                    if self.block_mode == BlockMode::Auto && !self.yield_when_idle {
                        let rung = self.shm.as_ref().map_or(0, |s| s.sleeps_woken()) > rung_before;
                        self.block_after_learned = node_load::learned_block_after(
                            self.block_after_learned,
                            self.block_after,
                            before.elapsed(),
                            rung,
                        );
                    }
                    self.check_peers_by_clock(&mut last_check, LIVENESS_PERIOD);
                }
                continue;
            }
            self.idle_yields += 1;
            std::thread::yield_now();
            let after = Instant::now();
            if self.block_mode == BlockMode::Auto {
                self.core_lost_until = (after.duration_since(before) >= node_load::YIELD_LOST_CORE)
                    .then(|| after + node_load::CORE_LOST_FOR);
            }
            let last = *last_check.get_or_insert(after);
            if after.duration_since(last) >= LIVENESS_PERIOD {
                last_check = Some(after);
                self.check_peers();
            }
        }
        spun
    }

    /// `WEFT_BLOCK=auto`: whether a wait that has yielded for `yielded_for` sleeps now
    /// ([`node_load::auto_sleeps`]). Reads the node's load only when the answer depends on
    /// it, and at most every [`node_load::LOAD_SAMPLE_PERIOD`] (`now`: the clock just read).
    fn auto_sleeps_now(
        &mut self,
        now: std::time::Instant,
        yielded_for: std::time::Duration,
    ) -> bool {
        let at_once = self.yield_when_idle;
        let lost = self.core_lost_until.is_some_and(|t| now < t);
        let after = self.block_after_learned;
        let compete = node_load::auto_needs_load(at_once, lost, yielded_for, after)
            .then(|| self.others_compete_at(now))
            .flatten();
        node_load::auto_sleeps(compete, at_once, lost, yielded_for, after)
    }

    /// Whether programs other than this job's ranks compete for this rank's cores, from a
    /// reading of the node's load at most [`node_load::LOAD_SAMPLE_PERIOD`] old (None: no
    /// load to read).
    fn others_compete_at(&mut self, now: std::time::Instant) -> Option<bool> {
        let probe = self.load_probe.as_ref()?;
        if self.next_load_sample.is_some_and(|t| now < t) {
            return Some(self.others_compete);
        }
        let runnable = probe.runnable()?;
        let local = u32::try_from(self.core.local_world.len()).unwrap_or(u32::MAX);
        let sleepers = self.shm.as_ref().map_or(0, |s| s.sleepers());
        self.others_compete = node_load::others_compete(node_load::NodeLoad {
            runnable,
            ours_awake: local.saturating_sub(sleepers).max(1),
            usable_cores: self.usable_cores,
            online_cores: self.online_cores,
        });
        self.next_load_sample = Some(now + node_load::LOAD_SAMPLE_PERIOD);
        Some(self.others_compete)
    }

    /// Checks the peers when `period` has passed since `last` (the first call starts it).
    fn check_peers_by_clock(
        &mut self,
        last: &mut Option<std::time::Instant>,
        period: std::time::Duration,
    ) {
        let now = std::time::Instant::now();
        let l = *last.get_or_insert(now);
        if now.duration_since(l) >= period {
            *last = Some(now);
            self.check_peers();
        }
    }

    /// Waits for one request to complete.
    pub(crate) fn wait(&mut self, id: ReqId) -> Result<Status> {
        self.wait_p2p_until(|e| e.is_done(id));
        self.outcome(id)
    }
}

#[cfg(test)]
mod spin_tests {
    use super::*;

    #[test]
    fn the_learned_spin_grows_on_success_and_falls_to_nothing_on_failures() {
        // A probe that ended within its spin starts the learning; successes double it up to
        // the cap; a wait that had to yield halves it, and below a probe it is nothing.
        let mut s = learned_spin_ns(0, P2P_SPIN_PROBE_NS, Spun::Enough);
        assert_eq!(s, 2 * P2P_SPIN_PROBE_NS);
        for _ in 0..10 {
            s = learned_spin_ns(s, s, Spun::Enough);
        }
        assert_eq!(s, P2P_SPIN_MAX_NS);
        assert_eq!(learned_spin_ns(s, s, Spun::Never), s, "nothing learned");
        s = learned_spin_ns(s, s, Spun::Yielded);
        assert_eq!(s, P2P_SPIN_MAX_NS / 2);
        while s > 0 {
            let next = learned_spin_ns(s, s, Spun::Yielded);
            assert!(next < s);
            s = next;
        }
        assert_eq!(learned_spin_ns(0, 0, Spun::Yielded), 0);
        assert_eq!(learned_spin_ns(0, P2P_SPIN_PROBE_NS, Spun::Yielded), 0);
    }

    #[test]
    fn spinning_helps_only_a_wait_on_a_rank_off_this_core() {
        // Local ranks 2 and 4 share this rank's core.
        let colocated = [2, 4];
        let local = |l| Some(Route::Local(l));
        assert!(!waits_off_my_core(
            [local(2), local(4)].into_iter(),
            &colocated
        ));
        assert!(
            !waits_off_my_core(std::iter::empty(), &colocated),
            "nothing waited on"
        );
        assert!(waits_off_my_core(
            [local(2), local(1)].into_iter(),
            &colocated
        ));
        assert!(
            waits_off_my_core([local(2), None].into_iter(), &colocated),
            "any source"
        );
        assert!(
            waits_off_my_core([Some(Route::Net(9))].into_iter(), &colocated),
            "a node away"
        );
    }
}
