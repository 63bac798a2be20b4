//! Communicators and groups (MPI-4.1 chapter 7), predefined attributes, and Cartesian
//! topologies (chapter 8). Communicator creation is weft's (dup, split, create from a
//! group, shared split); this module maps handles and checks arguments.

use crate::consts::*;
use crate::dtype::put;
use crate::env::c_str;
use crate::error::{err, finish, write_c_string, MpiError, R};
use crate::state::{
    handle_index, state, CommEntry, CopyFn, DeleteFn, Keyval, ReqEntry, State, K_GROUP,
};
use std::os::raw::{c_char, c_int, c_void};

/// MPI_Comm_size (MPI-4.1 §7.4.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_size(comm: Handle, size: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Comm_size").and_then(|s| put!(size, s.comm(comm)?.comm.size() as c_int));
    finish(comm, "MPI_Comm_size", r)
}

/// MPI_Comm_rank (MPI-4.1 §7.4.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_rank(comm: Handle, rank: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Comm_rank").and_then(|s| put!(rank, s.comm(comm)?.comm.rank() as c_int));
    finish(comm, "MPI_Comm_rank", r)
}

fn new_comm(s: &mut State, c: Option<weft::Comm>, out: *mut Handle) -> R<()> {
    let h = match c {
        Some(c) => s.add_comm(c),
        None => MPI_COMM_NULL,
    };
    put!(out, h)
}

/// MPI_Comm_dup (MPI-4.1 §7.4.2): the new communicator inherits the error handler.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup(comm: Handle, newcomm: *mut Handle) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { comm_dup_as("MPI_Comm_dup", comm, newcomm) }
}

/// MPI_Comm_dup's work (it enters the MPI lock itself), its errors named `func`
/// (MPI_Comm_dup_with_info duplicates by it).
///
/// # Safety
/// MPI_Comm_dup's contract.
unsafe fn comm_dup_as(func: &str, comm: Handle, newcomm: *mut Handle) -> c_int {
    crate::threads::blocking_by_twin!(crate::comm::comm_idup_as(func, comm, newcomm));
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state(func)?;
        let c = s.comm(comm)?.comm.dup()?;
        let inherited = Inherited::of(s, comm)?;
        inherited.install(s, c, newcomm)
    })();
    finish(comm, func, r)
}

/// This rank's communicator of a split of `comm` by `color` and `key` (MPI_Comm_split and
/// the creations made of one: MPI_Comm_create, MPI_Comm_split_type, MPI_Cart_create,
/// MPI_Cart_sub, MPI_Graph_create); `None` for [`weft::UNDEFINED`].
///
/// On an intracommunicator the colors and keys travel by a nonblocking allgather and the
/// context comes from a nonblocking duplication ([`weft::Comm::idup`], whose agreement keeps
/// concurrent creations of other threads apart), both waited for by
/// [`crate::threads::wait_released`]: under MPI_THREAD_MULTIPLE a thread blocked here lets
/// the other threads of its process in. The same path at every thread level, so ranks that
/// asked for different levels still meet. An intercommunicator's split takes
/// [`crate::inter::split_released`] under MPI_THREAD_MULTIPLE and blocks in weft below it.
/// Call with no reference into the state held.
pub(crate) fn split_of(
    what: &'static str,
    comm: Handle,
    color: c_int,
    key: c_int,
) -> R<Option<weft::Comm>> {
    let parent = state(what)?.comm(comm)?.comm.clone();
    if parent.is_inter() {
        if crate::threads::twins() {
            return crate::inter::split_released(what, comm, parent, color, key);
        }
        return Ok(parent.split(color, key)?);
    }
    let mine = [color, key];
    let mut all: Vec<c_int> = vec![0; 2 * parent.size() as usize];
    let mut dup = parent.idup()?;
    let mut fresh = None;
    {
        // SAFETY: `gather` is finished or dropped (which waits) before `mine` and `all` go.
        let mut gather = unsafe { parent.iallgather(&mine[..], &mut all[..])? };
        let mut gathered = false;
        crate::threads::wait_released(|| -> R<bool> {
            if fresh.is_none() {
                fresh = dup.test()?;
            }
            if !gathered {
                gathered = gather.test()?;
            }
            Ok(fresh.is_some() && gathered)
        })?;
    }
    let fresh = fresh.expect("the wait returned once the duplicate was made");
    let colors_keys: Vec<(c_int, c_int)> = all.chunks_exact(2).map(|c| (c[0], c[1])).collect();
    Ok(parent.split_from(fresh, &colors_keys)?)
}

/// A duplicate of `comm` without its attributes, error handler or topology (for the
/// topology creations that keep the group and its order): [`weft::Comm::idup`] waited for by
/// [`crate::threads::wait_released`]. Call with no reference into the state held.
pub(crate) fn dup_of(what: &'static str, comm: Handle) -> R<weft::Comm> {
    let parent = state(what)?.comm(comm)?.comm.clone();
    made_by(parent.idup()?)
}

/// The communicator an agreement of weft's (`idup`, `icreate_group`, `iagree_intercomm`)
/// makes, waited for by [`crate::threads::wait_released`].
pub(crate) fn made_by(mut req: weft::comm::DupRequest) -> R<weft::Comm> {
    let mut made = None;
    crate::threads::wait_released(|| -> R<bool> {
        made = req.test()?;
        Ok(made.is_some())
    })?;
    Ok(made.expect("the wait returned once the communicator was made"))
}

/// The communicator of `group`'s members (world ranks, in their new rank order) made by
/// them only from `comm` (`None`: the world) with `tag` (MPI_Comm_create_group,
/// MPI_Comm_create_from_group): an agreement of the group's members on the new context
/// ([`weft::Comm::icreate_group`]) waited for by [`crate::threads::wait_released`], as
/// [`split_of`] does. Call with no reference into the state held.
pub(crate) fn group_of(
    what: &'static str,
    comm: Option<Handle>,
    group: &[u32],
    tag: c_int,
) -> R<weft::Comm> {
    let parent = {
        let s = state(what)?;
        match comm {
            Some(h) => s.comm(h)?.comm.clone(),
            None => s.weft.world(),
        }
    };
    made_by(parent.icreate_group(group, tag)?)
}

/// What a duplicate takes from its communicator (MPI-4.1 §7.4.2): the error handler, the
/// topology and the attributes (through their keyvals' copy callbacks, run when it is taken).
/// MPI_Comm_idup takes it when it starts (as if the duplication happened there) and installs
/// it when it completes.
struct Inherited {
    errhandler: Handle,
    /// The attributes the copy callbacks gave the duplicate.
    attrs: Vec<(c_int, usize)>,
    /// A copy callback's failure, reported when the duplicate is installed (the duplication
    /// itself goes on: its peers take part in it whatever this rank's callbacks do).
    failed: Option<MpiError>,
    cart: Option<(Vec<c_int>, Vec<bool>)>,
    graph: Option<crate::topo::GraphTopo>,
}

