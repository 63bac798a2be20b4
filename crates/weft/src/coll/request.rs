//! Nonblocking collectives (MPI-4.1 §6.12): a [`CollRequest`] owns a started schedule, which
//! the engine advances whenever it makes progress (any blocking call, any test); a blocking
//! collective runs its schedule to completion where it starts ([`run_blocking`]; a repeated
//! call whose plan is only messages, copies and reductions runs without a schedule,
//! [`DirectRun`](super::direct::DirectRun)) and its request only carries the outcome.
//! Also the per-communicator count of collectives started, which keeps the traffic of
//! several outstanding collectives on one communicator apart.
//!
//! Depends on the schedule and the engine's progress; knows nothing of algorithms.

use super::schedule::Schedule;
use super::Mode;
use crate::comm::Comm;
use crate::engine::Engine;
use std::marker::PhantomData;
use std::ptr::NonNull;
use weft_core::{Error, ErrorKind, Result};

/// A started schedule and its outcome, on the heap so that its address stays fixed while the
/// engine's registry of active collectives points at it.
pub(crate) struct Active<'a> {
    schedule: Schedule<'a>,
    /// True once the schedule has completed or failed; the engine then forgets it.
    finished: bool,
    /// The failure, kept until the owner reports it.
    error: Option<Error>,
    /// True once the owner has returned the outcome (later tests return `Ok(true)`).
    reported: bool,
    /// True while its tag is among the engine's unfinished calls.
    tag_held: bool,
}

impl Active<'_> {
    /// Marks the collective finished (once), so it no longer counts as unfinished.
    fn mark_finished(&mut self, unfinished: &mut Vec<(u32, i32)>) {
        self.finished = true;
        if self.tag_held {
            self.tag_held = false;
            let key = self.schedule.ctx_tag();
            if let Some(i) = unfinished.iter().position(|&k| k == key) {
                unfinished.swap_remove(i);
            }
        }
    }
}

/// Refuses to start a collective whose tag `tag` an unfinished collective of this rank on
/// the same communicator already holds (before the call takes its number, like
/// [`check_outstanding`]). With it, two calls that share a tag are never unfinished together
/// on a rank: every earlier call with the tag has taken all its messages from every peer
/// before a receive of the next is posted, and a peer sends its messages for one before any
/// for the next (it too finishes one first), in order on one context, so neither can take
/// the other's. This holds whatever the call numbers: the 2^13 wrap-around and persistent
/// collectives, which restart with the number they were given at initialisation.
pub(crate) fn check_tag_free(comm: &Comm, what: &str, tag: i32) -> Result<()> {
    let key = (comm.data.ctx + 1, tag);
    if !comm.engine.borrow().coll_state.unfinished.contains(&key) {
        return Ok(());
    }
    let (_, seq, _) = super::tag_parts(tag);
    Err(Error::new(
        ErrorKind::Unsupported,
        format!(
            "{what} on rank {}: an unfinished collective on communicator {} has the same \
             message tag (call numbers equal modulo 2^{}{}), so the two could take each \
             other's messages: complete it first",
            comm.rank(),
            comm.name(),
            super::TAG_SEQ_BITS,
            if seq & super::PERSISTENT_SEQ != 0 {
                ", both persistent"
            } else {
                ""
            }
        ),
    ))
}

/// Unfinished collectives a rank may have at once (a bound on the memory they hold). A
/// collective's tag holds its call number modulo 2^13 (`super::TAG_SEQ_BITS`), so two calls
/// whose numbers differ by a multiple of that share a tag, even with only two unfinished
/// (call k still open while k+1 .. k+8191 completed); [`check_tag_free`], not this bound,
/// keeps such calls from being unfinished together. With at most 2^13 unfinished, a rank can
/// always have that many outstanding at once in order of their call numbers.
pub(crate) const MAX_OUTSTANDING: u32 = 1 << super::TAG_SEQ_BITS;

