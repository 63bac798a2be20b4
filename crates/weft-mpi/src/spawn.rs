//! Starting processes (MPI-4.1 §11.8.2, §11.8.3): MPI_Comm_spawn, MPI_Comm_spawn_multiple
//! and MPI_Comm_get_parent.
//!
//! The root of the spawning communicator starts the children as a job of their own with
//! weft's launcher (`weft run`: the one that started this job, which tells its ranks its
//! path, else the `weft` installed beside this library) and serves a bootstrap store for
//! the *universe* of parents and children (`weft::port::SpawnHost`). The children's
//! MPI_Init builds their MPI_COMM_WORLD as usual, then every parent and child starts a
//! second weft instance in the universe and makes the parent/child intercommunicator there
//! (`weft::port::spawn_intercomm`); the children find it with MPI_Comm_get_parent. The
//! universes live until MPI_Finalize, where the root also reaps the launchers it started
//! (a child job dies with its root: the launcher gets SIGTERM when the root ends).
//!
//! Groups of such an intercommunicator (and of communicators made from it) number their
//! processes in the universe, not in MPI_COMM_WORLD: they compare and translate only with
//! groups of the same universe. MPI_Comm_spawn_multiple starts its commands as one job of
//! several programs (`weft run A : B`), which sets each child's MPI_APPNUM.
//! Depends on the state tables, the ports' broadcasts (`crate::dynamic`) and weft's ports.

use crate::consts::*;
use crate::dtype::put;
use crate::env::c_str;
use crate::error::{err, finish, R};
use crate::state::{state, State};
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicI32, Ordering};

/// MPI_ERR_SPAWN (the standard ABI's value).
pub const MPI_ERR_SPAWN: c_int = 53;
/// Words of the root's broadcast besides the link: outcome class, maxprocs, link bytes.
const HEAD_WORDS: usize = 3;
/// Bytes of the link the broadcast carries at most.
const LINK_BYTES: usize = 1024;

/// MPI_APPNUM of a spawned process (the attribute's value lives here), -1 when not spawned.
static APPNUM: AtomicI32 = AtomicI32::new(-1);

/// What the spawns of this process keep until MPI_Finalize.
#[derive(Default)]
pub struct Spawned {
    /// This process's instances in the universes of its spawns (as parent or child).
    universes: Vec<weft::Weft>,
    /// The child jobs' launchers this process started as root.
    hosts: Vec<weft::port::SpawnHost>,
    /// A spawned process's parent intercommunicator: its handle and context id.
    parent: Option<(Handle, u32)>,
}

impl Spawned {
    /// MPI_Finalize: leaves the universes (after the communicators on them were dropped),
    /// then waits for the child jobs this process started to end and reaps their launchers.
    pub fn finish(self) -> R<()> {
        for u in self.universes {
            u.leave_universe();
        }
        for h in self.hosts {
            h.finish()?;
        }
        Ok(())
    }
}

/// The attribute value of MPI_APPNUM, when this process was spawned.
pub(crate) fn appnum_attr() -> Option<*const c_int> {
    (APPNUM.load(Ordering::Relaxed) >= 0).then_some(APPNUM.as_ptr() as *const c_int)
}

/// MPI_Init: MPI_APPNUM, and for a spawned process the universe of its parents and the
/// parent intercommunicator (collective over the parents and the children).
pub(crate) fn join_parent(s: &mut State) -> R<()> {
    // A rank of a job of several programs (`weft run A : B`) has an MPI_APPNUM too.
    if let Some(a) = s.weft.appnum() {
        APPNUM.store(a.min(i32::MAX as u32) as i32, Ordering::Relaxed);
    }
    let Some(link) = s.weft.spawn_link()? else {
        return Ok(());
    };
    let world = s.weft.world();
    if world.size() != link.children {
        return Err(err(
            MPI_ERR_SPAWN,
            format!(
                "MPI_Init: this job has {} processes, its parents spawned {}",
                world.size(),
                link.children
            ),
        ));
    }
    let universe = s.weft.join_universe(&link, link.parents + world.rank())?;
    let inter = weft::port::spawn_intercomm(&universe, link.parents)?;
    let ctx = inter.context_id();
    let h = s.add_comm(inter);
    // Its name (MPI-4.1 §11.8.2).
    s.comm_mut(h)?.name = "MPI_COMM_PARENT".into();
    s.spawned.parent = Some((h, ctx));
    s.spawned.universes.push(universe);
    if s.weft.appnum().is_none() {
        APPNUM.store(0, Ordering::Relaxed);
    }
    Ok(())
}