impl Inherited {
    /// What a duplicate of `comm` takes now; runs the attributes' copy callbacks.
    fn of(s: &State, comm: Handle) -> R<Inherited> {
        let e = s.comm(comm)?;
        let mut inherited = Inherited {
            errhandler: e.errhandler,
            attrs: Vec::new(),
            failed: None,
            cart: e.cart.clone(),
            graph: e.graph.clone(),
        };
        // Attributes travel by their keyval's copy callback (MPI-4.1 §7.7.2).
        for &(k, v) in &e.attrs {
            let Some(kv) = keyval_of(s, k) else { continue };
            match kv.copy {
                0 => {}
                1 => inherited.attrs.push((k, v)),
                f => {
                    // SAFETY: registered by the program as an MPI_Comm_copy_attr_function.
                    let f: CopyFn = unsafe { std::mem::transmute::<usize, CopyFn>(f) };
                    let (mut out, mut flag) = (0usize, 0);
                    // SAFETY: the callback's contract: the old communicator, the keyval,
                    // its extra state, the attribute value and two output locations.
                    let rc = unsafe {
                        f(
                            comm,
                            k,
                            kv.extra as *mut c_void,
                            v as *mut c_void,
                            &mut out as *mut usize as *mut c_void,
                            &mut flag,
                        )
                    };
                    if rc != MPI_SUCCESS {
                        inherited.failed = Some(err(
                            rc,
                            format!("copy callback of keyval {k} returned {rc}"),
                        ));
                        break;
                    }
                    if flag != 0 {
                        inherited.attrs.push((k, out));
                    }
                }
            }
        }
        Ok(inherited)
    }

    /// Files `c`, the duplicate, as `*newcomm` with what it inherits.
    fn install(self, s: &mut State, c: weft::Comm, newcomm: *mut Handle) -> R<()> {
        new_comm(s, Some(c), newcomm)?;
        // SAFETY: just written.
        let nh = unsafe { *newcomm };
        // The duplicate keeps the error handler and the topology (MPI-4.1 §7.4.2).
        let ne = s.comm_mut(nh)?;
        let topology = self.cart.is_some() || self.graph.is_some();
        (ne.errhandler, ne.cart, ne.graph) = (self.errhandler, self.cart, self.graph);
        ne.attrs = self.attrs;
        if topology {
            crate::topo::attach_neighborhood(s, nh)?;
        }
        match self.failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// MPI_Comm_split (MPI-4.1 §7.4.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split(
    comm: Handle,
    color: c_int,
    key: c_int,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        state("MPI_Comm_split")?;
        if color < 0 && color != MPI_UNDEFINED {
            return Err(err(
                MPI_ERR_ARG,
                format!("color {color} is negative and not MPI_UNDEFINED"),
            ));
        }
        let color = if color == MPI_UNDEFINED {
            weft::UNDEFINED
        } else {
            color
        };
        let c = split_of("MPI_Comm_split", comm, color, key)?;
        new_comm(state("MPI_Comm_split")?, c, newcomm)
    })();
    finish(comm, "MPI_Comm_split", r)
}

/// MPI_Comm_split_type (MPI-4.1 §7.4.2): MPI_COMM_TYPE_SHARED splits by node.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split_type(
    comm: Handle,
    split_type: c_int,
    key: c_int,
    info: Handle,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Comm_split_type")?;
        let c = &s.comm(comm)?.comm;
        let hinted = || -> R<Option<String>> {
            if info == MPI_INFO_NULL {
                return Ok(None);
            }
            Ok(crate::env::info_entries(info)?
                .into_iter()
                .find(|(k, _)| k == HW_RESOURCE_TYPE)
                .map(|(_, v)| v))
        };
        // Every form is one split of `c`, so ranks passing different split types (or
        // MPI_UNDEFINED) still meet in it.
        // An intercommunicator splits by node too: each node's local members pair with the
        // remote members on the same node (MPI_COMM_NULL where the other side has none).
        let by_node = c.node_color();
        // Whether the new communicator is the node's, for MPI_COMM_TYPE_HW_UNGUIDED's info.
        let mut names_node = false;
        let color = match split_type {
            MPI_COMM_TYPE_SHARED => by_node,
            MPI_UNDEFINED => weft::UNDEFINED,
            // The one hardware resource weft knows is the node's shared memory; any other
            // named resource gives MPI_COMM_NULL (MPI-4.1 §7.4.2).
            MPI_COMM_TYPE_HW_GUIDED | MPI_COMM_TYPE_RESOURCE_GUIDED => {
                if hinted()?.as_deref() == Some(SHARED_MEMORY) {
                    by_node
                } else {
                    weft::UNDEFINED
                }
            }
            // A strict subset of `c` at the next level of the hierarchy: the node, when `c`
            // spans several; below a node weft knows no level, so MPI_COMM_NULL.
            MPI_COMM_TYPE_HW_UNGUIDED => {
                if c.members_share_a_node() {
                    weft::UNDEFINED
                } else {
                    names_node = true;
                    by_node
                }
            }
            t => {
                return Err(err(
                    MPI_ERR_ARG,
                    format!("split_type {t} is no MPI_COMM_TYPE_* nor MPI_UNDEFINED"),
                ))
            }
        };
        let c = split_of("MPI_Comm_split_type", comm, color, key)?;
        if names_node && info != MPI_INFO_NULL && c.is_some() {
            crate::env::info_set(info, HW_RESOURCE_TYPE, SHARED_MEMORY)?;
        }
        new_comm(state("MPI_Comm_split_type")?, c, newcomm)
    })();
    finish(comm, "MPI_Comm_split_type", r)
}

/// The info key naming a hardware resource (MPI-4.1 §7.4.2).
const HW_RESOURCE_TYPE: &str = "mpi_hw_resource_type";
/// The resource all processes of a node share (MPI-4.1 §7.4.2).
const SHARED_MEMORY: &str = "mpi_shared_memory";

/// MPI_Get_hw_resource_info (MPI-4.1 §11.4.3): the hardware resources weft can split by
/// (the node's shared memory).
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_hw_resource_info(info: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Get_hw_resource_info").and_then(|_| {
        let h = crate::env::info_insert(vec![(HW_RESOURCE_TYPE.into(), SHARED_MEMORY.into())]);
        put!(info, h)
    });
    finish(MPI_COMM_WORLD, "MPI_Get_hw_resource_info", r)
}

/// MPI_Comm_create (MPI-4.1 §7.4.2). On an intracommunicator the ranks may pass different
/// groups as long as they are disjoint (each group makes its own communicator): a split
/// whose color is the group's lowest world rank, which names the group as every member
/// passes it, and whose key is the caller's place in it.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create(
    comm: Handle,
    group: Handle,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Comm_create")?;
        let g = s.group(group)?.to_vec();
        let parent = s.comm(comm)?.comm.clone();
        if parent.is_inter() && !crate::threads::twins() {
            let c = parent.create(&g)?;
            return new_comm(s, c, newcomm);
        }
        if let Some(w) = g.iter().find(|w| !parent.members().contains(w)) {
            return Err(err(
                MPI_ERR_GROUP,
                format!("world rank {w} of the group is not a member of the communicator"),
            ));
        }
        let me = parent.members()[parent.rank() as usize];
        // On an intercommunicator every local member passes the same group (the remote
        // group passes its own): one color.
        let (color, key) = match g.iter().position(|&w| w == me) {
            Some(p) if parent.is_inter() => (0, p as i32),
            Some(p) => (*g.iter().min().expect("holds the caller") as i32, p as i32),
            None => (weft::UNDEFINED, 0),
        };
        let c = split_of("MPI_Comm_create", comm, color, key)?;
        new_comm(state("MPI_Comm_create")?, c, newcomm)
    })();
    finish(comm, "MPI_Comm_create", r)
}

/// MPI_Comm_free (MPI-4.1 §7.4.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_free_as("MPI_Comm_free", comm) }
}

