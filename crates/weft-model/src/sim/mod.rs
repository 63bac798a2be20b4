//! A discrete-event simulator of collective schedules: every rank walks its own program (the
//! steps a collective's plan builder made for it) through a model of the machine, and the
//! simulator reports when each rank finishes, how busy each link was and, for a few ranks,
//! a timeline of their steps (`weft sim`).
//!
//! What a step is, as the runtime's schedules run it: the step's local work (copies,
//! reductions, single copies from a peer, node-wide arrivals) in order on the rank's CPU,
//! then its receives are posted, then its sends one after the other, each costing the
//! sender the per-message overhead `o` (LogGP); the step ends when all its messages are
//! done and, if it arrived at a node-wide phase, when every rank of the node has arrived.
//!
//! Messages: the k-th send from a to b matches the k-th receive at b from a (MPI's
//! non-overtaking order). A transfer starts once both sides are posted (rendezvous; an
//! eager message, `bytes <= eager_bytes`, leaves when sent and its send completes after
//! `o`). Between ranks of one node the receiver's CPU copies the data (`intra`: latency and
//! time per byte; the single copy of Cross Memory Attach or shared memory). Between nodes
//! the data crosses the links of its route ([`Routes`]): it takes every link of the route
//! from the time the last of them is free (links are reserved first come, first served in
//! the order the simulation meets the transfers), for `gap + bytes · time per byte` of the
//! slowest link, and arrives `inter_latency` after it leaves the last. With fewer cores
//! than ranks on a node, every piece of CPU work (local work and receive copies) also
//! needs one of the node's cores, the earliest free.
//!
//! Deterministic (ties go to the earlier event) and pure: no I/O, no clock. Per event
//! nothing is allocated once the per-rank lists have grown to their working size.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use weft_core::{Error, ErrorKind, Result};

/// One action of a rank's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Send `bytes` to rank `peer`.
    Send { peer: u32, bytes: u64 },
    /// Receive `bytes` from rank `peer`.
    Recv { peer: u32, bytes: u64 },
    /// A local copy of `bytes` (memory to memory, or into or out of the node's area).
    Copy { bytes: u64 },
    /// A copy made after the step's messages are posted.
    CopyAfterPosting { bytes: u64 },
    /// Combining `bytes` of two buffers into one.
    Reduce { bytes: u64 },
    /// One Cross Memory Attach read or write of `bytes` of a peer's buffer.
    Cma { bytes: u64 },
    /// Arrival at the node's next phase: the step ends only once every rank of the node
    /// has arrived there.
    Arrive,
    /// A small fixed piece of bookkeeping (publishing or checking a header).
    Header,
}

/// One rank's program: its actions, cut into steps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    ops: Vec<Op>,
    /// Index in `ops` where each step starts.
    steps: Vec<u32>,
}

impl Program {
    /// An empty program.
    pub fn new() -> Program {
        Program::default()
    }

    /// Starts a new step.
    pub fn step(&mut self) {
        self.steps.push(self.ops.len() as u32);
    }

    /// Adds an action to the current step (the first step when none is started). A copy or
    /// reduction right after one of its kind in the same step joins it (one action of the
    /// summed bytes: the same time, as neither has a fixed cost), so plans that copy block
    /// by block stay small.
    pub fn push(&mut self, op: Op) {
        if self.steps.is_empty() {
            self.step();
        }
        let in_step = self.ops.len() > *self.steps.last().unwrap_or(&0) as usize;
        if in_step {
            if let Some(last) = self.ops.last_mut() {
                match (last, op) {
                    (Op::Copy { bytes: a }, Op::Copy { bytes: b })
                    | (Op::CopyAfterPosting { bytes: a }, Op::CopyAfterPosting { bytes: b })
                    | (Op::Reduce { bytes: a }, Op::Reduce { bytes: b }) => {
                        *a += b;
                        return;
                    }
                    _ => {}
                }
            }
        }
        self.ops.push(op);
    }

    /// Steps in the program.
    pub fn step_count(&self) -> usize {
        self.steps.len()
    }

    /// Actions in the program.
    pub fn op_count(&self) -> usize {
        self.ops.len()
    }