/// The `weft` binary to start a child job with: the launcher of this job, else one
/// installed beside this library (`lib/../bin/weft` or in the library's own folder).
fn launcher(s: &State) -> R<std::path::PathBuf> {
    if let Some(p) = s.weft.run_program().filter(|p| p.is_file()) {
        return Ok(p);
    }
    // SAFETY: Dl_info is plain data (pointers and integers) for which all zeroes is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr reads the address of a function of this library and fills `info`;
    // `dli_fname` is then null or a NUL-terminated path owned by the loader.
    let found = unsafe {
        libc::dladdr(MPI_Comm_spawn as *const libc::c_void, &mut info) != 0
            && !info.dli_fname.is_null()
    };
    if found {
        // SAFETY: checked non-null above; the loader keeps the string while loaded.
        let lib = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
        let lib = std::path::PathBuf::from(lib.to_string_lossy().into_owned());
        if let Some(dir) = lib.parent() {
            for cand in [dir.join("../bin/weft"), dir.join("weft")] {
                if cand.is_file() {
                    return Ok(cand);
                }
            }
        }
    }
    Err(err(
        MPI_ERR_SPAWN,
        "MPI_Comm_spawn: no weft launcher found (start the job with weft run, or install \
         weft's bin/weft beside its lib/)",
    ))
}

/// The NULL-terminated array `argv` (MPI_ARGV_NULL: none).
///
/// # Safety
/// `argv` null or a NULL-terminated array of NUL-terminated strings.
unsafe fn args_of(argv: *mut *mut c_char) -> R<Vec<String>> {
    let mut out = Vec::new();
    if argv.is_null() {
        return Ok(out);
    }
    for i in 0.. {
        // SAFETY: the array is NULL-terminated (the caller's contract).
        let a = unsafe { *argv.add(i) };
        if a.is_null() {
            break;
        }
        // SAFETY: NUL-terminated (the caller's contract).
        out.push(unsafe { c_str(a, "argv") }?);
    }
    Ok(out)
}

/// The root's command from its arguments and the info keys `wdir`, `path` and `host` (the
/// others are ignored, as MPI-4.1 §11.8.4 allows).
///
/// # Safety
/// As for MPI_Comm_spawn's arguments.
unsafe fn command_of(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: Handle,
) -> R<weft::port::SpawnCommand> {
    // SAFETY: the caller's contract.
    let program = unsafe { c_str(command, "command") }?;
    if program.is_empty() {
        return Err(err(MPI_ERR_SPAWN, "MPI_Comm_spawn: empty command"));
    }
    if maxprocs < 1 {
        return Err(err(
            MPI_ERR_ARG,
            format!("MPI_Comm_spawn: maxprocs {maxprocs} is not at least 1"),
        ));
    }
    // SAFETY: the caller's contract.
    let args = unsafe { args_of(argv) }?;
    let mut cmd = weft::port::SpawnCommand {
        program,
        args,
        children: maxprocs as u32,
        wdir: None,
        path: Vec::new(),
        host: None,
    };
    if info != MPI_INFO_NULL {
        state("MPI_Comm_spawn")?.check_info_or_null(info)?;
        for (k, v) in crate::env::info_entries(info)? {
            match k.as_str() {
                "wdir" => cmd.wdir = Some(v.into()),
                "path" => cmd.path = v.split(':').map(Into::into).collect(),
                "host" => cmd.host = Some(v),
                _ => {}
            }
        }
    }
    Ok(cmd)
}

/// MPI_Comm_spawn and MPI_Comm_spawn_multiple over `comm` with root `root`: the root makes
/// its commands with `at_root` (its arguments are significant there only), starts them as
/// one job and waits for the children's MPI_Init; it broadcasts the outcome, the number of
/// processes and the universe's link; every parent then joins the universe. A failure at
/// the root fails the call on every rank, each of `errcodes` (MPI_ERRCODES_IGNORE: null)
/// set to MPI_ERR_SPAWN; nothing is left running.
fn spawn_over(
    what: &str,
    root: c_int,
    comm: Handle,
    intercomm: *mut Handle,
    errcodes: *mut c_int,
    at_root: impl FnOnce() -> R<Vec<weft::port::SpawnCommand>>,
) -> R<()> {
    if intercomm.is_null() {
        return Err(err(MPI_ERR_ARG, "intercomm is NULL"));
    }
    let c = crate::dynamic::intra_and_root(comm, root, what)?;
    let root = root as u32;
    let mut words: Vec<c_int> = vec![0; HEAD_WORDS + LINK_BYTES / 4];
    let mut started: Option<weft::port::SpawnHost> = None;
    let mut failure = None;
    if c.rank() == root {
        let s = state(what)?;
        let outcome = at_root().and_then(|cmds| {
            let total: u64 = cmds.iter().map(|c| u64::from(c.children)).sum();
            words[1] = c_int::try_from(total)
                .map_err(|_| err(MPI_ERR_ARG, format!("{what}: {total} processes")))?;
            let prog = launcher(s)?;
            let mut host = weft::port::SpawnHost::start(&s.weft, &prog, c.size(), &cmds)
                .map_err(|e| err(MPI_ERR_SPAWN, e.to_string()))?;
            let timeout = std::time::Duration::from_secs(s.weft.config().boot_timeout_s);
            host.wait_children(timeout)
                .map_err(|e| err(MPI_ERR_SPAWN, e.to_string()))?;
            Ok(host)
        });
        match outcome {
            Ok(host) => {
                let link = host.link().encode().into_bytes();
                if link.len() > LINK_BYTES {
                    words[0] = MPI_ERR_INTERN;
                    failure = Some(err(MPI_ERR_INTERN, format!("{what}: link too long")));
                } else {
                    words[2] = link.len() as c_int;
                    for (i, b) in link.iter().enumerate() {
                        words[HEAD_WORDS + i / 4] |= (*b as c_int) << (8 * (i % 4));
                    }
                    started = Some(host);
                }
            }
            Err(e) => {
                words[0] = e.class;
                failure = Some(e);
            }
        }
    }
    if c.size() > 1 {
        crate::dynamic::spread(what, comm, root, &mut words)?;
    }
    let class = words[0];
    let n = words[1].max(0) as usize;
    if !errcodes.is_null() && n > 0 {
        // SAFETY: the caller passes one entry per process asked for (MPI-4.1 §11.8.2).
        let codes = unsafe { std::slice::from_raw_parts_mut(errcodes, n) };
        codes.fill(if class == MPI_SUCCESS {
            MPI_SUCCESS
        } else {
            MPI_ERR_SPAWN
        });
    }
    if class != MPI_SUCCESS {
        return Err(failure.unwrap_or_else(|| {
            err(
                class,
                format!("{what}: the root (rank {root}) could not spawn the processes"),
            )
        }));
    }
    let len = (words[2].max(0) as usize).min(LINK_BYTES);
    let bytes: Vec<u8> = (0..len)
        .map(|i| (words[HEAD_WORDS + i / 4] >> (8 * (i % 4))) as u8)
        .collect();
    let link = weft::port::SpawnLink::parse(&String::from_utf8_lossy(&bytes))?;
    let s = state(what)?;
    let universe = s
        .weft
        .join_universe(&link, c.rank())
        .map_err(|e| err(MPI_ERR_SPAWN, e.to_string()))?;
    let inter = weft::port::spawn_intercomm(&universe, link.parents)?;
    let h = s.add_comm(inter);
    s.spawned.universes.push(universe);
    s.spawned.hosts.extend(started);
    put!(intercomm, h)
}