/// Refuses to start one more collective on a rank that already has [`MAX_OUTSTANDING`]
/// unfinished (before the call takes a call number, so the ranks' numbering stays aligned
/// when the caller completes some and retries).
pub(crate) fn check_outstanding(comm: &Comm, what: &str) -> Result<()> {
    let n = comm.engine.borrow().coll_state.unfinished.len() as u32;
    if n >= MAX_OUTSTANDING {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{what} on rank {}: {n} collectives are already unfinished on this rank; call \
                 numbers in message tags are {} bits, so one more could take another's \
                 messages: complete some first",
                comm.rank(),
                super::TAG_SEQ_BITS
            ),
        ));
    }
    Ok(())
}

/// An active collective as the engine's registry holds it, its buffers' lifetime erased.
pub(crate) type ActivePtr = NonNull<Active<'static>>;

/// True once the collective behind `p` has completed or failed.
///
/// # Safety
/// `p` points to a live `Active` and no mutable reference to it is live.
pub(crate) unsafe fn is_finished(p: ActivePtr) -> bool {
    // SAFETY: per the contract; a plain read of one field.
    unsafe { (*p.as_ptr()).finished }
}

/// Moves the collective behind `p` as far as it goes without waiting. Returns (finished now
/// or before, whether it started a new step or finished).
///
/// # Safety
/// `p` points to a live `Active` whose buffers are still borrowed by its request, no other
/// reference to it is live, and it is not being advanced already (the engine's re-entrancy
/// guard ensures that).
pub(crate) unsafe fn advance(p: ActivePtr, e: &mut Engine) -> (bool, bool) {
    // SAFETY: per the contract, this is the only reference for the length of the call.
    let a = unsafe { &mut *p.as_ptr() };
    if a.finished {
        // A request dropped while a panic unwound marked it finished without the engine:
        // its tag leaves the unfinished calls here.
        a.mark_finished(&mut e.coll_state.unfinished);
        return (true, false);
    }
    let before = a.schedule.steps_started();
    let outcome = a.schedule.advance(e);
    if !matches!(outcome, Ok(false)) {
        a.mark_finished(&mut e.coll_state.unfinished);
    }
    a.error = outcome.err();
    (
        a.finished,
        a.finished || a.schedule.steps_started() != before,
    )
}

/// A collective in flight: its schedule, bound to buffers borrowed for `'a`.
///
/// The engine advances every started collective whenever it makes progress — inside any
/// blocking call (receive, send, probe, another collective's wait) and any test — as MPI's
/// progress rule requires, so ranks may complete their outstanding collectives and other
/// operations in any order. Dropping an unfinished request waits for it (its error, if any,
/// is lost); leaking one (`std::mem::forget`) would leave the engine with pointers into the
/// borrowed buffers, which is why the functions that start one are `unsafe`.
#[must_use = "a collective request must be tested or waited to learn its outcome"]
pub struct CollRequest<'a> {
    inner: Inner<'a>,
}

/// Where a request's schedule lives.
enum Inner<'a> {
    /// A nonblocking call's: on the heap, at a fixed address the engine's registry points
    /// at, so that any progress advances it. Owned (from `Box::into_raw`); freed on drop,
    /// after the engine has forgotten it.
    Registered {
        comm: Comm,
        active: NonNull<Active<'a>>,
        _owns: PhantomData<Box<Active<'a>>>,
    },
    /// A blocking call's, run to completion (by [`run_blocking`] or
    /// [`DirectRun`](super::direct::DirectRun)) before the request was
    /// made (its schedule never needed the heap, the registry or a place among the
    /// unfinished calls: nothing else starts on this rank before it completes): the
    /// outcome, until reported.
    Done {
        error: Option<Error>,
        reported: bool,
    },
}

impl std::fmt::Debug for CollRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Inner::Registered { comm, active, .. } => {
                // SAFETY: the engine touches the schedule only inside engine calls, none of
                // which is running while the owner is borrowed here.
                let a = unsafe { active.as_ref() };
                write!(
                    f,
                    "CollRequest({} on {:?}, finished: {})",
                    a.schedule.what(),
                    comm,
                    a.finished
                )
            }
            Inner::Done { .. } => f.write_str("CollRequest(blocking call, finished)"),
        }
    }
}

