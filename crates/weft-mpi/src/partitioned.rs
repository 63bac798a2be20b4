//! Partitioned point-to-point communication (MPI-4.1 ch. 4): MPI_Psend_init,
//! MPI_Precv_init, MPI_Pready (and _range, _list) and MPI_Parrived.
//!
//! A partitioned operation is a persistent request over `partitions * count` items. Its
//! message is one transfer on weft's partitioned channel (`Comm::raw_partitioned_isend`:
//! it matches partitioned receives only): the receive is posted at MPI_Start, the send
//! leaves when the last partition is marked ready. The standard lets the two sides
//! partition the buffer differently, and a partition may be reported arrived only once the
//! data is in place; one transfer satisfies both (a partition arrives with the whole
//! message). MPI_Parrived moves progress forward, and on the first partition that it
//! reports arrived it completes the receive's unpack (a type with holes), so the data is
//! where the program looks. Wait and test then complete the request as any persistent one.
//! This file checks arguments and keeps the per-round state; weft moves the bytes.

use crate::consts::*;
use crate::dtype::put;
use crate::error::{err, finish, R};
use crate::stage::{incoming, outgoing};
use crate::state::{handle_index, state, ReqEntry, State, K_REQ};
use std::os::raw::{c_int, c_void};
use weft::raw::RawRequest;

/// A partitioned request's arguments and the state of its current round.
pub struct Partitioned {
    send: bool,
    buf: usize,
    partitions: usize,
    /// Items per partition.
    count: i64,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    /// Started (MPI_Start) and not completed yet.
    active: bool,
    /// Send side: which partitions are marked ready this round.
    ready: Vec<bool>,
    /// Receive side: the data is in place (Parrived completed the transfer and its unpack).
    arrived: bool,
}

impl Partitioned {
    /// Whether a wait or test must wait: a send whose partitions are not all marked ready
    /// has not even left.
    pub(crate) fn unsent(&self) -> bool {
        self.send && self.active && self.ready.iter().any(|r| !r)
    }
}

#[allow(clippy::too_many_arguments)]
fn init(
    send: bool,
    buf: *const c_void,
    partitions: c_int,
    count: i64,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> R<()> {
    if req.is_null() {
        return Err(err(MPI_ERR_REQUEST, "request pointer is NULL"));
    }
    let s = state("MPI_Psend_init")?;
    let c = &s.comm(comm)?.comm;
    if c.is_inter() {
        return Err(err(
            MPI_ERR_COMM,
            "partitioned communication takes intracommunicators",
        ));
    }
    if partitions < 1 {
        return Err(err(
            MPI_ERR_ARG,
            format!("partitions = {partitions}: at least one"),
        ));
    }
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    if tag < 0 {
        return Err(err(
            MPI_ERR_TAG,
            format!("tag {tag}: partitioned operations take no wildcard"),
        ));
    }
    let size = c.size();
    if peer != MPI_PROC_NULL && (peer < 0 || peer as u32 >= size) {
        return Err(err(
            MPI_ERR_RANK,
            format!(
                "{} {peer} is not a rank of the communicator (0..{size}) nor MPI_PROC_NULL",
                if send { "dest" } else { "source" }
            ),
        ));
    }
    // The datatype is checked now (committed, valid), as MPI_Start must not fail on it.
    crate::dtype::layout(dt)?;
    let total = (partitions as i64).checked_mul(count).ok_or_else(|| {
        err(
            MPI_ERR_COUNT,
            format!("{partitions} partitions of {count} items overflow"),
        )
    })?;
    crate::dtype::map_of(dt)?.packed_bytes(total as u64)?;
    let mut e = ReqEntry::empty(!send, comm);
    e.more_mut().partitioned = Some(Box::new(Partitioned {
        send,
        buf: buf as usize,
        partitions: partitions as usize,
        count,
        dt,
        peer,
        tag,
        comm,
        active: false,
        ready: Vec::new(),
        arrived: false,
    }));
    let h = s.add_req(e);
    put!(req, h)
}

/// MPI_Psend_init (MPI-4.1 §4.2.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    _info: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = init(true, buf, partitions, count, dt, dest, tag, comm, req);
    finish(comm, "MPI_Psend_init", r)
}

