//! Job-wide barrier and reduce across nodes (issue 7 §4), on top of the node engine: the
//! participants of each node complete the round locally in the node's table, the node's
//! leader (its local rank 0) exchanges the node's part with the other nodes' leaders over a
//! communicator of leaders made once at creation, and then releases its node's waiters with
//! the job-wide result.
//!
//! What `n` means: in [`JobSync::barrier`] and [`JobSync::reduce`], `n` counts the
//! participants **on the caller's node** (all of them pass the same `n`; nodes may pass
//! different ones), and every node of the job takes part in every round. Each node's local
//! rank 0 must be one of its participants: it carries the node's part between nodes.
//!
//! Failures do not hang the job: a leader whose local wait fails (a local rank died) still
//! takes part in the leaders' exchange, flagging the failure; a leader whose exchange fails
//! (a node's rank vanished) releases its node with the error; every participant of every
//! node then returns an error instead of waiting.
//!
//! Depends on the node engine ([`super::SyncEngine`]'s tagged words and wait policy) and on
//! the runtime's communicators; nothing below the runtime knows about nodes' leaders.

use super::{Entry, SyncEngine, SyncOp, SyncValue, REDUCE_LOCK};
use crate::{Comm, Weft, UNDEFINED};
use std::sync::atomic::Ordering::SeqCst;
use weft_core::{Error, ErrorKind, Result};

/// Error kinds as they travel between nodes and from a leader to its node (index + 1; 0 is
/// success).
const KINDS: [ErrorKind; 18] = [
    ErrorKind::InvalidRank,
    ErrorKind::InvalidTag,
    ErrorKind::InvalidCount,
    ErrorKind::InvalidRoot,
    ErrorKind::InvalidComm,
    ErrorKind::InvalidType,
    ErrorKind::InvalidOp,
    ErrorKind::InvalidRequest,
    ErrorKind::InvalidArgument,
    ErrorKind::Truncate,
    ErrorKind::PeerDead,
    ErrorKind::Auth,
    ErrorKind::Protocol,
    ErrorKind::Timeout,
    ErrorKind::Io,
    ErrorKind::Config,
    ErrorKind::Unsupported,
    ErrorKind::Internal,
];

fn kind_code(kind: ErrorKind) -> u64 {
    KINDS
        .iter()
        .position(|&k| k == kind)
        .map_or(KINDS.len() as u64, |i| i as u64 + 1)
}

fn code_kind(code: u64) -> ErrorKind {
    KINDS
        .get((code as usize).wrapping_sub(1))
        .copied()
        .unwrap_or(ErrorKind::Internal)
}

/// The synchronisation engine for a job that may span several nodes: the node engine plus
/// the leaders' communicator. One per rank (not shared between threads: it holds a
/// communicator); drop it before [`Weft::finalize`].
pub struct JobSync {
    engine: SyncEngine,
    /// The nodes' leaders (local rank 0 of every node), ordered by world rank; only on a
    /// leader.
    leaders: Option<Comm>,
    local_size: u32,
    nodes: u32,
    world_rank: u32,
}

impl JobSync {
    /// Creates the node table named `name` (as [`SyncEngine::new`]) and the communicator of
    /// the nodes' leaders. Collective over every rank of the job.
    pub fn new(weft: &Weft, name: &str) -> Result<JobSync> {
        let engine = SyncEngine::new(weft, name)?;
        let world = weft.world();
        let (local_rank, local_size) = weft.local();
        let color = if local_rank == 0 { 0 } else { UNDEFINED };
        let leaders = world.split(color, world.rank() as i32)?;
        let nodes = weft
            .engine
            .borrow()
            .node_of()
            .iter()
            .copied()
            .max()
            .map_or(1, |m| m + 1);
        Ok(JobSync {
            engine,
            leaders,
            local_size,
            nodes,
            world_rank: world.rank(),
        })
    }

    /// The node engine underneath (for node-local operations; an address serves one kind
    /// of operation, so keep job-wide addresses apart from node-wide ones).
    pub fn engine(&self) -> &SyncEngine {
        &self.engine
    }

    /// Nodes the job spans.
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// Ranks on the caller's node.
    pub fn local_size(&self) -> u32 {
        self.local_size
    }

    /// Returns once the participants of every node have called `barrier` on `addr` in this
    /// round (`n` of them on the caller's node, see the module documentation).
    pub fn barrier(&self, addr: u64, n: u32) -> Result<()> {
        self.round(addr, 0u64, None, n, "job barrier").map(drop)
    }

