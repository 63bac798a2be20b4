//! Process management's ports, names and joins (MPI-4.1 §11.4, §11.8.4): MPI_Open_port,
//! MPI_Close_port, MPI_Comm_accept, MPI_Comm_connect, MPI_Publish_name, MPI_Lookup_name,
//! MPI_Unpublish_name and MPI_Comm_join, between groups of processes of one job
//! (`weft::port` builds the intercommunicators). The ports this process opened are kept
//! here by name. Spawning is `crate::spawn`'s.
//! Depends on the state tables and weft's ports.

use crate::consts::*;
use crate::dtype::put;
use crate::env::c_str;
use crate::error::{err, finish, R};
use crate::state::state;
use std::os::raw::{c_char, c_int};
use std::sync::Mutex;

/// Error classes of this chapter (the standard ABI's values).
pub const MPI_ERR_NAME: c_int = 38;
pub const MPI_ERR_PORT: c_int = 43;
pub const MPI_ERR_SERVICE: c_int = 51;
/// Bytes of a port name, with its NUL (mpi.h's MPI_MAX_PORT_NAME).
pub const MPI_MAX_PORT_NAME: usize = 1024;

/// Ports this process opened and has not closed (an accept takes its port out while it
/// waits and puts it back).
static PORTS: Mutex<Vec<weft::port::Port>> = Mutex::new(Vec::new());

fn ports() -> std::sync::MutexGuard<'static, Vec<weft::port::Port>> {
    PORTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// MPI_ERR_INFO unless `info` is MPI_INFO_NULL or a live info object (the keys of this
/// chapter's info arguments are hints weft does not need).
fn check_info(info: Handle) -> R<()> {
    state("info argument")?.check_info_or_null(info)
}

/// Copies `name` and its NUL into the caller's MPI_MAX_PORT_NAME bytes at `out`.
///
/// # Safety
/// `out` null or writable for MPI_MAX_PORT_NAME bytes.
unsafe fn put_port_name(out: *mut c_char, name: &str) -> R<()> {
    if out.is_null() {
        return Err(err(MPI_ERR_ARG, "port_name is NULL"));
    }
    if name.len() >= MPI_MAX_PORT_NAME {
        return Err(err(
            MPI_ERR_PORT,
            format!(
                "port name of {} bytes exceeds MPI_MAX_PORT_NAME",
                name.len()
            ),
        ));
    }
    // SAFETY: `out` has room for MPI_MAX_PORT_NAME bytes (the caller's contract) and the
    // name with its NUL is shorter; the source is a Rust string, so they do not overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(name.as_ptr(), out as *mut u8, name.len());
        *out.add(name.len()) = 0;
    }
    Ok(())
}

/// MPI_Open_port (MPI-4.1 §11.4.2): a port name that carries this process's listener
/// addresses and a random token.
#[no_mangle]
pub unsafe extern "C" fn MPI_Open_port(info: Handle, port_name: *mut c_char) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        check_info(info)?;
        if port_name.is_null() {
            return Err(err(MPI_ERR_ARG, "port_name is NULL"));
        }
        let port = weft::port::Port::open()?;
        // SAFETY: checked non-null; MPI_MAX_PORT_NAME bytes by the caller's contract.
        unsafe { put_port_name(port_name, port.name())? };
        ports().push(port);
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Open_port", r)
}

/// MPI_Close_port (MPI-4.1 §11.4.2): MPI_ERR_PORT for a name this process has not open.
#[no_mangle]
pub unsafe extern "C" fn MPI_Close_port(port_name: *const c_char) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        state("MPI_Close_port")?;
        // SAFETY: null or NUL-terminated (the caller's contract).
        let name = unsafe { c_str(port_name, "port_name") }?;
        let mut open = ports();
        match open.iter().position(|p| p.name() == name) {
            Some(i) => {
                open.swap_remove(i);
                Ok(())
            }
            None => Err(err(
                MPI_ERR_PORT,
                format!("port {name:?} is not open in this process"),
            )),
        }
    })();
    finish(MPI_COMM_WORLD, "MPI_Close_port", r)
}

/// The intracommunicator `comm` and `root` checked, for accept and connect.
pub(crate) fn intra_and_root(comm: Handle, root: c_int, func: &str) -> R<weft::Comm> {
    let s = state(func)?;
    let c = s.comm(comm)?.comm.clone();
    if c.is_inter() {
        return Err(err(
            MPI_ERR_COMM,
            format!("{func}: comm is an intercommunicator"),
        ));
    }
    if root < 0 || root as u32 >= c.size() {
        return Err(err(
            MPI_ERR_ROOT,
            format!(
                "{func}: root {root} is not a rank of comm (size {})",
                c.size()
            ),
        ));
    }
    Ok(c)
}