    /// The actions of step `s`.
    pub fn step_ops(&self, s: usize) -> &[Op] {
        let end = self
            .steps
            .get(s + 1)
            .map_or(self.ops.len(), |&e| e as usize);
        &self.ops[self.steps[s] as usize..end]
    }
}

/// The machine's figures (times in nanoseconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Ranks per node: ranks `i·ppn .. (i+1)·ppn` share node i.
    pub ppn: u32,
    /// Cores per node (CPU work of more ranks than cores queues for them).
    pub cores: u32,
    /// Per-message CPU overhead of a send (LogGP o).
    pub overhead_ns: f64,
    /// Between ranks of one node: start-up and the receiver's time per byte.
    pub intra_latency_ns: f64,
    pub intra_ns_per_byte: f64,
    /// Between nodes: time from leaving the last link to arrival (LogGP L) and the per
    /// message gap on each link (LogGP g).
    pub inter_latency_ns: f64,
    pub inter_gap_ns: f64,
    /// Local copy, reduction and single-copy (Cross Memory Attach) rates.
    pub copy_ns_per_byte: f64,
    pub reduce_ns_per_byte: f64,
    pub cma_latency_ns: f64,
    pub cma_ns_per_byte: f64,
    /// Time from the last arrival at a node-wide phase to every rank seeing it.
    pub arrive_ns: f64,
    /// Fixed cost of [`Op::Header`].
    pub header_ns: f64,
    /// Messages up to this size are eager.
    pub eager_bytes: u64,
}

/// The network between nodes: links with their time per byte, and each node pair's route.
pub trait Routes {
    /// Links in the network.
    fn link_count(&self) -> usize;
    /// Time per byte of link `l`, ns.
    fn link_ns_per_byte(&self, l: usize) -> f64;
    /// Replaces `out` with the links a message from node `src` to node `dst` crosses.
    fn route(&mut self, src: u32, dst: u32, out: &mut Vec<u32>);
}

/// A flat network: every node has one NIC (a send link and a receive link of one
/// bandwidth) on a switch that never blocks. Links `2i` and `2i + 1` are node i's.
#[derive(Clone, Copy, Debug)]
pub struct FlatNetwork {
    pub nodes: u32,
    pub ns_per_byte: f64,
}

impl Routes for FlatNetwork {
    fn link_count(&self) -> usize {
        2 * self.nodes as usize
    }
    fn link_ns_per_byte(&self, _l: usize) -> f64 {
        self.ns_per_byte
    }
    fn route(&mut self, src: u32, dst: u32, out: &mut Vec<u32>) {
        out.clear();
        out.push(2 * src);
        out.push(2 * dst + 1);
    }
}

/// One step of a traced rank: when it started, when its local work was done (its
/// messages posted) and when it ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepSpan {
    pub rank: u32,
    pub step: u32,
    pub start_ns: f64,
    pub posted_ns: f64,
    pub end_ns: f64,
}

/// What a simulation found.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// When each rank finished its program (all start at 0).
    pub finish_ns: Vec<f64>,
    /// Bytes and busy time of each network link.
    pub link_bytes: Vec<u64>,
    pub link_busy_ns: Vec<f64>,
    /// Bytes each rank copied in as a receiver on its node, and the time it took.
    pub intra_bytes: Vec<u64>,
    pub intra_busy_ns: Vec<f64>,
    /// Messages and steps simulated.
    pub messages: u64,
    pub steps: u64,
    /// The steps of the traced ranks.
    pub trace: Vec<StepSpan>,
}

impl Outcome {
    /// The collective's completion: the last rank's finish.
    pub fn completion_ns(&self) -> f64 {
        self.finish_ns.iter().copied().fold(0.0, f64::max)
    }
}

/// A step's start, queued.
#[derive(Clone, Copy, Debug)]
struct Event {
    time: f64,
    seq: u64,
    rank: u32,
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    /// Reversed: the heap pops the earliest, ties by the order of queueing.
    fn cmp(&self, o: &Self) -> Ordering {
        o.time.total_cmp(&self.time).then(o.seq.cmp(&self.seq))
    }
}

/// A message posted on one side and not yet matched.
#[derive(Clone, Copy, Debug)]
struct Posted {
    peer: u32,
    bytes: u64,
    time: f64,
}