/// MPI_Comm_free's work, its errors named `func` (MPI_Comm_disconnect frees by it).
///
/// # Safety
/// MPI_Comm_free's contract.
pub(crate) unsafe fn comm_free_as(func: &str, comm: *mut Handle) -> c_int {
    let h = if comm.is_null() {
        MPI_COMM_NULL
    } else {
        // SAFETY: non-null, so it points to the caller's communicator handle (MPI_Comm_free's
        // contract).
        unsafe { *comm }
    };
    let r = (|| {
        let s = state(func)?;
        if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
            return Err(err(
                MPI_ERR_COMM,
                "predefined communicators cannot be freed",
            ));
        }
        let attrs = s.comm(h)?.attrs.clone();
        for (k, v) in attrs {
            delete_attr(s, h, k, v)?;
        }
        s.comm(h)?.comm.free()?;
        s.bsend.comm_freed(h)?;
        s.remove_comm(h);
        put!(comm, MPI_COMM_NULL)
    })();
    finish(h, func, r)
}

/// MPI_Comm_disconnect (MPI-4.1 §11.10.4): a barrier over the communicator (collective as
/// the standard makes it), then frees it. The standard also has it wait for the program's
/// pending requests on the communicator; weft does not look for them.
///
/// On the twins' path (`crate::threads::twins`: MPI_THREAD_MULTIPLE) the barrier is the
/// handle's nonblocking one (`crate::icoll::ibarrier_as`, intra- or intercommunicator)
/// waited for with the lock given back, as MPI_Barrier does there: a peer may reach its
/// disconnect only after a message another thread of this process has yet to send.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_disconnect(comm: *mut Handle) -> c_int {
    if crate::threads::twins() {
        // SAFETY: forwarded caller contract.
        return unsafe { disconnect_by_twin(comm) };
    }
    let _entered = crate::threads::enter_untwinned();
    let h = disconnected_handle(comm);
    let r = (|| {
        let s = state("MPI_Comm_disconnect")?;
        let e = disconnect_target(s, h)?;
        let (inter, c) = (e.inter, e.comm.clone());
        match inter {
            Some(p) => crate::inter::barrier(p)?,
            None => c.barrier()?,
        }
        Ok(())
    })();
    if let Err(e) = r {
        return finish(h, "MPI_Comm_disconnect", Err(e));
    }
    // SAFETY: forwarded caller contract.
    unsafe { comm_free_as("MPI_Comm_disconnect", comm) }
}

/// The handle MPI_Comm_disconnect's argument `comm` points to (MPI_COMM_NULL for a null
/// pointer, which the checks then reject).
fn disconnected_handle(comm: *mut Handle) -> Handle {
    if comm.is_null() {
        MPI_COMM_NULL
    } else {
        // SAFETY: non-null and readable (MPI_Comm_disconnect's contract).
        unsafe { *comm }
    }
}

/// The communicator MPI_Comm_disconnect's `h` names, after its checks: not predefined and
/// a valid communicator (MPI_COMM_NULL is not: MPI_ERR_COMM).
fn disconnect_target(s: &State, h: Handle) -> R<&CommEntry> {
    if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
        return Err(err(
            MPI_ERR_COMM,
            "predefined communicators cannot be disconnected",
        ));
    }
    s.comm(h)
}

/// MPI_Comm_disconnect on the twins' path: the checks inside a hold of their own, then the
/// barrier as the handle's nonblocking one (numbered as the blocking barrier it stands for),
/// polled with the lock free between polls (`crate::threads::by_twin`), then the free.
///
/// # Safety
/// MPI_Comm_disconnect's contract.
#[cold]
#[inline(never)]
unsafe fn disconnect_by_twin(comm: *mut Handle) -> c_int {
    const FUNC: &str = "MPI_Comm_disconnect";
    let h = disconnected_handle(comm);
    {
        let _entered = crate::threads::enter();
        let r = state(FUNC).and_then(|s| disconnect_target(s, h).map(|_| ()));
        if let Err(e) = r {
            return finish(h, FUNC, Err(e));
        }
    }
    // SAFETY: `h` is the caller's communicator; the request is by_twin's own and the status
    // MPI_STATUS_IGNORE.
    let rc = unsafe {
        crate::threads::by_twin(
            FUNC,
            |req| crate::icoll::ibarrier_as(FUNC, h, req),
            std::ptr::null_mut(),
        )
    };
    if rc != MPI_SUCCESS {
        return rc;
    }
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_free_as(FUNC, comm) }
}

fn compare_members(a: &[u32], b: &[u32]) -> c_int {
    if a == b {
        return MPI_IDENT;
    }
    let mut x = a.to_vec();
    let mut y = b.to_vec();
    x.sort_unstable();
    y.sort_unstable();
    if x == y {
        MPI_SIMILAR
    } else {
        MPI_UNEQUAL
    }
}

/// MPI_Comm_compare (MPI-4.1 §7.4.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_compare(c1: Handle, c2: Handle, result: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Comm_compare")?;
        let (a, b) = (&s.comm(c1)?.comm, &s.comm(c2)?.comm);
        let v = if a.context_id() == b.context_id() {
            MPI_IDENT
        } else if a.is_inter() != b.is_inter() {
            MPI_UNEQUAL
        } else {
            // Intercommunicators compare both groups (MPI-4.1 §7.6.1).
            let local = compare_members(a.members(), b.members());
            let remote = match (a.remote_members(), b.remote_members()) {
                (Ok(x), Ok(y)) => compare_members(x, y),
                _ => MPI_IDENT,
            };
            match local.max(remote) {
                MPI_IDENT => MPI_CONGRUENT,
                x => x,
            }
        };
        put!(result, v)
    })();
    finish(c1, "MPI_Comm_compare", r)
}

/// MPI_Comm_group (MPI-4.1 §7.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_group(comm: Handle, group: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Comm_group")?;
        let m = s.comm(comm)?.comm.members().to_vec();
        let h = s.add_group(m);
        put!(group, h)
    })();
    finish(comm, "MPI_Comm_group", r)
}

/// MPI_Comm_set_name (MPI-4.1 §7.8).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_name(comm: Handle, name: *const c_char) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        // SAFETY: a NUL-terminated string (the caller's contract).
        let n = unsafe { c_str(name, "name")? };
        state("MPI_Comm_set_name")?.comm_mut(comm)?.name = n;
        Ok(())
    })();
    finish(comm, "MPI_Comm_set_name", r)
}

/// MPI_Comm_get_name (MPI-4.1 §7.8).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_name(
    comm: Handle,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Comm_get_name").and_then(|s| {
        // The null handle has a name too (MPI-4.1 §7.8, as MPICH and Open MPI answer).
        let n = if comm == MPI_COMM_NULL {
            "MPI_COMM_NULL"
        } else {
            &s.comm(comm)?.name
        };
        if name.is_null() || len.is_null() {
            let which = if name.is_null() { "name" } else { "resultlen" };
            return Err(err(MPI_ERR_ARG, format!("{which} is NULL")));
        }
        // SAFETY: `name` holds MPI_MAX_OBJECT_NAME bytes (the caller's contract).
        unsafe { write_c_string(n, name, MPI_MAX_OBJECT_NAME, len) };
        Ok(())
    });
    finish(comm, "MPI_Comm_get_name", r)
}