/// MPI_Precv_init (MPI-4.1 §4.2.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: i64,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    _info: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = init(false, buf, partitions, count, dt, source, tag, comm, req);
    finish(comm, "MPI_Precv_init", r)
}

/// The partitioned operation of request entry `i`, if it is one.
pub(crate) fn of(s: &mut State, i: usize) -> Option<&mut Partitioned> {
    s.reqs.get_mut(i)?.more.as_mut()?.partitioned.as_deref_mut()
}

/// MPI_Start of a partitioned request: a receive posts its transfer, a send waits for its
/// partitions.
pub(crate) fn start(s: &mut State, i: usize, h: Handle) -> R<()> {
    let p = of(s, i).expect("caller checked");
    if p.active {
        return Err(err(
            MPI_ERR_REQUEST,
            format!("request {h:#x} is already active"),
        ));
    }
    p.active = true;
    p.arrived = false;
    p.ready = vec![false; p.partitions];
    let (send, buf, total, dt, peer, tag, comm) = (
        p.send,
        p.buf,
        p.partitions as i64 * p.count,
        p.dt,
        p.peer,
        p.tag,
        p.comm,
    );
    let e = s.reqs.get_mut(i).expect("checked");
    if peer == MPI_PROC_NULL {
        e.proc_null = true;
        if let Some(p) = of(s, i) {
            p.ready.iter_mut().for_each(|r| *r = true);
            p.arrived = true;
        }
        return Ok(());
    }
    if send {
        return Ok(());
    }
    let inc = incoming(buf as *mut c_void, total, dt, false)?;
    let c = s.comm(comm)?.comm.clone();
    // SAFETY: MPI requires the buffer to stay valid and untouched until the request
    // completes.
    let raw = unsafe { c.raw_partitioned_irecv(inc.ptr, inc.bytes, peer, tag)? };
    let e = s.reqs.get_mut(i).expect("checked");
    e.raw = Some(raw);
    if let Some(u) = inc.unpack {
        e.more_mut().unpack = Some(Box::new(u));
    }
    Ok(())
}

/// Completion of a partitioned request (wait or test): the round ends.
pub(crate) fn completed(s: &mut State, i: usize) {
    if let Some(p) = of(s, i) {
        p.active = false;
    }
}

fn entry_of(s: &mut State, h: Handle, what: &str) -> R<usize> {
    let i = handle_index(K_REQ, h)
        .filter(|&i| of(s, i).is_some())
        .ok_or_else(|| {
            err(
                MPI_ERR_REQUEST,
                format!("{what}: request {h:#x} is not a partitioned request"),
            )
        })?;
    Ok(i)
}

/// Marks `parts` ready on send request `h`; the message leaves with the last one.
fn ready(h: Handle, parts: impl Iterator<Item = c_int>, what: &str) -> R<()> {
    let s = state(what)?;
    let i = entry_of(s, h, what)?;
    let p = of(s, i).expect("checked");
    if !p.send {
        return Err(err(
            MPI_ERR_REQUEST,
            format!("{what} on a partitioned receive"),
        ));
    }
    if !p.active {
        return Err(err(
            MPI_ERR_REQUEST,
            format!("{what} on an inactive request (MPI_Start it first)"),
        ));
    }
    let n = p.partitions;
    for x in parts {
        if x < 0 || x as usize >= n {
            return Err(err(
                MPI_ERR_ARG,
                format!("{what}: partition {x} is not in 0..{n}"),
            ));
        }
        if std::mem::replace(&mut p.ready[x as usize], true) {
            return Err(err(
                MPI_ERR_ARG,
                format!("{what}: partition {x} is marked ready twice in this round"),
            ));
        }
    }
    if p.ready.iter().any(|r| !r) || s.reqs.get(i).is_some_and(|e| e.proc_null) {
        return Ok(());
    }
    let p = of(s, i).expect("checked");
    let (buf, total, dt, peer, tag, comm) = (
        p.buf,
        p.partitions as i64 * p.count,
        p.dt,
        p.peer,
        p.tag,
        p.comm,
    );
    let out = outgoing(buf as *const c_void, total, dt)?;
    let c = s.comm(comm)?.comm.clone();
    // SAFETY: MPI requires the buffer to stay valid and unmodified until completion; a
    // packed copy lives in the request.
    let raw = unsafe { c.raw_partitioned_isend(out.ptr, out.bytes, peer as u32, tag)? };
    let e = s.reqs.get_mut(i).expect("checked");
    e.raw = Some(raw);
    if let Some(k) = out.keep {
        e.more_mut().keep.push(k);
    }
    Ok(())
}