struct Rank {
    step: u32,
    /// Messages of the current step not yet done.
    outstanding: u32,
    /// Whether the current step waits for a node-wide phase.
    arriving: bool,
    /// When the step's last finished part finished.
    done_at: f64,
    /// When the rank's CPU is next free.
    cpu_at: f64,
    /// Sends to this rank not yet matched, and its receives not yet matched.
    unexpected: Vec<Posted>,
    receives: Vec<Posted>,
}

struct Node {
    arrived: u32,
    latest: f64,
    waiters: Vec<u32>,
    cores_free_at: Vec<f64>,
}

/// Runs every rank's program to its end on `machine` and `routes`; `trace` says which
/// ranks' steps to record. An error names a rank left waiting (programs that do not match:
/// a send without its receive) or a peer out of range.
pub fn simulate(
    programs: &[Program],
    machine: &Machine,
    routes: &mut dyn Routes,
    trace: &[u32],
) -> Result<Outcome> {
    Sim::new(programs, machine, routes, trace)?.run()
}

struct Sim<'a> {
    programs: &'a [Program],
    m: Machine,
    routes: &'a mut dyn Routes,
    ranks: Vec<Rank>,
    nodes: Vec<Node>,
    heap: BinaryHeap<Event>,
    seq: u64,
    link_free_at: Vec<f64>,
    link_ns_per_byte: Vec<f64>,
    route: Vec<u32>,
    traced: Vec<bool>,
    out: Outcome,
}

