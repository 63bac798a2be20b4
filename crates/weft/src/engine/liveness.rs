//! Peer death: finding dead local peers (pid checks) and lost TCP peers, and failing the
//! requests that can no longer complete with `PeerDead`.

use super::request::ReqKind;
use super::{Engine, ReqId, Route};
use std::time::Duration;
use weft_core::{Error, ErrorKind};

/// Time between checks that the awaited peers are still alive while a wait yields or
/// sleeps (a system call or two per local peer). By the clock, not by a count of yields: a
/// rank on a loaded core yields only as often as it is given the core, and a sleeping one
/// not at all.
pub(super) const LIVENESS_PERIOD: Duration = Duration::from_millis(10);

/// Time between liveness checks while a wait spins (a spin window, or `WEFT_YIELD=off`,
/// which never yields): a rank that keeps its core must not spend it on system calls, but
/// a dead peer must still be found.
pub(super) const LIVENESS_PERIOD_SPINNING: Duration = Duration::from_millis(100);

impl Engine {
    /// Marks dead local peers and fails the requests that can no longer complete. Network
    /// peers that pending requests wait on are reached (a TCP connection is made), so one
    /// that died before ever sending is found (its connect is refused).
    pub(super) fn check_peers(&mut self) {
        if let Some(net) = self.net.as_mut() {
            for r in &self.core.reqs {
                if r.kind == ReqKind::Free || r.done {
                    continue;
                }
                let waits_on = |w: u32| matches!(self.routes[w as usize], Route::Net(_));
                if let Some(w) = r.peer_world.filter(|&w| waits_on(w)) {
                    net.reach(w);
                } else if let Some(m) = &r.any_source_members {
                    for &w in m.iter().filter(|&&w| waits_on(w)) {
                        net.reach(w);
                    }
                }
            }
        }
        let mut any_dead = self.core.net_dead.iter().any(|&d| d);
        if let Some(shm) = self.shm.as_ref() {
            let mut newly_dead = false;
            for l in 0..self.core.local_world.len() as u32 {
                if l != self.core.my_local && !self.core.dead[l as usize] && !shm.peer_alive(l) {
                    self.core.dead[l as usize] = true;
                    newly_dead = true;
                }
            }
            if newly_dead {
                // Take whatever the dead peers managed to send before failing anything;
                // what is queued for them nobody will read.
                self.progress();
                let core = &mut self.core;
                for (l, q) in core.outq.iter_mut().enumerate() {
                    if core.dead[l] && !q.is_empty() {
                        core.outq_len -= q.len();
                        q.clear();
                    }
                }
            }
            any_dead |= self.core.dead.iter().any(|&d| d);
        }
        if any_dead {
            self.fail_dead_requests();
        }
    }

    /// Fails every pending request that depends on a dead peer (shared memory or network).
    pub(super) fn fail_dead_requests(&mut self) {
        let me = self.world_rank;
        let routes = &self.routes;
        let dead_world = |w: u32| match routes[w as usize] {
            Route::Local(l) => self.core.dead[l as usize],
            Route::Net(w) => self.core.net_dead[w as usize],
            Route::Myself => false,
        };
        let mut to_fail = Vec::new();
        for (id, r) in self.core.reqs.iter().enumerate() {
            if r.kind == ReqKind::Free || r.done {
                continue;
            }
            if let Some(w) = r.peer_world {
                if dead_world(w) {
                    to_fail.push((id as ReqId, w, r.kind));
                }
            } else if let Some(m) = &r.any_source_members {
                if let Some(&w) = m.iter().find(|&&w| dead_world(w)) {
                    to_fail.push((id as ReqId, w, r.kind));
                }
            }
        }
        for (id, w, kind) in to_fail {
            let op = if kind == ReqKind::Send {
                "send to"
            } else {
                "receive from"
            };
            self.core.matching.cancel_posted(|&p| p == id);
            let why = self.core.lost_why(w, &self.routes);
            self.core.fail(id, dead_peer_error(me, w, op, &why));
        }
    }
}

/// The error of an operation of rank `me` with `peer`, found dead; `why` is what its
/// network transport said, when it said something.
pub(super) fn dead_peer_error(me: u32, peer: u32, op: &str, why: &str) -> Error {
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(" ({why})")
    };
    Error::new(
        ErrorKind::PeerDead,
        format!("rank {me} {op} rank {peer}: rank {peer} is no longer running{why}"),
    )
}
