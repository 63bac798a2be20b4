//! A collective read or write (MPI-4.1 §14.4.3-5) as a machine the engine advances: the
//! same code runs a blocking call (started and waited at once) and a nonblocking one
//! (advanced by every progress call of the rank, whatever it is waiting for).
//!
//! 1. Extents: every rank sends every other rank the `[lo, hi)` and size of its access.
//!    From them each decides the same way: nothing to do; each rank alone
//!    ([`super::indep`]) when collective buffering is off, the file is in atomic mode, or
//!    (the default, `auto`) the extents do not interleave; otherwise two-phase I/O.
//! 2. Lists: the aggregators ([`super::plan`]) split the accessed range into file domains;
//!    each rank sends each aggregator a header (segments, bytes) and its access list cut
//!    to that domain ([`super::segs`], strided segments: a vector-like view is one
//!    segment).
//! 3. Data: an aggregator moves its domain a window (the collective buffer,
//!    `cb_buffer_size`) at a time, two windows in flight: for a write it receives each
//!    rank's bytes of the window (straight into the buffer when they are one range, else
//!    into a scratch buffer scattered after), reading the window's span first when the
//!    data leaves holes in it (unless they are so many that writing each run is cheaper),
//!    and writes it; for a read it reads the span (or its runs) and sends each rank its
//!    bytes. A rank's bytes for one window are one range of its stream (its access is
//!    sorted), so it sends them from, or receives them into, its buffer directly.
//! 4. Acknowledgements: each aggregator tells every rank that had data in its domain
//!    whether its file accesses succeeded, so a rank's call returns once its data is in
//!    the file, and a failure reaches every rank whose data it concerns.
//!
//! Messages go on the file's private communicator's context with two tags per call, one
//! for each direction (to an aggregator, from it); between two ranks the messages of one
//! direction follow each other in one order on both sides, which is what matches them.

use super::indep::{self, Access};
use super::plan::{aggregators, interleaved, Domains};
use super::posix::{os_error, read_full, write_full};
use super::segs::SegList;
use super::work::IoWork;
use super::{CbMode, Handle, Settings};
use crate::engine::{Engine, ReqId};
use crate::matching::Pattern;
use std::rc::Rc;
use std::sync::Arc;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::buf::{RawBuf, RawBufMut};

/// Bytes of a rank's extent message: lo, hi, bytes, flags.
const EXTENT_BYTES: usize = 32;
/// Flag of an extent message: the rank accesses its own pieces alone (its read view
/// overlaps itself).
const FLAG_ALONE: u64 = 1;
/// Bytes of a header (segments, bytes) and of an acknowledgement.
const HEADER_BYTES: usize = 16;
const ACK_BYTES: usize = 8;

/// Error kinds an acknowledgement carries (index + 1; 0 is success).
const ACK_KINDS: [ErrorKind; 10] = [
    ErrorKind::Io,
    ErrorKind::NoSpace,
    ErrorKind::Quota,
    ErrorKind::ReadOnly,
    ErrorKind::FileAccess,
    ErrorKind::FileInUse,
    ErrorKind::PeerDead,
    ErrorKind::Protocol,
    ErrorKind::InvalidArgument,
    ErrorKind::Internal,
];

fn ack_code(e: &Option<Error>) -> u64 {
    match e {
        None => 0,
        Some(e) => ACK_KINDS
            .iter()
            .position(|&k| k == e.kind())
            .map_or(1, |i| i as u64 + 1),
    }
}

/// The direction of a message between a participant and an aggregator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    /// To the aggregator (and the extents every rank sends every other).
    Up,
    /// From the aggregator to a participant.
    Down,
}

/// A rank's pieces of one window: (file offset, length) in stream order.
type Pieces = Vec<(u64, u64)>;

/// A message in flight.
struct Pending {
    id: ReqId,
    peer: u32,
    /// For a receive: the bytes it must bring.
    expect: Option<usize>,
}

/// The user's stream bytes (lifetime erased: the request that owns the machine borrows
/// them until it finishes).
#[derive(Clone, Copy)]
struct Data {
    ptr: *mut u8,
    len: usize,
}