/// Runs a blocking call's schedule to completion on this rank, then hands its scratch back.
pub(crate) fn run_blocking(comm: &Comm, schedule: &mut Schedule<'_>) -> Result<()> {
    /// Finishes what the schedule has in flight when a panic (a user reduction operation)
    /// unwinds through the call: its receives point into the scratch and the caller's
    /// buffers, which the unwinding frees.
    struct Unwind<'e, 's, 'a> {
        e: std::cell::RefMut<'e, Engine>,
        s: &'s mut Schedule<'a>,
    }
    impl Drop for Unwind<'_, '_, '_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                // Give up first, while the guard the panic left set keeps the waits in
                // `abandon` from advancing (and re-running the operation of) any
                // collective; then clear it.
                self.s.abandon(&mut self.e);
                self.e.clear_advancing();
            }
        }
    }
    let mut g = Unwind {
        e: comm.engine.borrow_mut(),
        s: schedule,
    };
    g.e.clear_advancing();
    let outcome = loop {
        let Unwind { e, s } = &mut g;
        match e.advancing_coll(|e| s.advance(e)) {
            Ok(false) => e.wait_until_sharing(|e| s.step_done(e), |e| s.keeps_core(e)),
            outcome => break outcome.map(|_| ()),
        }
    };
    let Unwind { e, s } = &mut g;
    s.recycle(&mut e.coll_state.pool);
    outcome
}