/// Values of the predefined attributes, kept for the life of the process because C gets
/// pointers to them.
static TAG_UB_VALUE: c_int = i32::MAX;
static FALSE_VALUE: c_int = 0;
static PROC_NULL_VALUE: c_int = MPI_PROC_NULL;
static ANY_SOURCE_VALUE: c_int = MPI_ANY_SOURCE;
/// MPI_LASTUSEDCODE's value, refreshed at each query (MPI_Add_error_class/code raise it).
static LAST_USED_VALUE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// MPI_Comm_get_attr (MPI-4.1 §7.7.2) for the predefined keys.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_attr(
    comm: Handle,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_get_attr_as("MPI_Comm_get_attr", comm, keyval, value, flag) }
}

/// MPI_Comm_get_attr's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Comm_get_attr's contract.
pub(crate) unsafe fn comm_get_attr_as(
    func: &str,
    comm: Handle,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    let r = (|| {
        state(func)?.comm(comm)?;
        let p: Option<*const c_int> = match keyval {
            MPI_TAG_UB => Some(&TAG_UB_VALUE),
            MPI_WTIME_IS_GLOBAL => Some(&FALSE_VALUE),
            MPI_HOST => Some(&PROC_NULL_VALUE),
            MPI_IO => Some(&ANY_SOURCE_VALUE),
            MPI_LASTUSEDCODE => {
                LAST_USED_VALUE.store(
                    crate::error::last_used_code(),
                    std::sync::atomic::Ordering::Relaxed,
                );
                Some(LAST_USED_VALUE.as_ptr() as *const c_int)
            }
            MPI_APPNUM => crate::spawn::appnum_attr(),
            MPI_UNIVERSE_SIZE => None,
            k => {
                let s = state(func)?;
                if keyval_of(s, k).is_none() {
                    return Err(err(MPI_ERR_KEYVAL, format!("keyval {k} is not valid")));
                }
                return match s.comm(comm)?.attrs.iter().find(|(x, _)| *x == k) {
                    Some(&(_, v)) => {
                        put!(value as *mut usize, v)?;
                        put!(flag, 1)
                    }
                    None => put!(flag, 0),
                };
            }
        };
        match p {
            Some(p) => {
                put!(value as *mut *const c_int, p)?;
                put!(flag, 1)
            }
            None => put!(flag, 0),
        }
    })();
    finish(comm, func, r)
}

// ------------------------------------------------------------------- groups

/// MPI_Group_size (MPI-4.1 §7.3.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_size(group: Handle, size: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Group_size").and_then(|s| put!(size, s.group(group)?.len() as c_int));
    finish(MPI_COMM_WORLD, "MPI_Group_size", r)
}

/// MPI_Group_rank (MPI-4.1 §7.3.1): MPI_UNDEFINED when the caller is not a member.
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_rank(group: Handle, rank: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Group_rank").and_then(|s| {
        let me = s.world_rank();
        let g = s.group(group)?;
        put!(
            rank,
            g.iter()
                .position(|&w| w == me)
                .map_or(MPI_UNDEFINED, |p| p as c_int)
        )
    });
    finish(MPI_COMM_WORLD, "MPI_Group_rank", r)
}

fn ranks<'a>(n: c_int, p: *const c_int) -> R<&'a [c_int]> {
    if n < 0 {
        return Err(err(MPI_ERR_ARG, format!("n = {n} is negative")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, "ranks array is NULL"));
    }
    // SAFETY: the array holds n ranks (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

fn check_group_rank(g: &[u32], r: c_int) -> R<usize> {
    if r < 0 || r as usize >= g.len() {
        return Err(err(
            MPI_ERR_RANK,
            format!("rank {r} is not in a group of size {}", g.len()),
        ));
    }
    Ok(r as usize)
}

/// MPI_Group_incl (MPI-4.1 §7.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_incl(
    group: Handle,
    n: c_int,
    rs: *const c_int,
    newgroup: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Group_incl")?;
        let g = s.group(group)?.to_vec();
        let mut out = Vec::new();
        for &x in ranks(n, rs)? {
            let w = g[check_group_rank(&g, x)?];
            if out.contains(&w) {
                return Err(err(MPI_ERR_RANK, format!("rank {x} is listed twice")));
            }
            out.push(w);
        }
        let h = s.add_group(out);
        put!(newgroup, h)
    })();
    finish(MPI_COMM_WORLD, "MPI_Group_incl", r)
}

/// MPI_Group_excl (MPI-4.1 §7.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_excl(
    group: Handle,
    n: c_int,
    rs: *const c_int,
    newgroup: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Group_excl")?;
        let g = s.group(group)?.to_vec();
        let mut drop = vec![false; g.len()];
        for &x in ranks(n, rs)? {
            drop[check_group_rank(&g, x)?] = true;
        }
        let out: Vec<u32> = g
            .iter()
            .zip(&drop)
            .filter(|(_, d)| !**d)
            .map(|(w, _)| *w)
            .collect();
        let h = s.add_group(out);
        put!(newgroup, h)
    })();
    finish(MPI_COMM_WORLD, "MPI_Group_excl", r)
}

/// MPI_Group_translate_ranks (MPI-4.1 §7.3.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_translate_ranks(
    g1: Handle,
    n: c_int,
    r1: *const c_int,
    g2: Handle,
    r2: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Group_translate_ranks")?;
        let (a, b) = (s.group(g1)?, s.group(g2)?);
        for (i, &x) in ranks(n, r1)?.iter().enumerate() {
            let v = if x == MPI_PROC_NULL {
                MPI_PROC_NULL
            } else {
                let w = a[check_group_rank(a, x)?];
                b.iter()
                    .position(|&m| m == w)
                    .map_or(MPI_UNDEFINED, |p| p as c_int)
            };
            // SAFETY: r2 holds n entries.
            unsafe { *r2.add(i) = v };
        }
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Group_translate_ranks", r)
}

fn set_op(
    g1: Handle,
    g2: Handle,
    newgroup: *mut Handle,
    func: &str,
    f: fn(&[u32], &[u32]) -> Vec<u32>,
) -> c_int {
    let r = (|| {
        let s = state(func)?;
        let out = f(s.group(g1)?, s.group(g2)?);
        let h = s.add_group(out);
        put!(newgroup, h)
    })();
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Group_union (MPI-4.1 §7.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_union(g1: Handle, g2: Handle, newgroup: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    set_op(g1, g2, newgroup, "MPI_Group_union", |a, b| {
        let mut v = a.to_vec();
        v.extend(b.iter().filter(|x| !a.contains(x)));
        v
    })
}

/// MPI_Group_intersection (MPI-4.1 §7.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_intersection(
    g1: Handle,
    g2: Handle,
    newgroup: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    set_op(g1, g2, newgroup, "MPI_Group_intersection", |a, b| {
        a.iter().copied().filter(|x| b.contains(x)).collect()
    })
}

/// MPI_Group_difference (MPI-4.1 §7.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_difference(
    g1: Handle,
    g2: Handle,
    newgroup: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    set_op(g1, g2, newgroup, "MPI_Group_difference", |a, b| {
        a.iter().copied().filter(|x| !b.contains(x)).collect()
    })
}

/// MPI_Group_compare (MPI-4.1 §7.3.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_compare(g1: Handle, g2: Handle, result: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Group_compare")
        .and_then(|s| put!(result, compare_members(s.group(g1)?, s.group(g2)?)));
    finish(MPI_COMM_WORLD, "MPI_Group_compare", r)
}