fn req_comm(h: Handle) -> Handle {
    crate::state::state_opt()
        .and_then(|s| {
            handle_index(K_REQ, h)
                .and_then(|i| s.reqs.get(i))
                .map(|e| e.comm)
        })
        .unwrap_or(MPI_COMM_WORLD)
}

/// MPI_Pready (MPI-4.1 §4.2.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Pready(partition: c_int, req: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = ready(req, std::iter::once(partition), "MPI_Pready");
    finish(req_comm(req), "MPI_Pready", r)
}

/// MPI_Pready_range (MPI-4.1 §4.2.3): partitions `low..=high`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_range(low: c_int, high: c_int, req: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = if low > high {
        Err(err(
            MPI_ERR_ARG,
            format!("partition range {low}..={high} is empty"),
        ))
    } else {
        ready(req, low..=high, "MPI_Pready_range")
    };
    finish(req_comm(req), "MPI_Pready_range", r)
}

/// MPI_Pready_list (MPI-4.1 §4.2.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_list(length: c_int, list: *const c_int, req: Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if length < 0 {
            return Err(err(MPI_ERR_ARG, format!("length {length} is negative")));
        }
        if length > 0 && list.is_null() {
            return Err(err(MPI_ERR_ARG, "array_of_partitions is NULL"));
        }
        let parts: &[c_int] = if length == 0 {
            &[]
        } else {
            // SAFETY: `length` entries (the caller's MPI contract).
            unsafe { std::slice::from_raw_parts(list, length as usize) }
        };
        ready(req, parts.iter().copied(), "MPI_Pready_list")
    })();
    finish(req_comm(req), "MPI_Pready_list", r)
}

/// MPI_Parrived (MPI-4.1 §4.2.3): moves progress forward; true once the partition's data
/// is in the receive buffer (with the whole message, see the module).
#[no_mangle]
pub unsafe extern "C" fn MPI_Parrived(req: Handle, partition: c_int, flag: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Parrived")?;
        let i = entry_of(s, req, "MPI_Parrived")?;
        let p = of(s, i).expect("checked");
        if p.send {
            return Err(err(MPI_ERR_REQUEST, "MPI_Parrived on a partitioned send"));
        }
        if partition < 0 || partition as usize >= p.partitions {
            return Err(err(
                MPI_ERR_ARG,
                format!("partition {partition} is not in 0..{}", p.partitions),
            ));
        }
        if !p.active || p.arrived {
            // An inactive request's partitions are all there (MPI-4.1 §4.2.3).
            return put!(flag, 1);
        }
        let comm = p.comm;
        let e = s.reqs.get_mut(i).expect("checked");
        if e.raw.is_none() {
            return put!(flag, 0);
        }
        s.comm(comm)?.comm.raw_progress();
        let e = s.reqs.get_mut(i).expect("checked");
        let raw = e.raw.as_mut().expect("checked");
        if !raw.is_done() {
            return put!(flag, 0);
        }
        // Done: finish the transfer now so the data is in place, and keep its status (or
        // error) for the wait or test that completes the request.
        let r = raw.test();
        let st = raw.last_status();
        let unpack = e.more.as_mut().and_then(|m| m.unpack.take());
        let c = s.comm(comm)?.comm.clone();
        let e = s.reqs.get_mut(i).expect("checked");
        match r {
            Ok(_) => {
                e.raw = Some(RawRequest::completed_with(&c, st));
                if let Some(u) = unpack {
                    if !st.cancelled {
                        u.run_received(st.bytes)?;
                    }
                }
            }
            Err(x) => {
                e.raw = None;
                return Err(x.into());
            }
        }
        if let Some(p) = of(s, i) {
            p.arrived = true;
        }
        put!(flag, 1)
    })();
    finish(req_comm(req), "MPI_Parrived", r)
}
