//! Catching SIGINT, SIGTERM and SIGHUP while jobs run, so Ctrl-C, a batch system's TERM or a
//! closed terminal ends the job cleanly (ranks killed, segments removed) instead of killing only the launcher.
//!
//! The handler only stores the signal number in an atomic; job loops poll it. Handlers are
//! installed by the first running job of the process and the previous dispositions restored
//! when the last one ends, so a test process running many jobs at once stays consistent.
//! Depends only on libc.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

const WATCHED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The first watched signal received since handlers were installed, or 0.
static PENDING: AtomicI32 = AtomicI32::new(0);

struct Installed {
    jobs: usize,
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

static INSTALLED: Mutex<Installed> = Mutex::new(Installed {
    jobs: 0,
    previous: Vec::new(),
});

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: anything else is not async-signal-safe.
    let _ = PENDING.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
}

/// Held by a running job; while any is alive, the watched signals are caught.
pub(crate) struct SignalWatch(());

impl SignalWatch {
    pub(crate) fn start() -> SignalWatch {
        let mut st = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        if st.jobs == 0 {
            PENDING.store(0, Ordering::SeqCst);
            for sig in WATCHED {
                // SAFETY: sigaction with a zeroed struct, an empty mask and a handler that
                // only touches an atomic; the previous action is saved to be put back.
                unsafe {
                    let mut action: libc::sigaction = std::mem::zeroed();
                    action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                    action.sa_flags = libc::SA_RESTART;
                    libc::sigemptyset(&mut action.sa_mask);
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(sig, &action, &mut old) == 0 {
                        st.previous.push((sig, old));
                    }
                }
            }
        }
        st.jobs += 1;
        SignalWatch(())
    }

    /// The signal that asked the launcher to stop, if one came.
    pub(crate) fn pending(&self) -> Option<i32> {
        match PENDING.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        let mut st = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        st.jobs -= 1;
        if st.jobs == 0 {
            for (sig, old) in st.previous.drain(..) {
                // SAFETY: restores the action saved by `start`.
                unsafe {
                    libc::sigaction(sig, &old, std::ptr::null_mut());
                }
            }
            PENDING.store(0, Ordering::SeqCst);
        }
    }
}

/// Restores the default action of SIGPIPE (Rust ignores it), so a command whose report is
/// piped into `head` ends quietly when the reader goes away instead of failing on a write.
/// For commands that only print; the launcher keeps SIGPIPE ignored to forward output safely.
pub fn default_sigpipe() {
    // SAFETY: setting a standard disposition (no handler code of ours) is always sound.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