/// MPI_Group_free (MPI-4.1 §7.3.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_free(group: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Group_free")?;
        if group.is_null() {
            return Err(err(MPI_ERR_ARG, "group pointer is NULL"));
        }
        // SAFETY: non-null.
        let h = unsafe { *group };
        if h != MPI_GROUP_EMPTY {
            handle_index(K_GROUP, h)
                .and_then(|i| s.groups.remove(i))
                .ok_or_else(|| err(MPI_ERR_GROUP, format!("group handle {h:#x} is not valid")))?;
        }
        put!(group, MPI_GROUP_NULL)
    })();
    finish(MPI_COMM_WORLD, "MPI_Group_free", r)
}

// ------------------------------------------------------------------- Cartesian topologies

/// The `k` factors of `n` in non-increasing order that are as close to each other as
/// possible: the smallest spread (largest minus smallest), ties going to the one whose
/// smallest factors are largest (MPICH's choice; its test suite checks thousands of cases).
/// An exhaustive search over the divisors of `n`, pruned by the best spread so far.
fn balanced_factors(n: i64, k: usize) -> Vec<i64> {
    fn better(a: &[i64], b: &[i64]) -> bool {
        let (sa, sb) = (a[0] - a[a.len() - 1], b[0] - b[b.len() - 1]);
        if sa != sb {
            return sa < sb;
        }
        a.iter()
            .rev()
            .zip(b.iter().rev())
            .find(|(x, y)| x != y)
            .is_some_and(|(x, y)| x > y)
    }
    /// Whether `f` raised to `k` reaches `n` (so `k` factors of at most `f` can make `n`).
    fn reaches(f: i64, k: usize, n: i64) -> bool {
        let mut p = 1i64;
        for _ in 0..k {
            p = p.saturating_mul(f);
            if p >= n {
                return true;
            }
        }
        p >= n
    }
    fn search(
        rest: i64,
        k: usize,
        maxf: i64,
        divs: &[i64],
        cur: &mut Vec<i64>,
        best: &mut Option<Vec<i64>>,
    ) {
        if k == 1 {
            if rest <= maxf {
                cur.push(rest);
                if best.as_ref().is_none_or(|b| better(cur, b)) {
                    *best = Some(cur.clone());
                }
                cur.pop();
            }
            return;
        }
        if rest == 1 {
            // Only ones are left: one candidate.
            let at = cur.len();
            cur.resize(at + k, 1);
            if best.as_ref().is_none_or(|b| better(cur, b)) {
                *best = Some(cur.clone());
            }
            cur.truncate(at);
            return;
        }
        let below = divs.partition_point(|&d| d <= maxf);
        for &f in divs[..below].iter().rev() {
            if rest % f != 0 {
                continue;
            }
            if !reaches(f, k, rest) {
                break;
            }
            let first = cur.first().copied().unwrap_or(f);
            if let Some(b) = best {
                // The remaining factors are at most f, so the spread is at least first - f.
                if first - f > b[0] - b[b.len() - 1] {
                    break;
                }
            }
            cur.push(f);
            search(rest / f, k - 1, f, divs, cur, best);
            cur.pop();
        }
    }
    if k == 0 {
        return Vec::new();
    }
    let mut divs: Vec<i64> = (1..)
        .take_while(|d| d * d <= n)
        .filter(|d| n % d == 0)
        .flat_map(|d| [d, n / d])
        .collect();
    divs.sort_unstable();
    divs.dedup();
    let mut best = None;
    search(n, k, n, &divs, &mut Vec::with_capacity(k), &mut best);
    best.expect("n = n * 1 * ... * 1 is always a candidate")
}

/// MPI_Dims_create (MPI-4.1 §8.5.2): fills the zero entries with factors of `nnodes` as
/// close to each other as possible (`balanced_factors`), in non-increasing order.
#[no_mangle]
pub unsafe extern "C" fn MPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if nnodes <= 0 || ndims < 0 || (ndims > 0 && dims.is_null()) {
            return Err(err(MPI_ERR_ARG, format!("nnodes {nnodes}, ndims {ndims}")));
        }
        if ndims == 0 {
            return if nnodes == 1 {
                Ok(())
            } else {
                Err(err(
                    MPI_ERR_DIMS,
                    format!("no dimensions for {nnodes} nodes"),
                ))
            };
        }
        // SAFETY: dims holds ndims entries (non-null, checked above).
        let d = unsafe { std::slice::from_raw_parts_mut(dims, ndims as usize) };
        let mut rest = nnodes;
        let mut free = 0;
        for &x in d.iter() {
            if x < 0 {
                return Err(err(MPI_ERR_DIMS, format!("dims entry {x} is negative")));
            }
            if x > 0 {
                if rest % x != 0 {
                    return Err(err(
                        MPI_ERR_DIMS,
                        format!("nnodes {nnodes} is not a multiple of the fixed dims"),
                    ));
                }
                rest /= x;
            } else {
                free += 1;
            }
        }
        if free == 0 {
            return if rest == 1 {
                Ok(())
            } else {
                Err(err(MPI_ERR_DIMS, "fixed dims do not multiply to nnodes"))
            };
        }
        let mut it = balanced_factors(rest as i64, free).into_iter();
        for x in d.iter_mut() {
            if *x == 0 {
                *x = it.next().expect("one per free entry") as c_int;
            }
        }
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Dims_create", r)
}

/// The new rank of this process in a grid of `d` (`p` periodic) on `c` and the split color:
/// with `reorder`, grid neighbours share a node where the members' nodes allow
/// (`weft::Comm::cart_position_by_node`); without, ranks keep their order. Ranks past the
/// grid get MPI_UNDEFINED.
fn cart_place(c: &weft::Comm, d: &[c_int], p: &[bool], reorder: bool) -> (i32, c_int) {
    let total: i64 = d.iter().map(|&x| x as i64).product();
    if reorder {
        let dims: Vec<u32> = d.iter().map(|&x| x as u32).collect();
        match c.cart_position_by_node(&dims, p) {
            Some(pos) => (0, pos as c_int),
            None => (weft::UNDEFINED, MPI_UNDEFINED),
        }
    } else if (c.rank() as i64) < total {
        (0, c.rank() as c_int)
    } else {
        (weft::UNDEFINED, MPI_UNDEFINED)
    }
}

/// MPI_Cart_create (MPI-4.1 §8.5.1): with `reorder`, ranks are placed so that grid
/// neighbours share a node where the members' nodes allow (never more neighbour pairs across
/// nodes than the given order); without, ranks keep their order.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_create(
    comm: Handle,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    reorder: c_int,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Cart_create")?;
        let d = ranks(ndims, dims)?.to_vec();
        let p: Vec<bool> = ranks(ndims, periods)?.iter().map(|&x| x != 0).collect();
        if d.iter().any(|&x| x <= 0) {
            return Err(err(
                MPI_ERR_DIMS,
                format!("dims {d:?} has a non-positive entry"),
            ));
        }
        let total: i64 = d.iter().map(|&x| x as i64).product();
        let c = &s.comm(comm)?.comm;
        if c.is_inter() {
            return Err(err(
                MPI_ERR_COMM,
                "a Cartesian topology needs an intracommunicator, not an intercommunicator",
            ));
        }
        if total > c.size() as i64 {
            return Err(err(
                MPI_ERR_DIMS,
                format!(
                    "grid of {total} ranks exceeds communicator size {}",
                    c.size()
                ),
            ));
        }
        let (color, key) = cart_place(c, &d, &p, reorder != 0);
        let nc = split_of("MPI_Cart_create", comm, color, key)?;
        let s = state("MPI_Cart_create")?;
        new_comm(s, nc, newcomm)?;
        // SAFETY: just written.
        let h = unsafe { *newcomm };
        if h != MPI_COMM_NULL {
            s.comm_mut(h)?.cart = Some((d, p));
            crate::topo::attach_neighborhood(s, h)?;
        }
        Ok(())
    })();
    finish(comm, "MPI_Cart_create", r)
}

