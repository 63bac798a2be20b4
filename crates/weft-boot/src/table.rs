//! The key-value table and named barriers behind both the in-memory store and the TCP
//! server: one mutex, one condition variable woken on every change.
//!
//! No networking here; depends only on weft-core.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use weft_core::{Error, ErrorKind, Result};

/// One abort request recorded by a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbortRecord {
    /// The rank that asked, when it said.
    pub rank: Option<u32>,
    /// The exit code it asked for.
    pub code: i32,
    /// Its message.
    pub message: String,
}

#[derive(Default)]
struct State {
    values: HashMap<String, Vec<u8>>,
    barriers: HashMap<String, BarrierState>,
    aborts: Vec<AbortRecord>,
    closed: bool,
}

/// A reusable barrier: `generation` advances each time `count` callers have arrived.
struct BarrierState {
    count: u32,
    arrived: u32,
    generation: u64,
}

#[derive(Default)]
pub(crate) struct Table {
    state: Mutex<State>,
    changed: Condvar,
}

/// Longest wait honoured; larger timeouts (e.g. `Duration::MAX`) are clamped so deadline
/// arithmetic cannot overflow.
const MAX_WAIT: Duration = Duration::from_secs(365 * 24 * 3600);

impl Table {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the maps half-updated (every update is
        // a single insert), so a poisoned lock is still safe to use.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait_until<'a>(
        &self,
        guard: MutexGuard<'a, State>,
        deadline: Instant,
    ) -> (MutexGuard<'a, State>, bool) {
        let now = Instant::now();
        if now >= deadline {
            return (guard, true);
        }
        let (g, _) = self
            .changed
            .wait_timeout(guard, deadline - now)
            .unwrap_or_else(|e| e.into_inner());
        (g, Instant::now() >= deadline)
    }

    pub(crate) fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        let mut st = self.lock();
        if st.closed {
            return Err(closed_error());
        }
        st.values.insert(key.to_owned(), value.to_vec());
        drop(st);
        self.changed.notify_all();
        Ok(())
    }

    pub(crate) fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        let deadline = Instant::now() + timeout.min(MAX_WAIT);
        let mut st = self.lock();
        loop {
            if let Some(v) = st.values.get(key) {
                return Ok(v.clone());
            }
            if st.closed {
                return Err(closed_error());
            }
            let (g, expired) = self.wait_until(st, deadline);
            st = g;
            if expired && !st.values.contains_key(key) {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "get {key:?}: no rank put it within {} ms",
                        timeout.min(MAX_WAIT).as_millis()
                    ),
                ));
            }
        }
    }

    /// Waits until every key exists (one deadline for all), then returns the values in order.
    pub(crate) fn get_many(&self, keys: &[String], timeout: Duration) -> Result<Vec<Vec<u8>>> {
        let deadline = Instant::now() + timeout.min(MAX_WAIT);
        let mut st = self.lock();
        loop {
            if let Some(missing) = keys.iter().find(|k| !st.values.contains_key(*k)) {
                if st.closed {
                    return Err(closed_error());
                }
                let (g, expired) = self.wait_until(st, deadline);
                st = g;
                if expired && !st.values.contains_key(missing) {
                    let absent = keys.iter().filter(|k| !st.values.contains_key(*k)).count();
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        format!(
                            "get {missing:?} (and {} other keys): no rank put it within {} ms",
                            absent - 1,
                            timeout.min(MAX_WAIT).as_millis()
                        ),
                    ));
                }
                continue;
            }
            return Ok(keys.iter().map(|k| st.values[k].clone()).collect());
        }
    }

    pub(crate) fn barrier(&self, name: &str, count: u32, timeout: Duration) -> Result<()> {
        if count == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("barrier {name:?}: count must be at least 1"),
            ));
        }
        let deadline = Instant::now() + timeout.min(MAX_WAIT);
        let mut st = self.lock();
        if st.closed {
            return Err(closed_error());
        }
        let b = st.barriers.entry(name.to_owned()).or_insert(BarrierState {
            count,
            arrived: 0,
            generation: 0,
        });
        if b.arrived == 0 {
            b.count = count;
        } else if b.count != count {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "barrier {name:?}: count {count} differs from the {} given by callers already waiting",
                    b.count
                ),
            ));
        }
        b.arrived += 1;
        let generation = b.generation;
        if b.arrived == b.count {
            b.arrived = 0;
            b.generation += 1;
            drop(st);
            self.changed.notify_all();
            return Ok(());
        }
        loop {
            let (g, expired) = self.wait_until(st, deadline);
            st = g;
            let closed = st.closed;
            let b = st
                .barriers
                .get_mut(name)
                .expect("barriers are never removed");
            if b.generation != generation {
                return Ok(());
            }
            if closed {
                return Err(closed_error());
            }
            if expired {
                // Withdraw, so the barrier's count stays right for callers still waiting.
                b.arrived -= 1;
                let arrived = b.arrived + 1;
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "barrier {name:?}: only {arrived} of {count} callers arrived within {} ms",
                        timeout.min(MAX_WAIT).as_millis()
                    ),
                ));
            }
        }
    }

    /// Callers waiting at barrier `name` now (tests order their callers by it).
    #[cfg(test)]
    pub(crate) fn waiting_at(&self, name: &str) -> u32 {
        self.lock().barriers.get(name).map_or(0, |b| b.arrived)
    }

    pub(crate) fn record_abort(&self, record: AbortRecord) {
        self.lock().aborts.push(record);
        self.changed.notify_all();
    }

    pub(crate) fn aborts(&self) -> Vec<AbortRecord> {
        self.lock().aborts.clone()
    }

    /// Wakes every waiter with an error; later calls fail at once.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }
}

fn closed_error() -> Error {
    Error::new(ErrorKind::PeerDead, "the bootstrap store is shutting down")
}