impl Data {
    fn slice(&self, r: std::ops::Range<u64>) -> &[u8] {
        debug_assert!(r.end as usize <= self.len);
        if r.start == r.end {
            return &[];
        }
        // SAFETY: the request borrows the buffer (`len` bytes at `ptr`) for the machine's
        // life; ranges come from the rank's own access list, whose bytes equal `len`.
        unsafe {
            std::slice::from_raw_parts(self.ptr.add(r.start as usize), (r.end - r.start) as usize)
        }
    }

    #[allow(clippy::mut_from_ref)]
    fn slice_mut(&self, r: std::ops::Range<u64>) -> &mut [u8] {
        debug_assert!(r.end as usize <= self.len);
        if r.start == r.end {
            return &mut [];
        }
        // SAFETY: as in `slice`; a read's buffer is borrowed mutably by the request, and
        // the machine never hands out two overlapping ranges at once (a rank's windows
        // are disjoint ranges of its stream).
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.add(r.start as usize),
                (r.end - r.start) as usize,
            )
        }
    }
}

/// One window an aggregator has in flight.
struct Slot {
    /// Which of the two buffers it uses.
    buf: usize,
    /// First byte of the window's data span (offset 0 of the buffer).
    base: u64,
    /// The merged runs of data in the window.
    runs: Vec<(u64, u64)>,
    /// Write the span `[base, last run's end)` in one call (else each run).
    whole: bool,
    /// Messages of the window.
    pending: Vec<Pending>,
    /// Ranks whose bytes went to a scratch buffer: their pieces (file offset, length) and
    /// the scratch (a write scatters it into the buffer once it has arrived; a read keeps
    /// it until its send is done).
    scratch: Vec<(Pieces, Vec<u8>)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Start,
    Extents,
    Headers,
    Lists,
    Data,
}

/// One rank's part in one collective access.
pub(crate) struct TwoPhase {
    what: &'static str,
    write: bool,
    file: Arc<Handle>,
    settings: Settings,
    atomic: bool,
    ctx: u32,
    tag: i32,
    rank: u32,
    members: Rc<[u32]>,
    node_of: Vec<u32>,
    list: SegList,
    data: Data,
    phase: Phase,
    /// Messages of the phase the machine waits for.
    pending: Vec<Pending>,
    /// This rank's messages as a participant (lists, data, acknowledgements), waited for
    /// at the end.
    part: Vec<Pending>,
    ext_out: Vec<u8>,
    ext_in: Vec<u8>,
    domains: Option<Domains>,
    /// This rank's domain index, if it aggregates.
    me_agg: Option<usize>,
    /// Headers and lists this rank sends, one per aggregator (kept until sent).
    headers_out: Vec<u8>,
    lists_out: Vec<Vec<u8>>,
    acks_in: Vec<u8>,
    /// Aggregator: headers, lists and access lists of every rank in its domain.
    headers_in: Vec<u8>,
    lists_in: Vec<Vec<u8>>,
    others: Vec<SegList>,
    next_window: u64,
    windows: u64,
    slots: Vec<Slot>,
    bufs: [Vec<u8>; 2],
    acks_out: Vec<u8>,
    acks_sent: bool,
    /// The first error of this rank's own file accesses (as aggregator or alone).
    file_error: Option<Error>,
    /// The first error an aggregator reported to this rank.
    peer_error: Option<Error>,
}

/// What a collective access needs to start.
pub(crate) struct Start<'a> {
    pub what: &'static str,
    pub write: bool,
    pub file: Arc<Handle>,
    pub settings: Settings,
    pub atomic: bool,
    pub comm: &'a crate::comm::Comm,
    pub tag: i32,
    pub list: SegList,
    pub data: *mut u8,
    pub len: usize,
}