fn cart(s: &State, comm: Handle) -> R<(Vec<c_int>, Vec<bool>)> {
    s.comm(comm)?
        .cart
        .clone()
        .ok_or_else(|| err(MPI_ERR_TOPOLOGY, "communicator has no Cartesian topology"))
}

fn coords_of(dims: &[c_int], mut rank: c_int) -> Vec<c_int> {
    let mut c = vec![0; dims.len()];
    for i in (0..dims.len()).rev() {
        c[i] = rank % dims[i];
        rank /= dims[i];
    }
    c
}

/// MPI_Cart_coords (MPI-4.1 §8.5.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_coords(
    comm: Handle,
    rank: c_int,
    maxdims: c_int,
    coords: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Cart_coords")?;
        let (d, _) = cart(s, comm)?;
        let n: c_int = d.iter().product();
        if rank < 0 || rank >= n {
            return Err(err(
                MPI_ERR_RANK,
                format!("rank {rank} is outside the grid of {n}"),
            ));
        }
        if (maxdims as usize) < d.len() {
            return Err(err(
                MPI_ERR_ARG,
                format!("maxdims {maxdims} < ndims {}", d.len()),
            ));
        }
        for (i, c) in coords_of(&d, rank).into_iter().enumerate() {
            // SAFETY: coords holds maxdims >= ndims entries.
            unsafe { *coords.add(i) = c };
        }
        Ok(())
    })();
    finish(comm, "MPI_Cart_coords", r)
}

fn rank_of(d: &[c_int], p: &[bool], coords: &[c_int]) -> R<c_int> {
    let mut r = 0;
    for i in 0..d.len() {
        let mut c = coords[i];
        if p[i] {
            c = c.rem_euclid(d[i]);
        } else if c < 0 || c >= d[i] {
            return Err(err(
                MPI_ERR_ARG,
                format!(
                    "coordinate {c} outside 0..{} in a non-periodic dimension",
                    d[i]
                ),
            ));
        }
        r = r * d[i] + c;
    }
    Ok(r)
}

/// MPI_Cart_rank (MPI-4.1 §8.5.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_rank(
    comm: Handle,
    coords: *const c_int,
    rank: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Cart_rank")?;
        let (d, p) = cart(s, comm)?;
        let c = ranks(d.len() as c_int, coords)?;
        put!(rank, rank_of(&d, &p, c)?)
    })();
    finish(comm, "MPI_Cart_rank", r)
}

/// MPI_Cart_shift (MPI-4.1 §8.5.6).
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_shift(
    comm: Handle,
    direction: c_int,
    disp: c_int,
    source: *mut c_int,
    dest: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Cart_shift")?;
        let (d, p) = cart(s, comm)?;
        if direction < 0 || direction as usize >= d.len() {
            return Err(err(
                MPI_ERR_ARG,
                format!("direction {direction} not in 0..{}", d.len()),
            ));
        }
        let me = coords_of(&d, s.comm(comm)?.comm.rank() as c_int);
        let at = |delta: c_int| {
            let mut c = me.clone();
            c[direction as usize] += delta;
            rank_of(&d, &p, &c).unwrap_or(MPI_PROC_NULL)
        };
        put!(source, at(-disp))?;
        put!(dest, at(disp))
    })();
    finish(comm, "MPI_Cart_shift", r)
}

/// MPI_Cartdim_get (MPI-4.1 §8.5.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Cartdim_get(comm: Handle, ndims: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Cartdim_get").and_then(|s| put!(ndims, cart(s, comm)?.0.len() as c_int));
    finish(comm, "MPI_Cartdim_get", r)
}

/// MPI_Cart_get (MPI-4.1 §8.5.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_get(
    comm: Handle,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Cart_get")?;
        let (d, p) = cart(s, comm)?;
        if (maxdims as usize) < d.len() {
            return Err(err(
                MPI_ERR_ARG,
                format!("maxdims {maxdims} < ndims {}", d.len()),
            ));
        }
        let me = coords_of(&d, s.comm(comm)?.comm.rank() as c_int);
        for i in 0..d.len() {
            // SAFETY: each array holds maxdims >= ndims entries.
            unsafe {
                *dims.add(i) = d[i];
                *periods.add(i) = p[i] as c_int;
                *coords.add(i) = me[i];
            }
        }
        Ok(())
    })();
    finish(comm, "MPI_Cart_get", r)
}

/// MPI_Cart_sub (MPI-4.1 §8.5.7).
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_sub(
    comm: Handle,
    remain: *const c_int,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Cart_sub")?;
        let (d, p) = cart(s, comm)?;
        let keep: Vec<bool> = ranks(d.len() as c_int, remain)?
            .iter()
            .map(|&x| x != 0)
            .collect();
        let c = &s.comm(comm)?.comm;
        let me = coords_of(&d, c.rank() as c_int);
        let (mut color, mut key) = (0, 0);
        for i in 0..d.len() {
            if keep[i] {
                key = key * d[i] + me[i];
            } else {
                color = color * d[i] + me[i];
            }
        }
        if !keep.contains(&true) {
            // A zero-dimensional grid holds one process, as MPI_Cart_create with ndims 0
            // makes it: rank 0 gets it, the others MPI_COMM_NULL (MPICH does the same).
            color = if c.rank() == 0 { 0 } else { weft::UNDEFINED };
        }
        let nc = split_of("MPI_Cart_sub", comm, color, key)?;
        let s = state("MPI_Cart_sub")?;
        new_comm(s, nc, newcomm)?;
        // SAFETY: just written.
        let h = unsafe { *newcomm };
        if h == MPI_COMM_NULL {
            return Ok(());
        }
        let nd: Vec<c_int> = (0..d.len()).filter(|&i| keep[i]).map(|i| d[i]).collect();
        let np: Vec<bool> = (0..d.len()).filter(|&i| keep[i]).map(|i| p[i]).collect();
        s.comm_mut(h)?.cart = Some((nd, np));
        crate::topo::attach_neighborhood(s, h)
    })();
    finish(comm, "MPI_Cart_sub", r)
}

/// MPI_Cart_map (MPI-4.1 §8.5.8): the placement MPI_Cart_create makes with `reorder`
/// (grid neighbours on one node where the members' nodes allow; MPI_UNDEFINED past the
/// grid).
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_map(
    comm: Handle,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Cart_map")?;
        let d = ranks(ndims, dims)?;
        let p: Vec<bool> = ranks(ndims, periods)?.iter().map(|&x| x != 0).collect();
        if d.iter().any(|&x| x <= 0) {
            return Err(err(
                MPI_ERR_DIMS,
                format!("dims {d:?} has a non-positive entry"),
            ));
        }
        let c = &s.comm(comm)?.comm;
        let total: i64 = d.iter().map(|&x| x as i64).product();
        if total > c.size() as i64 {
            return Err(err(
                MPI_ERR_DIMS,
                format!(
                    "grid of {total} ranks exceeds communicator size {}",
                    c.size()
                ),
            ));
        }
        let (_, key) = cart_place(c, d, &p, true);
        put!(newrank, key)
    })();
    finish(comm, "MPI_Cart_map", r)
}