impl<'a> Sim<'a> {
    fn new(
        programs: &'a [Program],
        machine: &Machine,
        routes: &'a mut dyn Routes,
        trace: &[u32],
    ) -> Result<Sim<'a>> {
        let p = programs.len();
        let bad = |what: String| Error::new(ErrorKind::InvalidArgument, what);
        if machine.ppn == 0 || machine.cores == 0 {
            return Err(bad("sim: ppn and cores must be at least 1".into()));
        }
        for (r, prog) in programs.iter().enumerate() {
            for op in &prog.ops {
                if let Op::Send { peer, .. } | Op::Recv { peer, .. } = *op {
                    if peer as usize >= p || peer as usize == r {
                        return Err(bad(format!(
                            "sim: rank {r} names peer {peer} (ranks 0..{p}, not itself)"
                        )));
                    }
                }
            }
        }
        let node_count = p.div_ceil(machine.ppn as usize);
        let links = routes.link_count();
        let mut traced = vec![false; p];
        for &t in trace {
            if let Some(x) = traced.get_mut(t as usize) {
                *x = true;
            }
        }
        let cores = if machine.cores >= machine.ppn {
            0
        } else {
            machine.cores as usize
        };
        Ok(Sim {
            programs,
            m: *machine,
            link_ns_per_byte: (0..links).map(|l| routes.link_ns_per_byte(l)).collect(),
            routes,
            ranks: (0..p)
                .map(|_| Rank {
                    step: 0,
                    outstanding: 0,
                    arriving: false,
                    done_at: 0.0,
                    cpu_at: 0.0,
                    unexpected: Vec::new(),
                    receives: Vec::new(),
                })
                .collect(),
            nodes: (0..node_count)
                .map(|_| Node {
                    arrived: 0,
                    latest: 0.0,
                    waiters: Vec::new(),
                    cores_free_at: vec![0.0; cores],
                })
                .collect(),
            heap: BinaryHeap::with_capacity(p),
            seq: 0,
            link_free_at: vec![0.0; links],
            route: Vec::with_capacity(16),
            traced,
            out: Outcome {
                finish_ns: vec![0.0; p],
                link_bytes: vec![0; links],
                link_busy_ns: vec![0.0; links],
                intra_bytes: vec![0; p],
                intra_busy_ns: vec![0.0; p],
                messages: 0,
                steps: 0,
                trace: Vec::new(),
            },
        })
    }

    fn push(&mut self, rank: u32, time: f64) {
        self.seq += 1;
        self.heap.push(Event {
            time,
            seq: self.seq,
            rank,
        });
    }

    fn node_of(&self, rank: u32) -> usize {
        (rank / self.m.ppn) as usize
    }

    /// `work_ns` of CPU work of `rank` ready at `ready`: returns when it ends.
    fn cpu(&mut self, rank: u32, ready: f64, work_ns: f64) -> f64 {
        let node = self.node_of(rank);
        let r = &mut self.ranks[rank as usize];
        let mut start = ready.max(r.cpu_at);
        let cores = &mut self.nodes[node].cores_free_at;
        let core = (0..cores.len()).min_by(|&a, &b| cores[a].total_cmp(&cores[b]));
        if let Some(c) = core {
            start = start.max(cores[c]);
            cores[c] = start + work_ns;
        }
        r.cpu_at = start + work_ns;
        r.cpu_at
    }

    fn run(mut self) -> Result<Outcome> {
        for r in 0..self.programs.len() as u32 {
            self.push(r, 0.0);
        }
        while let Some(ev) = self.heap.pop() {
            self.start_step(ev.rank, ev.time);
        }
        for (r, st) in self.ranks.iter().enumerate() {
            if (st.step as usize) < self.programs[r].step_count() || st.outstanding > 0 {
                return Err(Error::new(
                    ErrorKind::Internal,
                    format!(
                        "sim: rank {r} never finished step {} of {} ({} messages unmatched{}): \
                         the programs do not match",
                        st.step.saturating_sub(1),
                        self.programs[r].step_count(),
                        st.outstanding,
                        if st.arriving {
                            ", waiting at a node-wide phase"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
        Ok(self.out)
    }

    /// Rank `rank` finished its previous step at `now`: runs the next one (or finishes).
    fn start_step(&mut self, rank: u32, now: f64) {
        let programs = self.programs;
        let prog = &programs[rank as usize];
        let s = self.ranks[rank as usize].step as usize;
        if s == prog.step_count() {
            self.out.finish_ns[rank as usize] = now;
            return;
        }
        self.out.steps += 1;
        let m = self.m;
        {
            let r = &mut self.ranks[rank as usize];
            r.step += 1;
            r.cpu_at = r.cpu_at.max(now);
            r.done_at = now;
            r.arriving = false;
        }
        let ops = prog.step_ops(s);
        // Every message of the step, and one more that holds the step open until all are
        // posted (a message matched on posting must not end the step early).
        let msgs = ops
            .iter()
            .filter(|o| matches!(o, Op::Send { .. } | Op::Recv { .. }))
            .count();
        self.ranks[rank as usize].outstanding = msgs as u32 + 1;
        // Local work, in order.
        let mut arrive_at = None;
        for op in ops {
            let work = match *op {
                Op::Copy { bytes } => bytes as f64 * m.copy_ns_per_byte,
                Op::Reduce { bytes } => bytes as f64 * m.reduce_ns_per_byte,
                Op::Cma { bytes } => m.cma_latency_ns + bytes as f64 * m.cma_ns_per_byte,
                Op::Header => m.header_ns,
                Op::Arrive => {
                    arrive_at = Some(self.ranks[rank as usize].cpu_at);
                    continue;
                }
                _ => continue,
            };
            self.cpu(rank, now, work);
        }
        // Receives, then sends (each with its overhead), then the copies after posting.
        for op in ops {
            if let Op::Recv { peer, bytes } = *op {
                let t = self.ranks[rank as usize].cpu_at;
                self.post_recv(rank, peer, bytes, t);
            }
        }
        for op in ops {
            match *op {
                Op::Send { peer, bytes } => {
                    let t = self.cpu(rank, now, m.overhead_ns);
                    self.post_send(rank, peer, bytes, t);
                }
                Op::CopyAfterPosting { bytes } => {
                    self.cpu(rank, now, bytes as f64 * m.copy_ns_per_byte);
                }
                _ => {}
            }
        }
        let posted = self.ranks[rank as usize].cpu_at;
        {
            let r = &mut self.ranks[rank as usize];
            r.done_at = r.done_at.max(posted);
        }
        if self.traced[rank as usize] {
            self.out.trace.push(StepSpan {
                rank,
                step: s as u32,
                start_ns: now,
                posted_ns: posted,
                end_ns: f64::NAN,
            });
        }
        if let Some(t) = arrive_at {
            self.ranks[rank as usize].arriving = true;
            self.arrive(rank, t);
        }
        self.done_one(rank, posted);
    }

    /// A node-wide arrival of `rank` at `t`.
    fn arrive(&mut self, rank: u32, t: f64) {
        let node = self.node_of(rank);
        let on_node = (self.programs.len() as u32 - node as u32 * self.m.ppn).min(self.m.ppn);
        let n = &mut self.nodes[node];
        n.arrived += 1;
        n.latest = n.latest.max(t);
        n.waiters.push(rank);
        if n.arrived < on_node {
            return;
        }
        let release = n.latest + self.m.arrive_ns;
        n.arrived = 0;
        n.latest = 0.0;
        let mut waiters = std::mem::take(&mut n.waiters);
        for &w in &waiters {
            let r = &mut self.ranks[w as usize];
            r.arriving = false;
            r.done_at = r.done_at.max(release);
            self.maybe_done(w);
        }
        waiters.clear();
        self.nodes[node].waiters = waiters;
    }

    /// Queues the next step of `rank` if its current one is done.
    fn maybe_done(&mut self, rank: u32) {
        let r = &self.ranks[rank as usize];
        if r.outstanding == 0 && !r.arriving {
            let t = r.done_at;
            if self.traced[rank as usize] {
                if let Some(span) = self.out.trace.iter_mut().rev().find(|x| x.rank == rank) {
                    span.end_ns = t;
                }
            }
            self.push(rank, t);
        }
    }

    fn post_send(&mut self, src: u32, dst: u32, bytes: u64, t: f64) {
        let recvs = &mut self.ranks[dst as usize].receives;
        if let Some(i) = recvs.iter().position(|p| p.peer == src) {
            let recv = recvs.remove(i);
            self.transfer(src, dst, bytes.min(recv.bytes), t, recv.time);
        } else {
            self.ranks[dst as usize].unexpected.push(Posted {
                peer: src,
                bytes,
                time: t,
            });
        }
    }

    fn post_recv(&mut self, dst: u32, src: u32, bytes: u64, t: f64) {
        let sends = &mut self.ranks[dst as usize].unexpected;
        if let Some(i) = sends.iter().position(|p| p.peer == src) {
            let send = sends.remove(i);
            self.transfer(src, dst, send.bytes.min(bytes), send.time, t);
        } else {
            self.ranks[dst as usize].receives.push(Posted {
                peer: src,
                bytes,
                time: t,
            });
        }
    }

    /// A matched message: computes when each side is done and counts it off.
    fn transfer(&mut self, src: u32, dst: u32, bytes: u64, sent: f64, posted: f64) {
        let m = self.m;
        self.out.messages += 1;
        let eager = bytes <= m.eager_bytes;
        let (sn, dn) = (self.node_of(src), self.node_of(dst));
        let (left, arrived) = if sn == dn {
            let ready = (sent + m.intra_latency_ns).max(posted);
            let work = bytes as f64 * m.intra_ns_per_byte;
            let end = self.cpu(dst, ready, work);
            self.out.intra_bytes[dst as usize] += bytes;
            self.out.intra_busy_ns[dst as usize] += work;
            (end, end)
        } else {
            let ready = if eager { sent } else { sent.max(posted) };
            self.routes.route(sn as u32, dn as u32, &mut self.route);
            let mut start = ready;
            let mut per_byte: f64 = 0.0;
            for &l in &self.route {
                start = start.max(self.link_free_at[l as usize]);
                per_byte = per_byte.max(self.link_ns_per_byte[l as usize]);
            }
            let busy = m.inter_gap_ns + bytes as f64 * per_byte;
            let end = start + busy;
            for &l in &self.route {
                self.link_free_at[l as usize] = end;
                self.out.link_bytes[l as usize] += bytes;
                self.out.link_busy_ns[l as usize] += busy;
            }
            (end, (end + m.inter_latency_ns).max(posted))
        };
        let send_done = if eager { sent } else { left };
        self.done_one(src, send_done);
        self.done_one(dst, arrived);
    }

    fn done_one(&mut self, rank: u32, t: f64) {
        let r = &mut self.ranks[rank as usize];
        r.outstanding -= 1;
        r.done_at = r.done_at.max(t);
        self.maybe_done(rank);
    }
}

#[cfg(test)]
mod tests;
