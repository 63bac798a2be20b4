//! Nonblocking file accesses and their requests. A collective one is a machine the engine
//! advances on every progress call ([`IoWork`], registered through `engine::io`); an
//! independent one runs on the process's I/O thread (one background thread, started on
//! first use, taking jobs in order), so the program computes while the kernel copies, and
//! the engine watches for its end like any other access. Either way an [`IoRequest`]
//! reports the bytes moved, and a completion hook, run inside a progress call of the
//! rank's own thread, tells a C layer when to mark its request complete.

use crate::engine::{Engine, IoSlot};
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use weft_core::{Error, ErrorKind, Result};

/// A started collective access, advanced by the engine.
pub(crate) trait IoWork {
    /// Moves the access as far as it goes without waiting: its outcome (the bytes this rank
    /// read or wrote) once finished, and whether anything moved.
    fn advance(&mut self, e: &mut Engine) -> (Option<Result<u64>>, bool);
}

/// A completion hook: runs once, inside the progress call (on the rank's thread) that sees
/// the access finish.
pub type Hook = Box<dyn FnOnce()>;

/// The outcome of an engine-advanced access, shared by the engine and the request.
#[derive(Default)]
pub(crate) struct IoShared {
    done: Cell<bool>,
    outcome: RefCell<Option<Result<u64>>>,
    hook: RefCell<Option<Hook>>,
}

impl IoShared {
    /// Records the outcome and runs the hook.
    pub(crate) fn finish(&self, outcome: Result<u64>) {
        *self.outcome.borrow_mut() = Some(outcome);
        self.done.set(true);
        if let Some(h) = self.hook.borrow_mut().take() {
            h();
        }
    }
}

/// A job of the I/O thread and its outcome.
pub(crate) struct Job {
    done: AtomicBool,
    outcome: Mutex<Option<Result<u64>>>,
}

impl Job {
    fn finish(&self, outcome: Result<u64>) {
        *lock(&self.outcome) = Some(outcome);
        self.done.store(true, Ordering::Release);
    }
}

/// The engine's watch over a job of the I/O thread.
struct Watch(Arc<Job>);

impl IoWork for Watch {
    fn advance(&mut self, _e: &mut Engine) -> (Option<Result<u64>>, bool) {
        if !self.0.done.load(Ordering::Acquire) {
            return (None, false);
        }
        let outcome = lock(&self.0.outcome).take().unwrap_or_else(|| {
            Err(Error::new(
                ErrorKind::Internal,
                "a finished I/O job has no outcome",
            ))
        });
        (Some(outcome), true)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

type Task = Box<dyn FnOnce() -> Result<u64> + Send>;

/// The I/O thread's queue: tasks and the jobs that report them.
type Queue = Mutex<mpsc::Sender<(Task, Arc<Job>)>>;

/// Hands `task` to the I/O thread.
pub(crate) fn submit(task: Task) -> Arc<Job> {
    static QUEUE: OnceLock<Queue> = OnceLock::new();
    let job = Arc::new(Job {
        done: AtomicBool::new(false),
        outcome: Mutex::new(None),
    });
    let q = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<(Task, Arc<Job>)>();
        std::thread::Builder::new()
            .name("weft-io".into())
            .spawn(move || {
                for (task, job) in rx {
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task))
                        .unwrap_or_else(|_| {
                            Err(Error::new(
                                ErrorKind::Internal,
                                "the I/O thread's task panicked",
                            ))
                        });
                    job.finish(outcome);
                }
            })
            .expect("start the weft I/O thread");
        Mutex::new(tx)
    });
    let sent = lock(q).send((task, job.clone()));
    if let Err(mpsc::SendError((_, j))) = sent {
        j.finish(Err(Error::new(
            ErrorKind::Internal,
            "the weft I/O thread has stopped",
        )));
    }
    job
}

enum Req {
    /// A collective access the engine advances.
    Engine {
        engine: Rc<RefCell<Engine>>,
        shared: Rc<IoShared>,
    },
}