/// Progress between two polls of a leader's sockets, as one whole MPI call of its own (the
/// leader waits with its hold of the lock given back).
fn progress_entered() -> bool {
    let _entered = crate::threads::enter();
    state("progress")
        .map(|s| s.weft.world().raw_progress())
        .unwrap_or(false)
}

/// A leader's trade ([`weft::port::PortTrader`]): sends this group's words, returns the
/// other group's; runs with the lock given back and calls its progress argument between
/// polls of its sockets.
type Trade<'a> = Box<dyn FnOnce(&[u32], &mut dyn FnMut() -> bool) -> weft::Result<Vec<u32>> + 'a>;

/// Broadcasts `words` from `root` over `comm` (MPI_Ibcast waited for by
/// [`crate::threads::wait_released`]). Should the broadcast fail, its buffer is leaked rather
/// than freed under a request that may still be in flight.
pub(crate) fn spread(what: &str, comm: Handle, root: u32, words: &mut Vec<c_int>) -> R<()> {
    let mut req = MPI_REQUEST_NULL;
    // SAFETY: the buffer lives in `words` until the broadcast is complete (or is leaked).
    unsafe {
        crate::icoll::start_ibcast(
            what,
            words.as_mut_ptr() as *mut std::os::raw::c_void,
            words.len() as c_int,
            MPI_INT,
            root as c_int,
            comm,
            &mut req,
        )
    }
    .map_err(|e| {
        err(
            e.class,
            format!("{what}: spreading the remote group: {}", e.message),
        )
    })?;
    let done = crate::threads::wait_released(|| {
        crate::p2p::testall(
            state(what)?,
            std::slice::from_mut(&mut req),
            std::ptr::null_mut(),
        )
    });
    if done.is_err() {
        std::mem::forget(std::mem::take(words));
    }
    done
}