/// MPI_Topo_test (MPI-4.1 §8.5.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Topo_test(comm: Handle, status: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Topo_test").and_then(|s| put!(status, crate::topo::topo_kind(s, comm)?));
    finish(comm, "MPI_Topo_test", r)
}

// ------------------------------------------------------------------- attributes (MPI-4.1 §7.7)

/// User keyvals are numbered from here, above every predefined attribute key.
const KEYVAL_BASE: c_int = 1 << 12;

fn keyval_of(s: &State, k: c_int) -> Option<Keyval> {
    if k < KEYVAL_BASE {
        return None;
    }
    s.keyvals.get((k - KEYVAL_BASE) as usize).copied()
}

/// Runs the delete callback of attribute `k` (value `v`) on `comm` and forgets it.
pub(crate) fn delete_attr(s: &mut State, comm: Handle, k: c_int, v: usize) -> R<()> {
    if let Some(kv) = keyval_of(s, k) {
        if kv.delete != 0 {
            // SAFETY: registered by the program as an MPI_Comm_delete_attr_function.
            let f: DeleteFn = unsafe { std::mem::transmute::<usize, DeleteFn>(kv.delete) };
            // SAFETY: `f` is the program's delete callback, called as MPI-4.1 §7.7.2 says, with
            // the extra state the program registered with it.
            let rc = unsafe { f(comm, k, v as *mut c_void, kv.extra as *mut c_void) };
            if rc != MPI_SUCCESS {
                return Err(err(
                    rc,
                    format!("delete callback of keyval {k} returned {rc}"),
                ));
            }
        }
    }
    s.comm_mut(comm)?.attrs.retain(|(x, _)| *x != k);
    Ok(())
}

/// MPI_Comm_create_keyval (MPI-4.1 §7.7.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_keyval(
    copy_fn: usize,
    delete_fn: usize,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe {
        comm_create_keyval_as(
            "MPI_Comm_create_keyval",
            copy_fn,
            delete_fn,
            keyval,
            extra_state,
        )
    }
}

/// MPI_Comm_create_keyval's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Comm_create_keyval's contract.
pub(crate) unsafe fn comm_create_keyval_as(
    func: &str,
    copy_fn: usize,
    delete_fn: usize,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    let r = (|| {
        let s = state(func)?;
        let i = s.keyvals.insert(Keyval {
            copy: copy_fn,
            delete: delete_fn,
            extra: extra_state as usize,
        });
        put!(keyval, KEYVAL_BASE + i as c_int)
    })();
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Comm_free_keyval (MPI-4.1 §7.7.2): attributes already set keep working.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free_keyval(keyval: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_free_keyval_as("MPI_Comm_free_keyval", keyval) }
}

/// MPI_Comm_free_keyval's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Comm_free_keyval's contract.
pub(crate) unsafe fn comm_free_keyval_as(func: &str, keyval: *mut c_int) -> c_int {
    let r = (|| {
        if keyval.is_null() {
            return Err(err(MPI_ERR_ARG, "keyval pointer is NULL"));
        }
        let s = state(func)?;
        // SAFETY: non-null.
        let k = unsafe { *keyval };
        if keyval_of(s, k).is_none() {
            return Err(err(
                MPI_ERR_KEYVAL,
                format!("keyval {k} is not a user keyval"),
            ));
        }
        put!(keyval, 0)
    })();
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Comm_set_attr (MPI-4.1 §7.7.2): replacing a value deletes the old one first.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_attr(
    comm: Handle,
    keyval: c_int,
    value: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_set_attr_as("MPI_Comm_set_attr", comm, keyval, value) }
}

/// MPI_Comm_set_attr's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Comm_set_attr's contract.
pub(crate) unsafe fn comm_set_attr_as(
    func: &str,
    comm: Handle,
    keyval: c_int,
    value: *mut c_void,
) -> c_int {
    let r = (|| {
        let s = state(func)?;
        s.comm(comm)?;
        if keyval_of(s, keyval).is_none() {
            return Err(err(
                MPI_ERR_KEYVAL,
                format!("keyval {keyval} is not a user keyval"),
            ));
        }
        if let Some(&(_, old)) = s.comm(comm)?.attrs.iter().find(|(x, _)| *x == keyval) {
            delete_attr(s, comm, keyval, old)?;
        }
        s.comm_mut(comm)?.attrs.push((keyval, value as usize));
        Ok(())
    })();
    finish(comm, func, r)
}

/// MPI_Comm_delete_attr (MPI-4.1 §7.7.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_delete_attr(comm: Handle, keyval: c_int) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_delete_attr_as("MPI_Comm_delete_attr", comm, keyval) }
}

/// MPI_Comm_delete_attr's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Comm_delete_attr's contract.
pub(crate) unsafe fn comm_delete_attr_as(func: &str, comm: Handle, keyval: c_int) -> c_int {
    let r = (|| {
        let s = state(func)?;
        if keyval_of(s, keyval).is_none() {
            return Err(err(
                MPI_ERR_KEYVAL,
                format!("keyval {keyval} is not a user keyval"),
            ));
        }
        match s.comm(comm)?.attrs.iter().find(|(x, _)| *x == keyval) {
            Some(&(_, v)) => delete_attr(s, comm, keyval, v),
            None => Err(err(
                MPI_ERR_KEYVAL,
                format!("keyval {keyval} is not set on this communicator"),
            )),
        }
    })();
    finish(comm, func, r)
}

/// The ranks of `n` (first, last, stride) triplets, in order (MPI-4.1 §7.3.2).
fn range_ranks(n: c_int, ranges: *const [c_int; 3], size: usize) -> R<Vec<usize>> {
    if n < 0 {
        return Err(err(MPI_ERR_ARG, format!("n = {n} is negative")));
    }
    if n > 0 && ranges.is_null() {
        return Err(err(MPI_ERR_ARG, "ranges is NULL"));
    }
    let mut out = Vec::new();
    for i in 0..n as usize {
        // SAFETY: the array holds `n` triplets (the caller's contract).
        let [first, last, stride] = unsafe { *ranges.add(i) };
        if stride == 0 {
            return Err(err(MPI_ERR_ARG, format!("range {i} has stride 0")));
        }
        let mut r = first;
        while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
            if r < 0 || r as usize >= size {
                return Err(err(
                    MPI_ERR_RANK,
                    format!("rank {r} of range {i} is not in a group of size {size}"),
                ));
            }
            out.push(r as usize);
            r += stride;
        }
    }
    Ok(out)
}

/// MPI_Group_range_incl (MPI-4.1 §7.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_incl(
    group: Handle,
    n: c_int,
    ranges: *const [c_int; 3],
    newgroup: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Group_range_incl")?;
        let g = s.group(group)?.to_vec();
        let picked = range_ranks(n, ranges, g.len())?;
        let mut out = Vec::with_capacity(picked.len());
        for p in picked {
            if out.contains(&g[p]) {
                return Err(err(MPI_ERR_RANK, format!("rank {p} is listed twice")));
            }
            out.push(g[p]);
        }
        let h = s.add_group(out);
        put!(newgroup, h)
    })();
    finish(MPI_COMM_WORLD, "MPI_Group_range_incl", r)
}

/// MPI_Group_range_excl (MPI-4.1 §7.3.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_excl(
    group: Handle,
    n: c_int,
    ranges: *const [c_int; 3],
    newgroup: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Group_range_excl")?;
        let g = s.group(group)?.to_vec();
        let mut drop = vec![false; g.len()];
        for p in range_ranks(n, ranges, g.len())? {
            drop[p] = true;
        }
        let out: Vec<u32> = g
            .iter()
            .zip(&drop)
            .filter(|(_, d)| !**d)
            .map(|(w, _)| *w)
            .collect();
        let h = s.add_group(out);
        put!(newgroup, h)
    })();
    finish(MPI_COMM_WORLD, "MPI_Group_range_excl", r)
}