    /// Combines `v` from every participant of every node with `op` (`n` counted on the
    /// caller's node); every participant gets the result. Within a node values combine in
    /// arrival order, across nodes in the order of the leaders' world ranks.
    pub fn reduce<T: SyncValue>(&self, addr: u64, v: T, op: SyncOp, n: u32) -> Result<T> {
        if !T::supports(op) {
            return Err(Error::new(
                ErrorKind::InvalidOp,
                format!(
                    "sync job reduce at {addr:#x}: {op:?} does not apply to {}",
                    std::any::type_name::<T>()
                ),
            ));
        }
        self.round(addr, v, Some(op), n, "job reduce")
    }

    /// Reduces whole buffers across every node: `dst[i]` = `op` over `src[i]` of every
    /// participant of every node (`n` counted on the caller's node, as in
    /// [`JobSync::reduce`]). The node reduces first ([`SyncEngine::burst_reduce`], every
    /// participant then holds the node's result), then the leaders exchange their nodes'
    /// results chunk by chunk (`WEFT_SYNC_BURST_BYTES` at a time) and combine them in the
    /// order of their world ranks, so every participant of the job gets the same bits; each
    /// leader hands a combined chunk to its node through its burst slot. A leader whose node
    /// or exchange failed still takes part (flagging the failure), and its node's
    /// participants then return the error instead of waiting.
    pub fn burst_reduce<T: SyncValue>(
        &self,
        addr: u64,
        src: &[T],
        dst: &mut [T],
        op: SyncOp,
        n: u32,
    ) -> Result<()> {
        let what = "job burst reduce";
        let local = self.engine.burst_reduce(addr, src, dst, op, n);
        if self.nodes <= 1 {
            return local;
        }
        // Arguments are checked the same way everywhere, so a bad call fails on every
        // participant here; only a dead local rank makes the leader go on flagged.
        if let Err(e) = &local {
            if self.leaders.is_none() || e.kind() != ErrorKind::PeerDead {
                return local;
            }
        }
        let eng = &self.engine;
        let slot = eng.geo.burst_slots_offset();
        let chunk = eng.geo.burst_bytes / 8;
        let mut failure = local.err();
        let mut bits = vec![0u64; chunk.min(dst.len())];
        // The leaders' exchange buffers, sized once for a whole chunk and cut per chunk.
        let leader_count = self.leaders.as_ref().map_or(0, |l| l.size() as usize);
        let mut mine: Vec<u64> = Vec::with_capacity(chunk.min(dst.len()) + 1);
        let mut all = vec![0u64; (chunk.min(dst.len()) + 1) * leader_count];
        let mut done = 0;
        while done < dst.len() {
            let len = chunk.min(dst.len() - done);
            let mut status = 0u64;
            if let Some(leaders) = &self.leaders {
                status = failure.as_ref().map_or(0, |e| kind_code(e.kind()));
                // Each leader's part: its status, then its node's chunk.
                mine.clear();
                mine.push(status);
                mine.extend(dst[done..done + len].iter().map(|v| v.to_bits()));
                let all = &mut all[..(len + 1) * leaders.size() as usize];
                match leaders.allgather(&mine, all) {
                    Ok(()) => {
                        let mut parts = all.chunks(len + 1);
                        if let Some(bad) = parts.clone().find(|p| p[0] != 0) {
                            status = bad[0];
                        }
                        if let Some(first) = parts.next() {
                            for (b, &x) in bits.iter_mut().zip(&first[1..]) {
                                *b = x;
                            }
                            for p in parts {
                                for (b, &x) in bits.iter_mut().zip(&p[1..]) {
                                    *b =
                                        T::combine(op, T::from_bits(*b), T::from_bits(x)).to_bits();
                                }
                            }
                        }
                    }
                    Err(e) => {
                        status = kind_code(e.kind());
                        failure.get_or_insert(e);
                    }
                }
                if status == 0 {
                    eng.region.write(slot, bytemuck::cast_slice(&bits[..len]))?;
                }
            }
            // The leader's status reaches its node's participants with the release: a
            // node-local reduce in which only the leader contributes a non-zero value.
            let released: u64 = eng.reduce(addr, status, SyncOp::Max, n)?;
            if released != 0 {
                let e = failure.unwrap_or_else(|| {
                    Error::new(
                        code_kind(released),
                        format!(
                            "sync {what} at {addr:#x}: the round failed on a node ({})",
                            code_kind(released).name()
                        ),
                    )
                });
                return Err(e.context(format!("sync {what} at {addr:#x}")));
            }
            if self.leaders.is_none() {
                eng.region
                    .read(slot, bytemuck::cast_slice_mut(&mut bits[..len]))?;
            }
            for (d, b) in dst[done..done + len].iter_mut().zip(&bits[..len]) {
                *d = T::from_bits(*b);
            }
            // The leader does not overwrite its slot before everyone copied this chunk.
            eng.barrier(addr, n)?;
            done += len;
        }
        Ok(())
    }