/// The intercommunicator of MPI_Comm_accept, _connect and _join between `local` (the
/// caller's group, `comm` its handle, `None` for a group of this process alone) and the
/// group at the other end of the leader's `trade`, without holding the lock while anything
/// waits (MPI-4.1 §11.6: another thread of this process may be the other end):
/// 1. the leader, rank `root`, trades (a proposal for the agreement's tag, its members'
///    world ranks) for the other leader's with the lock given back;
/// 2. it broadcasts (count, tag, remote members) in `local` (an empty group when its trade
///    or its own arguments failed, so no member waits for a remote group that will not
///    come), waited for by [`crate::threads::wait_released`];
/// 3. both groups agree on the new contexts over the world on that tag
///    ([`weft::Comm::iagree_port_intercomm`]), waited for the same way.
///
/// The tag is the XOR of the two leaders' random 16-bit proposals, so that a join (whose
/// two sides are alike) agrees on it too; two such creations running at the same time
/// between the same processes meet on one tag with a chance of 2^-16.
///
/// `trade` is `Ok(None)` at the others, `Err` at a root whose own arguments were bad.
fn traded_released(
    what: &str,
    comm: Option<Handle>,
    local: &weft::Comm,
    root: u32,
    trade: R<Option<Trade<'_>>>,
) -> R<weft::Comm> {
    let world = state(what)?.weft.world();
    let most = world.size() as usize;
    let mut shared: Vec<c_int> = vec![0; most + 2];
    let mut failure = None;
    if local.rank() == root {
        let traded = trade.and_then(|t| {
            let t =
                t.ok_or_else(|| err(MPI_ERR_INTERN, format!("{what}: the root has no trade")))?;
            let mut proposal = [0u8; 2];
            weft_core::auth::random_bytes(&mut proposal)?;
            let tag_mine = u32::from(u16::from_le_bytes(proposal));
            let mut mine = Vec::with_capacity(local.size() as usize + 1);
            mine.push(tag_mine);
            mine.extend_from_slice(local.members());
            let theirs = crate::threads::released(|| t(&mine, &mut progress_entered))?;
            remote_of(what, &theirs, most).map(|remote| (tag_mine ^ theirs[0], remote))
        });
        match traded {
            Ok((tag, remote)) => {
                shared[0] = remote.len() as c_int;
                shared[1] = (tag & 0xffff) as c_int;
                for (to, w) in shared[2..].iter_mut().zip(&remote) {
                    *to = *w as c_int;
                }
            }
            Err(e) => failure = Some(e),
        }
    }
    if let Some(comm) = comm.filter(|_| local.size() > 1) {
        spread(what, comm, root, &mut shared)?;
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let n = shared[0].clamp(0, most as c_int) as usize;
    if n == 0 {
        return Err(err(
            MPI_ERR_OTHER,
            format!("{what}: the root (rank {root}) failed to reach the other group's leader"),
        ));
    }
    let tag = shared[1];
    let remote: Vec<u32> = shared[2..2 + n].iter().map(|&w| w as u32).collect();
    if let Some(w) = remote.iter().find(|w| local.members().contains(w)) {
        return Err(err(
            MPI_ERR_OTHER,
            format!(
                "{what}: world rank {w} is in both groups (weft does not yet build an \
                 intercommunicator of a process connected to itself)"
            ),
        ));
    }
    let agreed = crate::comm::made_by(local.iagree_port_intercomm(&world, &remote, tag)?)?;
    Ok(local.intercomm_from(agreed, &remote)?)
}

/// The other leader's words checked: a tag proposal, then distinct world ranks of this job.
fn remote_of(what: &str, theirs: &[u32], most: usize) -> R<Vec<u32>> {
    if theirs.len() < 2 {
        return Err(err(
            MPI_ERR_OTHER,
            format!("{what}: the other leader sent an empty group"),
        ));
    }
    let remote = &theirs[1..];
    if let Some(w) = remote.iter().find(|&&w| w as usize >= most) {
        return Err(err(
            MPI_ERR_OTHER,
            format!("{what}: the other leader named world rank {w} of {most}"),
        ));
    }
    let mut seen = remote.to_vec();
    seen.sort_unstable();
    if let Some(w) = seen.windows(2).find(|p| p[0] == p[1]) {
        return Err(err(
            MPI_ERR_OTHER,
            format!("{what}: the other leader named world rank {} twice", w[0]),
        ));
    }
    Ok(remote.to_vec())
}

/// MPI_Comm_accept (MPI-4.1 §11.4.3): collective over `comm`; `port_name` and `info`
/// matter at `root`, where the port must be open in this process. Connections that do not
/// prove the job key are dropped and the accept goes on waiting. A bad argument at the root
/// fails the call on every rank of `comm` (none waits for a leader that will not trade).
/// Nothing waits with the lock held (`traded_released`).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_accept(
    port_name: *const c_char,
    info: Handle,
    root: c_int,
    comm: Handle,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let what = "MPI_Comm_accept";
    let r = (|| {
        if newcomm.is_null() {
            return Err(err(MPI_ERR_ARG, "newcomm is NULL"));
        }
        let c = intra_and_root(comm, root, what)?;
        // The root takes its port out of the table while it waits (put back below).
        let at_root: R<Option<(weft::port::Port, weft::port::PortTrader)>> =
            if c.rank() == root as u32 {
                check_info(info).and_then(|()| {
                    // SAFETY: null or NUL-terminated (the caller's contract).
                    let name = unsafe { c_str(port_name, "port_name") }?;
                    let trader = state(what)?.weft.port_trader()?;
                    let mut open = ports();
                    match open.iter().position(|p| p.name() == name) {
                        Some(i) => Ok(Some((open.swap_remove(i), trader))),
                        None => Err(err(
                            MPI_ERR_PORT,
                            format!("port {name:?} is not open in this process"),
                        )),
                    }
                })
            } else {
                Ok(None)
            };
        let trade: R<Option<Trade<'_>>> = match &at_root {
            Ok(Some((port, trader))) => Ok(Some(Box::new(
                |mine: &[u32], progress: &mut dyn FnMut() -> bool| {
                    trader.accept(port, mine, progress)
                },
            ))),
            Ok(None) => Ok(None),
            Err(e) => Err(e.clone()),
        };
        let made = traded_released(what, Some(comm), &c, root as u32, trade);
        if let Ok(Some((port, _))) = at_root {
            ports().push(port);
        }
        let h = state(what)?.add_comm(made?);
        put!(newcomm, h)
    })();
    finish(comm, what, r)
}