impl TwoPhase {
    pub(crate) fn new(s: Start<'_>, e: &Engine) -> TwoPhase {
        let members = s.comm.data.members.clone();
        let node_of = members.iter().map(|&w| e.node_of()[w as usize]).collect();
        let n = members.len();
        TwoPhase {
            what: s.what,
            write: s.write,
            file: s.file,
            settings: s.settings,
            atomic: s.atomic,
            ctx: s.comm.data.ctx,
            tag: s.tag,
            rank: s.comm.data.rank,
            members,
            node_of,
            list: s.list,
            data: Data {
                ptr: s.data,
                len: s.len,
            },
            phase: Phase::Start,
            pending: Vec::new(),
            part: Vec::new(),
            ext_out: Vec::new(),
            ext_in: vec![0; n * EXTENT_BYTES],
            domains: None,
            me_agg: None,
            headers_out: Vec::new(),
            lists_out: Vec::new(),
            acks_in: Vec::new(),
            headers_in: Vec::new(),
            lists_in: Vec::new(),
            others: Vec::new(),
            next_window: 0,
            windows: 0,
            slots: Vec::new(),
            bufs: [Vec::new(), Vec::new()],
            acks_out: Vec::new(),
            acks_sent: false,
            file_error: None,
            peer_error: None,
        }
    }

    fn n(&self) -> usize {
        self.members.len()
    }