impl<'a> CollRequest<'a> {
    /// The request of a blocking call that has run to completion (it holds only
    /// the outcome: no communicator to clone and drop on the latency-bound path).
    #[inline]
    pub(crate) fn completed(outcome: Result<()>) -> CollRequest<'a> {
        CollRequest {
            inner: Inner::Done {
                error: outcome.err(),
                reported: false,
            },
        }
    }

    /// Wraps a nonblocking call's schedule, registers it with the engine and moves it as far
    /// as it goes without waiting (its first step's messages are posted before this returns).
    pub(crate) fn start(comm: &Comm, schedule: Schedule<'a>) -> Result<CollRequest<'a>> {
        let active = Active {
            schedule,
            finished: false,
            error: None,
            reported: false,
            tag_held: true,
        };
        let key = active.schedule.ctx_tag();
        comm.engine.borrow_mut().coll_state.unfinished.push(key);
        // SAFETY: Box::into_raw never returns null.
        let active = unsafe { NonNull::new_unchecked(Box::into_raw(Box::new(active))) };
        let mut r = CollRequest {
            inner: Inner::Registered {
                comm: comm.clone(),
                active,
                _owns: PhantomData,
            },
        };
        // The lifetime is erased for the registry: the request deregisters before its buffers'
        // borrow ends (drop), and leaking it is excluded by the starting functions' contract.
        comm.engine.borrow_mut().register_coll(r.erased());
        r.test()?;
        Ok(r)
    }

    /// The communicator of a registered (nonblocking) call.
    fn comm(&self) -> &Comm {
        match &self.inner {
            Inner::Registered { comm, .. } => comm,
            Inner::Done { .. } => unreachable!("a completed blocking call has no communicator"),
        }
    }

    /// The registered collective's address for the engine.
    fn erased(&self) -> ActivePtr {
        match &self.inner {
            Inner::Registered { active, .. } => active.cast(),
            Inner::Done { .. } => unreachable!("a completed blocking call is never registered"),
        }
    }

    /// The outcome once finished, returned once (later calls see `Ok(())`).
    fn report(&mut self) -> Result<()> {
        let (error, reported) = match &mut self.inner {
            Inner::Registered { active, .. } => {
                // SAFETY: no engine call is running; the owner holds the only reference now.
                let a = unsafe { active.as_mut() };
                debug_assert!(a.finished);
                (&mut a.error, &mut a.reported)
            }
            Inner::Done { error, reported } => (error, reported),
        };
        *reported = true;
        error.take().map_or(Ok(()), Err)
    }

    /// Whether the outcome has been returned.
    fn reported(&self) -> bool {
        match &self.inner {
            // SAFETY: no engine call is running; a short read of the owner's flag.
            Inner::Registered { active, .. } => unsafe { active.as_ref() }.reported,
            Inner::Done { reported, .. } => *reported,
        }
    }

    /// Advances the collective without blocking; true once it has completed on this rank
    /// (MPI_Test). After an error the request is finished and later calls return true.
    pub fn test(&mut self) -> Result<bool> {
        if self.reported() {
            return Ok(true);
        }
        if matches!(self.inner, Inner::Done { .. }) {
            self.report()?;
            return Ok(true);
        }
        let p = self.erased();
        {
            let mut e = self.comm().engine.borrow_mut();
            e.clear_advancing();
            // SAFETY: `p` is live (owned by self) and no reference to it is held across the call.
            if !unsafe { is_finished(p) } {
                // SAFETY: `p` is a registered collective of this engine, live (owned by
                // self), and self holds no reference into it while the engine drives it.
                unsafe { e.drive_coll(p) };
            }
        }
        // SAFETY: as above.
        if unsafe { is_finished(p) } {
            self.report()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// True once the collective has completed (or failed) on this rank; does not advance it.
    pub fn is_finished(&self) -> bool {
        match &self.inner {
            // SAFETY: the request owns the allocation; no engine call is running.
            Inner::Registered { .. } => unsafe { is_finished(self.erased()) },
            Inner::Done { .. } => true,
        }
    }

    /// Waits until the collective has completed on this rank (MPI_Wait).
    #[inline]
    pub fn wait(mut self) -> Result<()> {
        // A blocking call's request: its outcome, taken out (the drop then has nothing to
        // do).
        if let Inner::Done { error, reported } = &mut self.inner {
            *reported = true;
            return error.take().map_or(Ok(()), Err);
        }
        self.finish()
    }

    /// Waits until every request has completed, advancing all of them together, so ranks
    /// may list their outstanding collectives in different orders (MPI_Waitall). Returns the
    /// first error; every request is finished either way.
    pub fn wait_all(mut reqs: Vec<CollRequest<'a>>) -> Result<()> {
        let mut first_err = None;
        // A completed blocking call's request (never registered) has nothing to wait for.
        let ptrs: Vec<ActivePtr> = reqs
            .iter()
            .filter(|r| matches!(r.inner, Inner::Registered { .. }))
            .map(CollRequest::erased)
            .collect();
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
            let Some(first) = reqs
                .iter()
                .find(|r| matches!(r.inner, Inner::Registered { .. }))
            else {
                break;
            };
            let engine = first.comm().engine.clone();
            let mut e = engine.borrow_mut();
            e.wait_until(|e| ptrs.iter().any(|&p| step_can_move(p, e)));
        }
        first_err.map_or(Ok(()), Err)
    }

    fn finish(&mut self) -> Result<()> {
        if matches!(self.inner, Inner::Done { .. }) {
            if self.reported() {
                return Ok(());
            }
            return self.report();
        }
        let p = self.erased();
        {
            let mut e = self.comm().engine.borrow_mut();
            e.clear_advancing();
            loop {
                // SAFETY: `p` is live (owned by self); no reference to it is held across
                // engine calls, and the engine's guard keeps it from being advanced twice.
                if unsafe { is_finished(p) } {
                    break;
                }
                // SAFETY: `p` is a registered collective of this engine, live (owned by
                // self), and self holds no reference into it while the engine drives it.
                unsafe { e.drive_coll(p) };
                // SAFETY: as for the check above; the drive returned, so no reference of
                // the engine's into `p` is live either.
                if unsafe { is_finished(p) } {
                    break;
                }
                e.wait_until(|e| step_can_move(p, e));
            }
        }
        if self.reported() {
            return Ok(());
        }
        self.report()
    }
}

/// True when the collective behind `p` has finished or its current step can move on.
fn step_can_move(p: ActivePtr, e: &Engine) -> bool {
    // SAFETY: called from `wait_until` between engine steps: `p` is live (its request is
    // borrowed by the caller) and nothing else references it during this short borrow.
    let a = unsafe { &*p.as_ptr() };
    a.finished || a.schedule.step_done(e)
}

impl Drop for CollRequest<'_> {
    #[inline]
    fn drop(&mut self) {
        // The engine may still write into (or read from) the borrowed buffers: finish before
        // the borrow ends. There is no one to give an error to here. A panic that unwinds
        // through a frame holding the engine cannot be waited on (a second panic would
        // abort): a registered allocation is then leaked, marked finished so the engine
        // forgets it without touching its schedule; the process is going down with that
        // panic anyway. A blocking call's request holds only its outcome.
        if matches!(self.inner, Inner::Registered { .. }) {
            self.drop_registered();
        }
    }
}

