//! Process management's ports, names and joins (MPI-4.1 §11.4, §11.8.4): MPI_Open_port,
//! MPI_Close_port, MPI_Comm_accept, MPI_Comm_connect, MPI_Publish_name, MPI_Lookup_name,
//! MPI_Unpublish_name and MPI_Comm_join, between groups of processes of one job
//! (`weft::port` builds the intercommunicators). The ports this process opened are kept
//! here by name. MPI_Comm_spawn and MPI_Comm_spawn_multiple are not implemented (they
//! report MPI_ERR_UNSUPPORTED_OPERATION), so MPI_Comm_get_parent is always MPI_COMM_NULL.
//! Depends on the state tables and weft's ports.

use crate::consts::*;
use crate::dtype::put;
use crate::env::c_str;
use crate::error::{err, finish, MpiError, R};
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
fn intra_and_root(comm: Handle, root: c_int, func: &str) -> R<weft::Comm> {
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

/// A weft error standing for `e`, the root's own error: it travels to the other ranks as
/// the leader's failure, and the root reports `e` itself.
fn as_weft(e: &MpiError) -> weft::Error {
    weft::Error::new(weft::ErrorKind::InvalidArgument, e.message.clone())
}

/// MPI_Comm_accept (MPI-4.1 §11.4.3): collective over `comm`; `port_name` and `info`
/// matter at `root`, where the port must be open in this process. Connections that do not
/// prove the job key are dropped and the accept goes on waiting. A bad argument at the root
/// fails the call on every rank of `comm` (none waits for a leader that will not trade).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_accept(
    port_name: *const c_char,
    info: Handle,
    root: c_int,
    comm: Handle,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if newcomm.is_null() {
            return Err(err(MPI_ERR_ARG, "newcomm is NULL"));
        }
        let c = intra_and_root(comm, root, "MPI_Comm_accept")?;
        // The root takes its port out of the table while it waits (put back below).
        let at_root: R<Option<(String, weft::port::Port)>> = if c.rank() == root as u32 {
            check_info(info).and_then(|()| {
                // SAFETY: null or NUL-terminated (the caller's contract).
                let name = unsafe { c_str(port_name, "port_name") }?;
                let mut open = ports();
                match open.iter().position(|p| p.name() == name) {
                    Some(i) => Ok(Some((name, open.swap_remove(i)))),
                    None => Err(err(
                        MPI_ERR_PORT,
                        format!("port {name:?} is not open in this process"),
                    )),
                }
            })
        } else {
            Ok(None)
        };
        let s = state("MPI_Comm_accept")?;
        let made = c.intercomm_traded(root as u32, |mine| match &at_root {
            Ok(Some((_, port))) => s.weft.accept_trade(&c, port, mine),
            Ok(None) => Err(weft::Error::new(
                weft::ErrorKind::Internal,
                "only the root trades",
            )),
            Err(e) => Err(as_weft(e)),
        });
        let made = match at_root {
            Ok(Some((_, port))) => {
                ports().push(port);
                made?
            }
            Ok(None) => made?,
            Err(e) => return Err(e),
        };
        let h = s.add_comm(made);
        put!(newcomm, h)
    })();
    finish(comm, "MPI_Comm_accept", r)
}

/// MPI_Comm_connect (MPI-4.1 §11.4.3): collective over `comm`; `port_name` and `info`
/// matter at `root`. MPI_ERR_PORT when nothing listens on the port; a bad argument at the
/// root fails the call on every rank of `comm`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_connect(
    port_name: *const c_char,
    info: Handle,
    root: c_int,
    comm: Handle,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if newcomm.is_null() {
            return Err(err(MPI_ERR_ARG, "newcomm is NULL"));
        }
        let c = intra_and_root(comm, root, "MPI_Comm_connect")?;
        let at_root: R<String> = if c.rank() == root as u32 {
            // SAFETY: null or NUL-terminated (the caller's contract).
            check_info(info).and_then(|()| unsafe { c_str(port_name, "port_name") })
        } else {
            Ok(String::new())
        };
        let s = state("MPI_Comm_connect")?;
        let made = c.intercomm_traded(root as u32, |mine| match &at_root {
            Ok(name) => s.weft.connect_trade(&c, name, mine),
            Err(e) => Err(as_weft(e)),
        });
        // The root's own error first (the others report the leader's failure).
        at_root?;
        let h = s.add_comm(made?);
        put!(newcomm, h)
    })();
    finish(comm, "MPI_Comm_connect", r)
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
        let s = state("MPI_Comm_join")?;
        use std::os::fd::FromRawFd;
        // SAFETY: the caller hands a connected socket it keeps owning; ManuallyDrop never
        // closes it, and the stream does not outlive this call.
        let stream = std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
        let made = s.weft.join(&stream)?;
        let h = s.add_comm(made);
        put!(intercomm, h)
    })();
    finish(MPI_COMM_WORLD, "MPI_Comm_join", r)
}