/// MPI_Keyval_create (MPI-1 form of MPI_Comm_create_keyval, deprecated; same callbacks).
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_create(
    copy_fn: usize,
    delete_fn: usize,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_create_keyval_as("MPI_Keyval_create", copy_fn, delete_fn, keyval, extra_state) }
}

/// MPI_Keyval_free (MPI-1 form of MPI_Comm_free_keyval, deprecated).
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_free(keyval: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_free_keyval_as("MPI_Keyval_free", keyval) }
}

/// MPI_Attr_put (MPI-1 form of MPI_Comm_set_attr, deprecated).
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_put(comm: Handle, keyval: c_int, value: *mut c_void) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_set_attr_as("MPI_Attr_put", comm, keyval, value) }
}

/// MPI_Attr_get (MPI-1 form of MPI_Comm_get_attr, deprecated).
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_get(
    comm: Handle,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_get_attr_as("MPI_Attr_get", comm, keyval, value, flag) }
}

/// MPI_Attr_delete (MPI-1 form of MPI_Comm_delete_attr, deprecated).
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_delete(comm: Handle, keyval: c_int) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_delete_attr_as("MPI_Attr_delete", comm, keyval) }
}

/// MPI_Comm_idup (MPI-4.1 §7.4.2): starts the duplication and returns at once; the ranks
/// agree on the new context while they go on (weft's `Comm::idup`, advanced by every call
/// that makes progress). `*newcomm` is written when the request completes (MPI_Wait/Test and
/// the array forms), with the error handler, topology and attributes the communicator had at
/// this call (the copy callbacks run here, as if the duplication happened now). The request
/// cannot be cancelled or freed before it completes. Limit (weft's `Comm::idup`): while a
/// blocking communicator creation (MPI_Comm_dup, split, create, ...) runs on this process,
/// duplications in flight make no progress, so a program where that creation needs a peer
/// that first waits for the idup deadlocks.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup(
    comm: Handle,
    newcomm: *mut Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_idup_as("MPI_Comm_idup", comm, newcomm, req) }
}

/// MPI_Comm_idup's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Comm_idup's contract.
pub(crate) unsafe fn comm_idup_as(
    func: &str,
    comm: Handle,
    newcomm: *mut Handle,
    req: *mut Handle,
) -> c_int {
    let r = (|| {
        if req.is_null() {
            return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
        }
        if newcomm.is_null() {
            return Err(err(MPI_ERR_ARG, "newcomm pointer is NULL"));
        }
        let s = state(func)?;
        let dup = s.comm(comm)?.comm.idup()?;
        let inherited = Inherited::of(s, comm)?;
        let mut entry = ReqEntry::generalized();
        entry.comm = comm;
        let h = s.add_req(entry);
        s.idups.insert(
            h,
            PendingDup {
                dup,
                newcomm,
                inherited,
            },
        );
        put!(req, h)
    })();
    finish(comm, func, r)
}

/// A duplication in flight: its weft request and where the new handle goes.
pub(crate) struct PendingDup {
    dup: weft::comm::DupRequest,
    newcomm: *mut Handle,
    inherited: Inherited,
}

/// Whether request `h` is a duplication in flight (MPI_Comm_idup).
pub(crate) fn is_idup(s: &State, h: Handle) -> bool {
    !s.idups.is_empty() && s.idups.contains_key(&h)
}

/// Whether duplication `h` has its outcome (completing it then does not wait); does not poll.
pub(crate) fn idup_ready(s: &State, h: Handle) -> bool {
    s.idups.get(&h).is_none_or(|p| p.dup.is_done())
}

/// Completes duplication `h` (request table index `i`) if `block` or it is done: writes the
/// new handle and retires the request. Returns whether it completed.
pub(crate) fn complete_idup(s: &mut State, i: usize, h: Handle, block: bool) -> R<bool> {
    let Some(mut p) = s.idups.remove(&h) else {
        return Err(err(
            MPI_ERR_REQUEST,
            format!("request {h:#x} is not a duplication"),
        ));
    };
    let got = if block {
        p.dup.wait()
    } else {
        match p.dup.test() {
            Ok(Some(c)) => Ok(c),
            Ok(None) => {
                s.idups.insert(h, p);
                return Ok(false);
            }
            Err(e) => Err(e),
        }
    };
    s.reqs.discard(i);
    let c = got?;
    p.inherited.install(s, c, p.newcomm)?;
    Ok(true)
}

/// MPI_Comm_dup_with_info (MPI-4.1 §7.4.2): as MPI_Comm_dup (attributes, error handler and
/// topology travel); the hints in `info` change nothing in weft, which the standard allows,
/// but the handle must be an info object or MPI_INFO_NULL.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup_with_info(
    comm: Handle,
    info: Handle,
    newcomm: *mut Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let r = state("MPI_Comm_dup_with_info").and_then(|s| s.check_info_or_null(info));
    if let Err(e) = r {
        return finish(comm, "MPI_Comm_dup_with_info", Err(e));
    }
    // The duplication enters again; under MPI_THREAD_MULTIPLE it must not find the lock
    // held while it waits (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe { comm_dup_as("MPI_Comm_dup_with_info", comm, newcomm) }
}

/// MPI_Comm_idup_with_info (MPI-4.1 §7.4.2): as MPI_Comm_idup; hints change nothing.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup_with_info(
    comm: Handle,
    _info: Handle,
    newcomm: *mut Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { comm_idup_as("MPI_Comm_idup_with_info", comm, newcomm, req) }
}

// ------------------------------------------------------------------- neighborhood collectives
// (the collectives themselves are in crate::topo)

/// The neighbors of `rank` in a Cartesian topology, in the order MPI-4.1 §8.6 gives them:
/// for each dimension the rank at coordinate -1, then the one at +1 (MPI_PROC_NULL past the
/// edge of a non-periodic dimension).
pub(crate) fn cart_neighbors(dims: &[c_int], periods: &[bool], rank: c_int) -> Vec<c_int> {
    let me = coords_of(dims, rank);
    let mut out = Vec::with_capacity(2 * dims.len());
    for d in 0..dims.len() {
        for step in [-1, 1] {
            let mut c = me.clone();
            c[d] += step;
            out.push(rank_of(dims, periods, &c).unwrap_or(MPI_PROC_NULL));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::balanced_factors;

    #[test]
    fn dims_are_as_balanced_as_mpich_expects() {
        // Cases from MPICH's test/mpi/topo/baddims.h, where a greedy split of the prime
        // factors goes wrong, and ties of the spread.
        let cases: [(i64, &[i64]); 8] = [
            (72, &[9, 8]),
            (450, &[25, 18]),
            (228072, &[86, 52, 51]),
            (117936, &[14, 13, 9, 9, 8]),
            (712656, &[101, 14, 9, 8, 7]),
            (555408, &[38, 29, 24, 21]),
            (1, &[1, 1, 1]),
            (7, &[7, 1]),
        ];
        for (n, want) in cases {
            assert_eq!(
                balanced_factors(n, want.len()),
                want,
                "{n} in {}d",
                want.len()
            );
        }
        assert_eq!(
            balanced_factors(999_983, 17)[0],
            999_983,
            "a prime stays whole"
        );
    }
}