impl CollRequest<'_> {
    /// [`Drop`] for a nonblocking call's request.
    #[inline(never)]
    fn drop_registered(&mut self) {
        let Inner::Registered { active, .. } = self.inner else {
            return;
        };
        if self.comm().engine.try_borrow_mut().is_err() {
            // SAFETY: no engine call can run while the engine is borrowed elsewhere and we
            // are unwinding; a plain write of one flag (the engine's next pass over its
            // registry drops the collective's tag from the unfinished calls).
            unsafe { (*active.as_ptr()).finished = true };
            return;
        }
        let _ = self.finish();
        let p = self.erased();
        let mut e = self.comm().engine.borrow_mut();
        e.deregister_coll(p);
        // SAFETY: allocated by Box::into_raw in `start`, no longer known to the engine.
        let mut a = unsafe { Box::from_raw(active.as_ptr()) };
        a.schedule.recycle(&mut e.coll_state.pool);
    }
}

std::thread_local! {
    /// Set while this thread starts the nonblocking form of a blocking call
    /// ([`numbered_as_blocking`]).
    static AS_BLOCKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, numbering the collectives this thread starts in it among the blocking calls
/// rather than the nonblocking ones: for an MPI layer that runs a blocking call (MPI_Barrier)
/// as its nonblocking form and a wait (so that other threads go on meanwhile), which must
/// still meet the other ranks' blocking calls however their nonblocking collectives are
/// ordered around it, as when every rank calls the blocking form.
pub fn numbered_as_blocking<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            AS_BLOCKING.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(AS_BLOCKING.with(|b| b.replace(true)));
    f()
}

/// Whether a call of `mode` counts among the blocking calls.
fn counts_as_blocking(mode: Mode) -> bool {
    mode == Mode::Blocking || AS_BLOCKING.with(std::cell::Cell::get)
}

/// The number [`next_seq_of`] will return for a call of `mode`, without taking it.
pub(crate) fn peek_seq(comm: &Comm, mode: Mode) -> u32 {
    let seq = comm.data.coll_seq.get();
    if counts_as_blocking(mode) || seq & super::PERSISTENT_SEQ != 0 {
        return seq;
    }
    comm.data.coll_nb_seq.get() | super::NONBLOCKING_SEQ
}

/// The call number of a collective of `mode`: a persistent start's number
/// (`Comm::with_coll_seq`), else the next of the nonblocking count for a nonblocking call,
/// else [`next_seq`].
pub(crate) fn next_seq_of(comm: &Comm, mode: Mode) -> u32 {
    let seq = comm.data.coll_seq.get();
    if counts_as_blocking(mode) || seq & super::PERSISTENT_SEQ != 0 {
        return next_seq(comm);
    }
    let n = comm.data.coll_nb_seq.get();
    comm.data
        .coll_nb_seq
        .set(n.wrapping_add(1) & !(super::NONBLOCKING_SEQ | super::PERSISTENT_SEQ));
    n | super::NONBLOCKING_SEQ
}

/// The sequence number of the next collective on `comm`: 0, 1, 2, ... in the order this
/// rank starts them, which MPI requires to be the same order on every rank.
pub(crate) fn next_seq(comm: &Comm) -> u32 {
    let seq = comm.data.coll_seq.get();
    comm.data.coll_seq.set(seq.wrapping_add(1));
    seq
}