/// MPI_Comm_spawn (MPI-4.1 §11.8.2): collective over `comm`; the command, its arguments,
/// `maxprocs` and `info` matter at `root` only. Starts exactly `maxprocs` processes or none:
/// a command that cannot start (or ends before its MPI_Init) fails the call on every rank
/// with MPI_ERR_SPAWN, each of `array_of_errcodes` set to it.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: Handle,
    root: c_int,
    comm: Handle,
    intercomm: *mut Handle,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let what = "MPI_Comm_spawn";
    let r = spawn_over(what, root, comm, intercomm, array_of_errcodes, || {
        // SAFETY: the caller's contract for the root's arguments.
        unsafe { command_of(command, argv, maxprocs, info) }.map(|c| vec![c])
    });
    finish(comm, what, r)
}

/// MPI_Comm_spawn_multiple (MPI-4.1 §11.8.3): like MPI_Comm_spawn for `count` commands
/// started as one job (one MPI_COMM_WORLD, the commands' processes in order), each with its
/// own arguments (MPI_ARGVS_NULL: none for any), maxprocs and info; each child's MPI_APPNUM
/// is its command's index. The `host` key is taken from the first command's info.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const Handle,
    root: c_int,
    comm: Handle,
    intercomm: *mut Handle,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let what = "MPI_Comm_spawn_multiple";
    let r = spawn_over(what, root, comm, intercomm, array_of_errcodes, || {
        if count < 1 {
            return Err(err(
                MPI_ERR_ARG,
                format!("{what}: count {count} is not at least 1"),
            ));
        }
        if array_of_commands.is_null() || array_of_maxprocs.is_null() || array_of_info.is_null() {
            return Err(err(
                MPI_ERR_ARG,
                format!("{what}: an array argument is NULL"),
            ));
        }
        (0..count as usize)
            .map(|i| {
                // SAFETY: each array has `count` entries (the caller's contract); argv's
                // entries are NULL-terminated arrays of strings.
                unsafe {
                    let argv = if array_of_argv.is_null() {
                        std::ptr::null_mut()
                    } else {
                        *array_of_argv.add(i)
                    };
                    command_of(
                        *array_of_commands.add(i),
                        argv,
                        *array_of_maxprocs.add(i),
                        *array_of_info.add(i),
                    )
                }
            })
            .collect()
    });
    finish(comm, what, r)
}

/// MPI_Comm_get_parent (MPI-4.1 §11.8.2): the intercommunicator to the parents of a
/// spawned process while it is not freed or disconnected, else MPI_COMM_NULL.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_parent(parent: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Comm_get_parent")?;
        let h = s
            .spawned
            .parent
            .filter(|&(h, ctx)| {
                s.comm(h)
                    .is_ok_and(|e| e.comm.is_inter() && e.comm.context_id() == ctx)
            })
            .map_or(MPI_COMM_NULL, |(h, _)| h);
        put!(parent, h)
    })();
    finish(MPI_COMM_WORLD, "MPI_Comm_get_parent", r)
}