/// A nonblocking file access in flight; it borrows its buffer for `'a`. Dropping an
/// unfinished request waits for it (its outcome is lost). Test or wait it to learn the bytes
/// moved.
#[must_use = "a file request must be tested or waited to learn its outcome"]
pub struct IoRequest<'a> {
    req: Req,
    reported: bool,
    _buf: PhantomData<&'a mut [u8]>,
}

impl std::fmt::Debug for IoRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IoRequest(finished: {})", self.is_done())
    }
}

impl<'a> IoRequest<'a> {
    /// Registers `work` with the engine and moves it as far as it goes.
    pub(crate) fn engine(engine: &Rc<RefCell<Engine>>, work: Box<dyn IoWork>) -> IoRequest<'a> {
        let shared = Rc::new(IoShared::default());
        {
            let mut e = engine.borrow_mut();
            e.register_io(IoSlot {
                work,
                shared: shared.clone(),
            });
            e.progress();
        }
        IoRequest {
            req: Req::Engine {
                engine: engine.clone(),
                shared,
            },
            reported: false,
            _buf: PhantomData,
        }
    }

    /// Runs `task` on the I/O thread, watched by the engine.
    pub(crate) fn thread(engine: &Rc<RefCell<Engine>>, task: Task) -> IoRequest<'a> {
        IoRequest::engine(engine, Box::new(Watch(submit(task))))
    }

    /// Whether the access has finished (does not advance it).
    pub fn is_done(&self) -> bool {
        match &self.req {
            Req::Engine { shared, .. } => shared.done.get(),
        }
    }

    /// Runs `hook` once the access has finished: at once if it has, else inside the engine
    /// progress call that sees it finish. The hook must not call into weft (the engine is
    /// busy then).
    pub fn on_complete(&mut self, hook: Hook) {
        match &self.req {
            Req::Engine { shared, .. } => {
                if shared.done.get() {
                    hook();
                } else {
                    *shared.hook.borrow_mut() = Some(hook);
                }
            }
        }
    }

    fn take_outcome(&mut self) -> Result<u64> {
        if self.reported {
            return Ok(0);
        }
        self.reported = true;
        let o = match &mut self.req {
            Req::Engine { shared, .. } => shared.outcome.borrow_mut().take(),
        };
        o.unwrap_or_else(|| {
            Err(Error::new(
                ErrorKind::Internal,
                "a finished file access has no outcome",
            ))
        })
    }

    /// Advances the access without blocking; `Some(bytes)` once it has finished (returned
    /// once; later calls give `Some(0)`).
    pub fn test(&mut self) -> Result<Option<u64>> {
        if !self.is_done() {
            match &self.req {
                Req::Engine { engine, .. } => {
                    if let Ok(mut e) = engine.try_borrow_mut() {
                        e.clear_advancing();
                        e.progress();
                    }
                }
            }
            if !self.is_done() {
                return Ok(None);
            }
        }
        self.take_outcome().map(Some)
    }

    /// Waits for the access to finish, advancing the engine meanwhile; the bytes moved.
    pub fn wait(mut self) -> Result<u64> {
        self.finish_wait();
        self.take_outcome()
    }

    fn finish_wait(&mut self) {
        match &self.req {
            Req::Engine { engine, shared } => {
                if shared.done.get() {
                    return;
                }
                let mut e = engine.borrow_mut();
                e.clear_advancing();
                let s = shared.clone();
                e.wait_until_polled(move |_| s.done.get());
            }
        }
    }
}

impl Drop for IoRequest<'_> {
    fn drop(&mut self) {
        if self.is_done() {
            return;
        }
        let busy = match &self.req {
            Req::Engine { engine, .. } => engine.try_borrow_mut().is_err(),
        };
        if busy {
            // Only while a panic unwinds through an engine call: nothing can be waited for
            // then, and the process goes down with the panic.
            return;
        }
        self.finish_wait();
    }
}