    fn access(&self) -> Access<'_> {
        Access {
            file: &self.file.file,
            path: &self.file.path,
            sieve_bytes: if self.write {
                self.settings.sieve_write_bytes
            } else {
                self.settings.sieve_read_bytes
            },
            atomic: self.atomic,
        }
    }

    fn wrap(&self, err: Error) -> Error {
        err.context(format!("{} on rank {}", self.what, self.rank))
    }

    /// The tag of a stream: `Up` (to an aggregator: extents, headers, lists, written data)
    /// or `Down` (from one: read data, acknowledgements). Between two ranks each stream is
    /// sent and received in one order on both sides; the two streams of a pair are
    /// independent (a rank is participant of the other's domain while aggregator of its
    /// own), so they need tags of their own.
    fn tag(&self, dir: Dir) -> i32 {
        self.tag * 2 + (dir == Dir::Down) as i32
    }

    fn send(&self, e: &mut Engine, peer: u32, dir: Dir, bytes: &[u8]) -> Result<Option<Pending>> {
        let id = e.start_send_mode(
            RawBuf::new(bytes),
            self.members[peer as usize],
            self.rank,
            self.ctx,
            self.tag(dir),
            false,
            false,
        )?;
        Ok(id.map(|id| Pending {
            id,
            peer,
            expect: None,
        }))
    }

    fn recv(&self, e: &mut Engine, peer: u32, dir: Dir, into: &mut [u8]) -> Result<Pending> {
        let expect = into.len();
        let id = e.start_recv(
            RawBufMut::new(into),
            Pattern {
                ctx: self.ctx,
                src: peer as i32,
                tag: self.tag(dir),
            },
            Some(self.members[peer as usize]),
            &self.members,
        )?;
        Ok(Pending {
            id,
            peer,
            expect: Some(expect),
        })
    }

    /// Takes the outcomes of finished messages; the first failure (a receive of the wrong
    /// size means the ranks disagree about the call).
    fn reap(&self, e: &mut Engine, list: Vec<Pending>) -> Result<()> {
        let mut first = None;
        for p in list {
            let outcome = e.outcome(p.id);
            e.free_req(p.id);
            if first.is_some() {
                continue;
            }
            first = match (outcome, p.expect) {
                (Ok(st), Some(want)) if st.bytes != want => Some(Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "rank {} sent {} bytes where {want} were expected: the ranks called \
                         different collective file operations, or with different views",
                        p.peer, st.bytes
                    ),
                )),
                (Err(err), _) if err.kind() == ErrorKind::Truncate => Some(Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "rank {} sent more than expected: the ranks called different \
                         collective file operations ({err})",
                        p.peer
                    ),
                )),
                (Err(err), _) => Some(err),
                _ => None,
            };
        }
        first.map_or(Ok(()), |e| Err(self.wrap(e)))
    }

    fn all_done(e: &Engine, list: &[Pending]) -> bool {
        list.iter().all(|p| e.is_done(p.id))
    }

    /// Gives up everything in flight after an error, so nothing outlives its buffer.
    fn abandon(&mut self, e: &mut Engine) {
        let mut all: Vec<Pending> = self.pending.drain(..).chain(self.part.drain(..)).collect();
        for s in self.slots.drain(..) {
            all.extend(s.pending);
        }
        for p in all {
            if p.expect.is_none() {
                if e.abandon_send(p.id) {
                    continue;
                }
            } else {
                e.cancel_recv(p.id);
            }
            let _ = e.wait(p.id);
            e.free_req(p.id);
        }
    }

    /// Phase 1: the extents, to every other rank.
    fn start(&mut self, e: &mut Engine) -> Result<()> {
        let (lo, hi) = self.list.extent().unwrap_or((0, 0));
        let alone = !self.write && self.list.overlaps();
        for w in [
            lo,
            hi,
            self.list.bytes(),
            if alone { FLAG_ALONE } else { 0 },
        ] {
            self.ext_out.extend_from_slice(&w.to_le_bytes());
        }
        let me = self.rank as usize;
        self.ext_in[me * EXTENT_BYTES..(me + 1) * EXTENT_BYTES].copy_from_slice(&self.ext_out);
        let mut ext_in = std::mem::take(&mut self.ext_in);
        for (j, chunk) in ext_in.chunks_exact_mut(EXTENT_BYTES).enumerate() {
            if j != me {
                let p = self.recv(e, j as u32, Dir::Up, chunk)?;
                self.pending.push(p);
            }
        }
        self.ext_in = ext_in;
        for j in (0..self.n() as u32).filter(|&j| j as usize != me) {
            if let Some(p) = self.send(e, j, Dir::Up, &self.ext_out)? {
                self.pending.push(p);
            }
        }
        self.phase = Phase::Extents;
        Ok(())
    }

    /// The extents are in: decide, then start phase 2 (or finish alone).
    /// Returns the outcome when the access is over.
    fn decide(&mut self, e: &mut Engine) -> Result<Option<u64>> {
        let n = self.n();
        let word = |j: usize, k: usize| {
            let at = j * EXTENT_BYTES + k * 8;
            u64::from_le_bytes(self.ext_in[at..at + 8].try_into().unwrap())
        };
        let mut extents = Vec::with_capacity(n);
        let mut alone = vec![false; n];
        let (mut lo, mut hi, mut total) = (u64::MAX, 0u64, 0u64);
        for (j, a) in alone.iter_mut().enumerate() {
            let (l, h, b, f) = (word(j, 0), word(j, 1), word(j, 2), word(j, 3));
            *a = f & FLAG_ALONE != 0;
            if b == 0 || *a {
                extents.push(None);
            } else {
                if l >= h {
                    return Err(self.wrap(Error::new(
                        ErrorKind::Protocol,
                        format!("rank {j} sent the empty extent [{l}, {h}) with {b} bytes"),
                    )));
                }
                extents.push(Some((l, h)));
                lo = lo.min(l);
                hi = hi.max(h);
            }
            total = total.saturating_add(b);
        }
        let mode = if self.write {
            self.settings.cb_write
        } else {
            self.settings.cb_read
        };
        let two_phase = total > 0
            && !self.atomic
            && match mode {
                CbMode::Disable => false,
                CbMode::Enable => true,
                CbMode::Auto => interleaved(&extents),
            };
        let me = self.rank as usize;
        if !two_phase {
            return self.alone().map(Some);
        }
        // A rank with no data (or reading alone) still takes part: the aggregators expect
        // its empty headers.
        let cap = self.settings.cb_nodes.unwrap_or(u32::MAX);
        let aggs = aggregators(&self.node_of, self.settings.aggregators_per_node, cap);
        let align = self.settings.striping_unit.unwrap_or(4096);
        let d = Domains::new(aggs, lo, hi, align, self.settings.cb_buffer_bytes);
        self.me_agg = d.aggregators.iter().position(|&a| a as usize == me);
        let naggs = d.aggregators.len();
        // Participant: a header and a list for every aggregator, its data messages and
        // their acknowledgements.
        let mut subs = Vec::with_capacity(naggs);
        for k in 0..naggs {
            let (a, b) = d.domain(k);
            let sub = if alone[me] {
                SegList::new()
            } else {
                self.list.within(a, b)
            };
            self.headers_out
                .extend_from_slice(&(sub.segs().len() as u64).to_le_bytes());
            self.headers_out
                .extend_from_slice(&sub.bytes().to_le_bytes());
            self.lists_out.push(if d.aggregators[k] as usize == me {
                Vec::new()
            } else {
                sub.encode()
            });
            subs.push(sub);
        }
        self.acks_in = vec![0; naggs * ACK_BYTES];
        let headers = std::mem::take(&mut self.headers_out);
        let lists = std::mem::take(&mut self.lists_out);
        let mut acks = std::mem::take(&mut self.acks_in);
        for k in 0..naggs {
            let agg = d.aggregators[k];
            if agg as usize == me {
                continue;
            }
            if let Some(p) = self.send(
                e,
                agg,
                Dir::Up,
                &headers[k * HEADER_BYTES..(k + 1) * HEADER_BYTES],
            )? {
                self.part.push(p);
            }
            if subs[k].bytes() == 0 {
                continue;
            }
            if let Some(p) = self.send(e, agg, Dir::Up, &lists[k])? {
                self.part.push(p);
            }
            // Data, window by window (the aggregator takes them in that order).
            for w in 0..d.windows(k) {
                let (wl, wh) = d.window(k, w);
                let r = self.list.clip(wl, wh, |_, _, _| {});
                if r.is_empty() {
                    continue;
                }
                if self.write {
                    if let Some(p) = self.send(e, agg, Dir::Up, self.data.slice(r))? {
                        self.part.push(p);
                    }
                } else {
                    let p = self.recv(e, agg, Dir::Down, self.data.slice_mut(r))?;
                    self.part.push(p);
                }
            }
            let p = self.recv(
                e,
                agg,
                Dir::Down,
                &mut acks[k * ACK_BYTES..(k + 1) * ACK_BYTES],
            )?;
            self.part.push(p);
        }
        self.headers_out = headers;
        self.lists_out = lists;
        self.acks_in = acks;
        // Aggregator: every other rank's header.
        if let Some(k) = self.me_agg {
            self.headers_in = vec![0; n * HEADER_BYTES];
            let mut h = std::mem::take(&mut self.headers_in);
            for (j, chunk) in h.chunks_exact_mut(HEADER_BYTES).enumerate() {
                if j != me {
                    let p = self.recv(e, j as u32, Dir::Up, chunk)?;
                    self.pending.push(p);
                }
            }
            self.headers_in = h;
            self.others = vec![SegList::new(); n];
            self.others[me] = subs.swap_remove(k);
            self.windows = d.windows(k);
        }
        self.domains = Some(d);
        self.phase = Phase::Headers;
        Ok(None)
    }

    /// Every rank alone: this rank's pieces, independently.
    fn alone(&mut self) -> Result<u64> {
        let acc = self.access();
        let data = self.data;
        let r = if self.write {
            indep::write(acc, &self.list, data.slice(0..data.len as u64)).map(|_| self.list.bytes())
        } else {
            indep::read(acc, &self.list, data.slice_mut(0..data.len as u64))
        };
        r.map_err(|err| self.wrap(err))
    }

    /// Aggregator, phase 2: the headers are in; receive the lists.
    fn post_lists(&mut self, e: &mut Engine) -> Result<()> {
        let n = self.n();
        let me = self.rank as usize;
        self.lists_in = vec![Vec::new(); n];
        let mut lists = std::mem::take(&mut self.lists_in);
        for (j, l) in lists.iter_mut().enumerate() {
            if j == me {
                continue;
            }
            let at = j * HEADER_BYTES;
            let segs = u64::from_le_bytes(self.headers_in[at..at + 8].try_into().unwrap());
            let bytes = u64::from_le_bytes(self.headers_in[at + 8..at + 16].try_into().unwrap());
            if bytes == 0 {
                continue;
            }
            let len = segs
                .checked_mul(super::segs::SEG_WIRE_BYTES as u64)
                .filter(|&l| l > 0 && l <= 1 << 40)
                .ok_or_else(|| {
                    self.wrap(Error::new(
                        ErrorKind::Protocol,
                        format!("rank {j} announced {segs} segments for {bytes} bytes"),
                    ))
                })?;
            l.resize(len as usize, 0);
            let p = self.recv(e, j as u32, Dir::Up, l)?;
            self.pending.push(p);
        }
        self.lists_in = lists;
        self.phase = Phase::Lists;
        Ok(())
    }

    /// Aggregator: the lists are in.
    fn take_lists(&mut self) -> Result<()> {
        let me = self.rank as usize;
        let d = self.domains.as_ref().expect("planned");
        let (a, b) = d.domain(self.me_agg.expect("aggregator"));
        for (j, l) in self.lists_in.iter().enumerate() {
            if j == me || l.is_empty() {
                continue;
            }
            let at = j * HEADER_BYTES;
            let bytes = u64::from_le_bytes(self.headers_in[at + 8..at + 16].try_into().unwrap());
            let list = SegList::decode(l)
                .filter(|s| s.bytes() == bytes)
                .filter(|s| s.extent().is_none_or(|(lo, hi)| lo >= a && hi <= b))
                .ok_or_else(|| {
                    self.wrap(Error::new(
                        ErrorKind::Protocol,
                        format!("rank {j} sent an access list that is malformed or outside this aggregator's domain [{a}, {b})"),
                    ))
                })?;
            self.others[j] = list;
        }
        self.lists_in = Vec::new();
        Ok(())
    }

    /// Aggregator: starts window `w` in buffer `buf`; None when it holds no data.
    fn start_window(&mut self, e: &mut Engine, w: u64, buf: usize) -> Result<Option<Slot>> {
        let d = self.domains.as_ref().expect("planned");
        let k = self.me_agg.expect("aggregator");
        let (lo, hi) = d.window(k, w);
        let me = self.rank as usize;
        // Each rank's pieces in the window and their stream range.
        let mut per: Vec<(usize, Pieces, std::ops::Range<u64>)> = Vec::new();
        let mut all: Vec<(u64, u64)> = Vec::new();
        for j in 0..self.n() {
            let src = if j == me { &self.list } else { &self.others[j] };
            if src.bytes() == 0 || (j == me && self.others[me].bytes() == 0) {
                continue;
            }
            let mut pieces = Vec::new();
            let r = src.clip(lo, hi, |a, n, _| pieces.push((a, n)));
            if r.is_empty() {
                continue;
            }
            all.extend(pieces.iter().map(|&(a, n)| (a, a + n)));
            per.push((j, pieces, r));
        }
        if all.is_empty() {
            return Ok(None);
        }
        all.sort_unstable();
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (a, b) in all {
            match runs.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => runs.push((a, b)),
            }
        }
        let base = runs[0].0;
        let top = runs.last().expect("data").1;
        let data: u64 = runs.iter().map(|r| r.1 - r.0).sum();
        let whole = runs.len() == 1 || data * 2 >= top - base;
        let span = (top - base) as usize;
        let mut b = std::mem::take(&mut self.bufs[buf]);
        if b.len() < span {
            b.resize(span, 0);
        }
        let mut slot = Slot {
            buf,
            base,
            runs,
            whole,
            pending: Vec::new(),
            scratch: Vec::new(),
        };
        let acc = self.access();
        let file_error = |me: &mut Self, err: Error| {
            if me.file_error.is_none() {
                me.file_error = Some(me.wrap(err));
            }
        };
        if !self.write {
            // Read the window: the span, or each run; zeros past the end of the file.
            let read = |at: u64, into: &mut [u8]| -> Result<()> {
                let got =
                    read_full(acc.file, into, at).map_err(|x| os_error("pread", acc.path, x))?;
                into[got..].fill(0);
                Ok(())
            };
            let r = if whole {
                read(base, &mut b[..span])
            } else {
                slot.runs.iter().try_for_each(|&(x, y)| {
                    read(x, &mut b[(x - base) as usize..(y - base) as usize])
                })
            };
            if let Err(err) = r {
                file_error(self, err);
            }
            for (j, pieces, r) in per {
                if j == me {
                    let out = self.data.slice_mut(r);
                    let mut at = 0;
                    for (a, n) in pieces {
                        let s = (a - base) as usize;
                        out[at..at + n as usize].copy_from_slice(&b[s..s + n as usize]);
                        at += n as usize;
                    }
                } else if pieces.len() == 1 {
                    let (a, n) = pieces[0];
                    let s = (a - base) as usize;
                    if let Some(p) = self.send(e, j as u32, Dir::Down, &b[s..s + n as usize])? {
                        slot.pending.push(p);
                    }
                } else {
                    let mut tmp = Vec::with_capacity((r.end - r.start) as usize);
                    for &(a, n) in &pieces {
                        let s = (a - base) as usize;
                        tmp.extend_from_slice(&b[s..s + n as usize]);
                    }
                    if let Some(p) = self.send(e, j as u32, Dir::Down, &tmp)? {
                        slot.pending.push(p);
                    }
                    slot.scratch.push((pieces, tmp));
                }
            }
        } else {
            if whole && slot.runs.len() > 1 {
                // Holes: read the span first, so the write keeps what they hold. The
                // collective owns the domain: no other rank of the call writes here.
                match read_full(acc.file, &mut b[..span], base) {
                    Ok(got) => b[got..span].fill(0),
                    Err(x) => file_error(self, os_error("pread", acc.path, x)),
                }
            }
            for (j, pieces, r) in per {
                if j == me {
                    let src = self.data.slice(r);
                    let mut at = 0;
                    for (a, n) in pieces {
                        let s = (a - base) as usize;
                        b[s..s + n as usize].copy_from_slice(&src[at..at + n as usize]);
                        at += n as usize;
                    }
                } else if pieces.len() == 1 {
                    let (a, n) = pieces[0];
                    let s = (a - base) as usize;
                    let p = self.recv(e, j as u32, Dir::Up, &mut b[s..s + n as usize])?;
                    slot.pending.push(p);
                } else {
                    let mut tmp = vec![0u8; (r.end - r.start) as usize];
                    let p = self.recv(e, j as u32, Dir::Up, &mut tmp)?;
                    slot.pending.push(p);
                    slot.scratch.push((pieces, tmp));
                }
            }
        }
        self.bufs[buf] = b;
        Ok(Some(slot))
    }

    /// Aggregator: window `slot`'s messages are done: for a write, place the scratch and
    /// write the data.
    fn finish_window(&mut self, slot: Slot) {
        if !self.write {
            self.bufs[slot.buf].shrink_to(self.bufs[slot.buf].len());
            return;
        }
        let base = slot.base;
        let b = &mut self.bufs[slot.buf];
        for (pieces, tmp) in &slot.scratch {
            let mut at = 0;
            for &(a, n) in pieces {
                let s = (a - base) as usize;
                b[s..s + n as usize].copy_from_slice(&tmp[at..at + n as usize]);
                at += n as usize;
            }
        }
        let path = &self.file.path;
        let f = &self.file.file;
        let r = if slot.whole {
            let top = slot.runs.last().expect("data").1;
            write_full(f, &b[..(top - base) as usize], base)
        } else {
            slot.runs.iter().try_for_each(|&(x, y)| {
                write_full(f, &b[(x - base) as usize..(y - base) as usize], x)
            })
        };
        if let Err(x) = r {
            if self.file_error.is_none() {
                self.file_error = Some(self.wrap(os_error("pwrite", path, x)));
            }
        }
    }

    /// Aggregator, phase 3: keeps two windows in flight; true once every window is done
    /// and the acknowledgements are sent.
    fn aggregate(&mut self, e: &mut Engine) -> Result<bool> {
        loop {
            // Start windows while a buffer is free.
            while self.slots.len() < 2 && self.next_window < self.windows {
                let used: Vec<usize> = self.slots.iter().map(|s| s.buf).collect();
                let buf = if used.contains(&0) { 1 } else { 0 };
                let w = self.next_window;
                self.next_window += 1;
                if let Some(s) = self.start_window(e, w, buf)? {
                    self.slots.push(s);
                }
            }
            // Finish the oldest when its messages are done.
            match self.slots.first() {
                Some(s) if Self::all_done(e, &s.pending) => {
                    let mut s = self.slots.remove(0);
                    let pending = std::mem::take(&mut s.pending);
                    self.reap(e, pending)?;
                    self.finish_window(s);
                }
                Some(_) => return Ok(false),
                None if self.next_window < self.windows => {}
                None => break,
            }
        }
        if !self.acks_sent {
            self.acks_sent = true;
            let me = self.rank as usize;
            let code = ack_code(&self.file_error);
            self.acks_out = code.to_le_bytes().to_vec();
            for j in 0..self.n() {
                if j != me && self.others[j].bytes() > 0 {
                    if let Some(p) = self.send(e, j as u32, Dir::Down, &self.acks_out)? {
                        self.pending.push(p);
                    }
                }
            }
        }
        if !Self::all_done(e, &self.pending) {
            return Ok(false);
        }
        let p = std::mem::take(&mut self.pending);
        self.reap(e, p)?;
        self.bufs = [Vec::new(), Vec::new()];
        Ok(true)
    }

    /// The outcome once everything is done.
    fn outcome(&mut self) -> Result<u64> {
        if let Some(err) = self.file_error.take() {
            return Err(err);
        }
        // Acknowledgements of failures.
        let d = self.domains.as_ref().expect("planned");
        for (k, c) in self.acks_in.chunks_exact(ACK_BYTES).enumerate() {
            let code = u64::from_le_bytes(c.try_into().unwrap());
            if code != 0 && self.peer_error.is_none() {
                let kind = ACK_KINDS
                    .get(code as usize - 1)
                    .copied()
                    .unwrap_or(ErrorKind::Io);
                self.peer_error = Some(self.wrap(Error::new(
                    kind,
                    format!(
                        "aggregator rank {} failed to {} its file domain ({})",
                        d.aggregators[k],
                        if self.write { "write" } else { "read" },
                        kind.name()
                    ),
                )));
            }
        }
        if let Some(err) = self.peer_error.take() {
            return Err(err);
        }
        if self.write {
            Ok(self.list.bytes())
        } else {
            let size = super::posix::size(&self.file.file, &self.file.path)?;
            Ok(self.list.bytes_below(size))
        }
    }

    fn step(&mut self, e: &mut Engine) -> Result<Option<u64>> {
        loop {
            match self.phase {
                Phase::Start => self.start(e)?,
                Phase::Extents | Phase::Headers | Phase::Lists => {
                    if !Self::all_done(e, &self.pending) {
                        return Ok(None);
                    }
                    let p = std::mem::take(&mut self.pending);
                    self.reap(e, p)?;
                    match self.phase {
                        Phase::Extents => {
                            if let Some(done) = self.decide(e)? {
                                return Ok(Some(done));
                            }
                        }
                        Phase::Headers => {
                            if self.me_agg.is_some() {
                                self.post_lists(e)?;
                            } else {
                                self.phase = Phase::Data;
                            }
                        }
                        _ => {
                            self.take_lists()?;
                            self.phase = Phase::Data;
                        }
                    }
                }
                Phase::Data => {
                    if self.me_agg.is_some() && !self.aggregate(e)? {
                        return Ok(None);
                    }
                    if !Self::all_done(e, &self.part) {
                        return Ok(None);
                    }
                    let p = std::mem::take(&mut self.part);
                    self.reap(e, p)?;
                    return self.outcome().map(Some);
                }
            }
        }
    }
}

impl IoWork for TwoPhase {
    fn advance(&mut self, e: &mut Engine) -> (Option<Result<u64>>, bool) {
        let before = (
            self.phase,
            self.next_window,
            self.pending.len(),
            self.part.len(),
        );
        match self.step(e) {
            Ok(None) => {
                let after = (
                    self.phase,
                    self.next_window,
                    self.pending.len(),
                    self.part.len(),
                );
                (None, before != after)
            }
            Ok(Some(bytes)) => (Some(Ok(bytes)), true),
            Err(err) => {
                self.abandon(e);
                (Some(Err(err)), true)
            }
        }
    }
}

/// Every error kind an acknowledgement carries has a code, and codes map back.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_codes_round_trip() {
        assert_eq!(ack_code(&None), 0);
        for k in ACK_KINDS {
            let c = ack_code(&Some(Error::new(k, "x")));
            assert_eq!(ACK_KINDS[c as usize - 1], k);
        }
        assert_eq!(ack_code(&Some(Error::new(ErrorKind::Timeout, "x"))), 1);
    }
}