/// MPI_Comm_connect (MPI-4.1 §11.4.3): collective over `comm`; `port_name` and `info`
/// matter at `root`. MPI_ERR_PORT when nothing listens on the port; a bad argument at the
/// root fails the call on every rank of `comm`. Nothing waits with the lock held
/// (`traded_released`).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_connect(
    port_name: *const c_char,
    info: Handle,
    root: c_int,
    comm: Handle,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let what = "MPI_Comm_connect";
    let r = (|| {
        if newcomm.is_null() {
            return Err(err(MPI_ERR_ARG, "newcomm is NULL"));
        }
        let c = intra_and_root(comm, root, what)?;
        let trade: R<Option<Trade<'_>>> = if c.rank() == root as u32 {
            check_info(info).and_then(|()| {
                // SAFETY: null or NUL-terminated (the caller's contract).
                let name = unsafe { c_str(port_name, "port_name") }?;
                let trader = state(what)?.weft.port_trader()?;
                Ok(Some(
                    Box::new(move |mine: &[u32], progress: &mut dyn FnMut() -> bool| {
                        trader.connect(&name, mine, progress)
                    }) as Trade<'_>,
                ))
            })
        } else {
            Ok(None)
        };
        let made = traded_released(what, Some(comm), &c, root as u32, trade)?;
        let h = state(what)?.add_comm(made);
        put!(newcomm, h)
    })();
    finish(comm, what, r)
}

/// MPI_Publish_name (MPI-4.1 §11.4.4): in the job's scope (weft run's key-value store);
/// MPI_ERR_SERVICE when the name is published already.
#[no_mangle]
pub unsafe extern "C" fn MPI_Publish_name(
    service_name: *const c_char,
    info: Handle,
    port_name: *const c_char,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        check_info(info)?;
        // SAFETY: null or NUL-terminated (the caller's contract).
        let service = unsafe { c_str(service_name, "service_name") }?;
        // SAFETY: as above.
        let port = unsafe { c_str(port_name, "port_name") }?;
        state("MPI_Publish_name")?
            .weft
            .publish_name(&service, &port)
            .map_err(Into::into)
    })();
    finish(MPI_COMM_WORLD, "MPI_Publish_name", r)
}

/// MPI_Lookup_name (MPI-4.1 §11.4.4): MPI_ERR_NAME when nobody published the name.
#[no_mangle]
pub unsafe extern "C" fn MPI_Lookup_name(
    service_name: *const c_char,
    info: Handle,
    port_name: *mut c_char,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        check_info(info)?;
        // SAFETY: null or NUL-terminated (the caller's contract).
        let service = unsafe { c_str(service_name, "service_name") }?;
        if port_name.is_null() {
            return Err(err(MPI_ERR_ARG, "port_name is NULL"));
        }
        let port = state("MPI_Lookup_name")?.weft.lookup_name(&service)?;
        // SAFETY: checked non-null; MPI_MAX_PORT_NAME bytes by the caller's contract.
        unsafe { put_port_name(port_name, &port) }
    })();
    finish(MPI_COMM_WORLD, "MPI_Lookup_name", r)
}

/// MPI_Unpublish_name (MPI-4.1 §11.4.4): MPI_ERR_SERVICE unless the name is published with
/// this port.
#[no_mangle]
pub unsafe extern "C" fn MPI_Unpublish_name(
    service_name: *const c_char,
    info: Handle,
    port_name: *const c_char,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        check_info(info)?;
        // SAFETY: null or NUL-terminated (the caller's contract).
        let service = unsafe { c_str(service_name, "service_name") }?;
        // SAFETY: as above.
        let port = unsafe { c_str(port_name, "port_name") }?;
        state("MPI_Unpublish_name")?
            .weft
            .unpublish_name(&service, &port)
            .map_err(Into::into)
    })();
    finish(MPI_COMM_WORLD, "MPI_Unpublish_name", r)
}

/// MPI_Comm_join (MPI-4.1 §11.8.4): an intercommunicator of this process and the one at
/// the other end of the connected socket `fd`, which must be a process of this job. The
/// socket stays the program's.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_join(fd: c_int, intercomm: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if intercomm.is_null() {
            return Err(err(MPI_ERR_ARG, "intercomm is NULL"));
        }
        if fd < 0 {
            return Err(err(MPI_ERR_ARG, format!("fd {fd} is not a socket")));
        }
        let what = "MPI_Comm_join";
        let (myself, trader) = {
            let s = state(what)?;
            (s.weft.self_comm(), s.weft.port_trader()?)
        };
        use std::os::fd::FromRawFd;
        // SAFETY: the caller hands a connected socket it keeps owning; ManuallyDrop never
        // closes it, and the stream does not outlive this call.
        let stream = std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
        let trade: Trade<'_> = Box::new(|mine: &[u32], progress: &mut dyn FnMut() -> bool| {
            trader.join(&stream, mine, progress)
        });
        let made = traded_released(what, None, &myself, 0, Ok(Some(trade)))?;
        let h = state(what)?.add_comm(made);
        put!(intercomm, h)
    })();
    finish(MPI_COMM_WORLD, "MPI_Comm_join", r)
}