    fn round<T: SyncValue>(
        &self,
        addr: u64,
        v: T,
        op: Option<SyncOp>,
        n: u32,
        what: &str,
    ) -> Result<T> {
        SyncEngine::check_n(what, addr, n)?;
        if n > self.local_size {
            return Err(Error::new(
                ErrorKind::InvalidCount,
                format!(
                    "sync {what} at {addr:#x}: {n} participants on this node but it has {} ranks",
                    self.local_size
                ),
            ));
        }
        let eng = &self.engine;
        let e = eng.lookup(addr)?;
        // Arrive: combine our value into the node's accumulator.
        let arrived = eng.acquire(&e, REDUCE_LOCK, what, addr).map(|()| {
            let a = e.arrive.load(SeqCst);
            let acc = match op {
                Some(op) if a & 0xffff_ffff > 0 => {
                    T::combine(op, T::from_bits(e.accum.load(SeqCst)), v)
                }
                _ => v,
            };
            e.accum.store(acc.to_bits(), SeqCst);
            e.arrive.store(a + 1, SeqCst);
            e.lock.fetch_and(!REDUCE_LOCK, SeqCst);
            SyncEngine::notify(&e);
            a >> 32
        });
        let Some(leaders) = &self.leaders else {
            let generation = arrived?;
            eng.wait(&e, what, addr, || e.arrive.load(SeqCst) >> 32 != generation)?;
            return Self::outcome(&e, what, addr);
        };
        // The leader: wait for the node, exchange with the other leaders, release the node.
        // A leader that failed locally still joins the exchange (flagging the failure), or
        // the other nodes' leaders would wait for it forever.
        let (generation, local) = match arrived {
            Ok(generation) => {
                // Only the leader moves the generation on, so within this round "at least
                // n" is a plain comparison (more than n arrivals is the callers' error, not
                // a hang).
                let complete = (generation << 32) | n as u64;
                let local = eng.wait(&e, what, addr, || e.arrive.load(SeqCst) >= complete);
                (generation, local)
            }
            Err(err) => (e.arrive.load(SeqCst) >> 32, Err(err)),
        };
        let mut status = match &local {
            Ok(()) => 0,
            Err(err) => kind_code(err.kind()),
        };
        let mut result = e.accum.load(SeqCst);
        let mut failure = local.err();
        if leaders.size() > 1 {
            let mine = [result, status];
            let mut all = vec![0u64; 2 * leaders.size() as usize];
            match leaders.allgather(&mine, &mut all) {
                Ok(()) => {
                    let mut parts = all.chunks(2);
                    if let Some(bad) = parts.clone().find(|p| p[1] != 0) {
                        status = bad[1];
                    }
                    if let (Some(op), Some(first)) = (op, parts.next()) {
                        let combined = parts.fold(T::from_bits(first[0]), |acc, p| {
                            T::combine(op, acc, T::from_bits(p[0]))
                        });
                        result = combined.to_bits();
                    }
                }
                Err(err) => {
                    status = kind_code(err.kind());
                    failure.get_or_insert(err);
                }
            }
        }
        e.result.store(result, SeqCst);
        e.value.store(status, SeqCst);
        e.arrive.store((generation + 1) << 32, SeqCst);
        SyncEngine::notify(&e);
        if let Some(err) = failure {
            return Err(err.context(format!(
                "sync {what} at {addr:#x} (node leader, world rank {})",
                self.world_rank
            )));
        }
        Self::outcome(&e, what, addr)
    }

    /// The released round's result, or the error its leader published.
    fn outcome<T: SyncValue>(e: &Entry<'_>, what: &str, addr: u64) -> Result<T> {
        match e.value.load(SeqCst) {
            0 => Ok(T::from_bits(e.result.load(SeqCst))),
            code => Err(Error::new(
                code_kind(code),
                format!(
                    "sync {what} at {addr:#x}: the round failed on a node ({})",
                    code_kind(code).name()
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_travel_as_codes() {
        for k in [ErrorKind::PeerDead, ErrorKind::Timeout, ErrorKind::Internal] {
            assert_eq!(code_kind(kind_code(k)), k);
        }
        assert_ne!(kind_code(ErrorKind::InvalidRank), 0);
        assert_eq!(code_kind(0), ErrorKind::Internal);
        assert_eq!(code_kind(999), ErrorKind::Internal);
    }
}
