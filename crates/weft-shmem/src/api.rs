//! The untyped OpenSHMEM entry points: setup, memory management, ordering, barriers, signals,
//! locks, contexts, teams and their collectives, the deprecated active-set calls, and
//! `weft/sync.h` (`putmem`/`getmem` are written by `build.rs` with the sized routines). Plain Rust functions: `build.rs` exports each under
//! its C name (and its `pshmem_` profiling name) with a call into the function of that name.

// OpenSHMEM's routines take as many arguments as the specification gives them.
#![allow(clippy::too_many_arguments)]

use crate::*;
use weft::rma::alloc;

/// OpenSHMEM 1.5 §9.1.1 `shmem_init`: starts weft, maps the node's symmetric heaps and creates
/// the synchronisation engine. A second call does nothing.
pub(crate) fn shmem_init() {
    let mut g = runtime();
    if g.0.is_some() {
        return;
    }
    // Refers to the load-time constructor, so a static link (libshmem.a) that takes this
    // function takes the constructor's object too.
    std::hint::black_box(&SHARE_GLOBALS_AT_LOAD);
    // Its own weft instance, apart from MPI's when the program uses both (each library holds
    // its own copy of weft): PE numbers are the launcher's ranks in both.
    let weft = ok(weft::init_for("shmem"));
    if weft.world().rank() == 0 {
        print_requested_info(&weft.config().values);
    }
    let heap = ok(SymmetricHeap::new(&weft));
    let sync = ok(SyncEngine::new(&weft, "shmem"));
    let world = weft.world();
    let n = world.size();
    let one_node = (0..n).all(|pe| heap.accessible(pe));
    if !one_node {
        // Counter words of the active-set barriers across nodes (every PE allocates them
        // first, so they are symmetric); fresh heap memory, zeroed to be sure.
        let off = ok(heap.malloc(ACTIVE_SLOTS * 16));
        // SAFETY: the block just allocated in this PE's own heap.
        unsafe { std::ptr::write_bytes(heap.base().add(off), 0, ACTIVE_SLOTS * 16) };
        let _ = ACTIVE_WORDS.set(heap.base() as u64 + off as u64);
    }
    // Every PE allocates it at the same point, so it is symmetric.
    let collect = ok(heap.malloc(64));
    let _ = COLLECT_WORD.set(heap.base() as u64 + collect as u64);
    let shared = ok(world.split_shared(0));
    let shared_pes = shared.members().to_vec();
    let teams = vec![
        Some(Team {
            comm: world.clone(),
            pes: (0..n).collect(),
            config: TeamConfig::default(),
        }),
        Some(Team {
            comm: shared,
            pes: shared_pes.into(),
            config: TeamConfig::default(),
        }),
    ];
    let job = ok(JobSync::new(&weft, "shmem-job"));
    let _ = HEAP.set(heap);
    let _ = SYNC.set(sync);
    let _ = ONE_NODE.set(one_node);
    ok(world.barrier());
    drop(world);
    g.0 = Some(Runtime { weft, teams, job });
}

/// OpenSHMEM 1.5's environment variables `SHMEM_VERSION` and `SHMEM_INFO` (set to anything): the version, and with `SHMEM_INFO` the variables with their values, on stdout.
fn print_requested_info(values: &weft_core::knob::KnobValues) {
    let (version, info) = (values.is_set("SHMEM_VERSION"), values.is_set("SHMEM_INFO"));
    if !version && !info {
        return;
    }
    let mut text = format!(
        "OpenSHMEM 1.5, weft {} (weft-shmem)\n",
        env!("CARGO_PKG_VERSION")
    );
    if info {
        text.push_str("OpenSHMEM environment variables:\n");
        for (knob, value) in values.listing() {
            if knob.name.starts_with("SHMEM_") || knob.name == "WEFT_SYMMETRIC_SIZE" {
                let shown = value.unwrap_or_else(|| match knob.default {
                    "" => "(not set)".to_owned(),
                    d => format!("{d} (default)"),
                });
                text.push_str(&format!(
                    "  {:<22} {shown}\n      {}\n",
                    knob.name, knob.help
                ));
            }
        }
        text.push_str(
            "  SHMEM_DEBUG            not read: weft's errors always name the PE and the call\n",
        );
    }
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// OpenSHMEM 1.5 §9.1.2 `shmem_init_thread`: every thread level is provided (the data path is
/// shared and lock-free; collectives serialise on one lock).
pub(crate) unsafe fn shmem_init_thread(_requested: c_int, provided: *mut c_int) -> c_int {
    shmem_init();
    if !provided.is_null() {
        // SAFETY: a non-null out-pointer from the caller.
        unsafe { *provided = 3 };
    }
    0
}

/// OpenSHMEM 1.5 §9.1.3 `shmem_query_thread`.
pub(crate) unsafe fn shmem_query_thread(provided: *mut c_int) {
    if !provided.is_null() {
        // SAFETY: a non-null out-pointer from the caller.
        unsafe { *provided = 3 };
    }
}

/// OpenSHMEM 1.5 §9.1.4 `shmem_finalize`: a barrier, then weft's finalize.
pub(crate) fn shmem_finalize() {
    if HEAP.get().is_none() {
        return;
    }
    shmem_barrier_all();
    let rt = runtime().0.take();
    if let Some(rt) = rt {
        drop(rt.teams);
        drop(rt.job);
        ok(rt.weft.finalize());
    }
}

/// OpenSHMEM 1.5 §9.1.5 `shmem_my_pe`.
pub(crate) fn shmem_my_pe() -> c_int {
    heap().pe() as c_int
}

/// OpenSHMEM 1.5 §9.1.6 `shmem_n_pes`.
pub(crate) fn shmem_n_pes() -> c_int {
    heap().npes() as c_int
}

/// Deprecated (1.2) `_my_pe`.
pub(crate) fn _my_pe() -> c_int {
    shmem_my_pe()
}

/// Deprecated (1.2) `_num_pes`.
pub(crate) fn _num_pes() -> c_int {
    shmem_n_pes()
}

/// Deprecated (1.2) `my_pe`.
pub(crate) fn my_pe() -> c_int {
    shmem_my_pe()
}

/// Deprecated (1.2) `num_pes`.
pub(crate) fn num_pes() -> c_int {
    shmem_n_pes()
}

/// Deprecated (1.2) `start_pes`.
pub(crate) fn start_pes(_npes: c_int) {
    shmem_init();
}

/// OpenSHMEM 1.5 §9.1.10 `shmem_global_exit`: ends every PE with `status`.
pub(crate) fn shmem_global_exit(status: c_int) {
    let mut g = runtime();
    if let Some(rt) = g.0.take() {
        rt.weft
            .abort(status, &format!("shmem_global_exit({status})"));
    }
    std::process::exit(status)
}

/// OpenSHMEM 1.5 §9.1.8 `shmem_info_get_version`.
pub(crate) unsafe fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    // SAFETY: out-pointers from the caller, checked for null.
    unsafe {
        if !major.is_null() {
            *major = 1;
        }
        if !minor.is_null() {
            *minor = 5;
        }
    }
}

/// OpenSHMEM 1.5 §9.1.9 `shmem_info_get_name` (at most SHMEM_MAX_NAME_LEN = 256 bytes).
pub(crate) unsafe fn shmem_info_get_name(name: *mut c_char) {
    let text = b"weft\0";
    if !name.is_null() {
        // SAFETY: the caller gives SHMEM_MAX_NAME_LEN bytes; we write 5.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr() as *const c_char, name, text.len()) };
    }
}

/// OpenSHMEM 1.5 §9.1.7 `shmem_pe_accessible`: PEs of this node, and other nodes' PEs
/// through their one-sided services.
pub(crate) fn shmem_pe_accessible(pe: c_int) -> c_int {
    (pe >= 0 && heap().reachable(pe as u32)) as c_int
}

/// OpenSHMEM 1.5 §9.1.8 `shmem_addr_accessible`.
pub(crate) fn shmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
    if pe < 0 {
        return 0;
    }
    heap()
        .target(pe as u32, addr as u64, 1, "shmem_addr_accessible")
        .is_ok() as c_int
}

/// OpenSHMEM 1.5 §9.1.10 `shmem_ptr`: the local address of `dest` on `pe` (heap objects and
/// globals of PEs on this node; this PE's own address for its own objects), else NULL.
pub(crate) fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    if pe < 0 {
        return std::ptr::null_mut();
    }
    heap()
        .ptr(pe as u32, dest as u64)
        .map_or(std::ptr::null_mut(), |p| p as *mut c_void)
}

/// OpenSHMEM 1.5 §9.1.11 `shmem_team_ptr`: [`shmem_ptr`] with `pe` numbered in `team`;
/// NULL for an invalid team or a PE outside it.
pub(crate) fn shmem_team_ptr(team: ShmemTeam, dest: *const c_void, pe: c_int) -> *mut c_void {
    match team_of(team).and_then(|t| usize::try_from(pe).ok().and_then(|i| t.pes.get(i).copied())) {
        Some(world) => shmem_ptr(dest, world as c_int),
        None => std::ptr::null_mut(),
    }
}

/// OpenSHMEM 1.5 §10.1 `shmem_pcontrol`: profiling control, a no-op in the library itself
/// (a profiling tool that intercepts it gives it meaning).
pub(crate) fn shmem_pcontrol(_level: c_int) {}

fn heap_addr(offset: usize) -> *mut c_void {
    heap().base().wrapping_add(offset) as *mut c_void
}

fn heap_offset(ptr: *const c_void, call: &str) -> usize {
    heap().offset_of(ptr as u64).unwrap_or_else(|| {
        fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{call}: {ptr:?} on PE {} is not in the symmetric heap",
                heap().pe()
            ),
        ))
    })
}

/// OpenSHMEM 1.5 §9.3.1 `shmem_malloc` (collective; ends with a barrier). A size of 0
/// allocates nothing and returns NULL (after the barrier, as every PE calls it).
pub(crate) fn shmem_malloc(size: usize) -> *mut c_void {
    // SAFETY: no alignment beyond the heap's minimum is asked.
    unsafe { symmetric_alloc(alloc::MIN_ALIGN, size, false, "shmem_malloc") }
}

/// OpenSHMEM 1.5 §9.3.2 `shmem_malloc_with_hints`: `shmem_malloc` whatever the hints say
/// (`SHMEM_MALLOC_ATOMICS_REMOTE`, `SHMEM_MALLOC_SIGNAL_REMOTE`: every heap word already
/// takes remote atomics and signals at full speed); unknown hint bits are an error.
pub(crate) fn shmem_malloc_with_hints(size: usize, hints: std::ffi::c_long) -> *mut c_void {
    const KNOWN: std::ffi::c_long = SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE;
    if hints & !KNOWN != 0 {
        fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "shmem_malloc_with_hints: hints {hints:#x} on PE {} hold bits that are neither SHMEM_MALLOC_ATOMICS_REMOTE ({SHMEM_MALLOC_ATOMICS_REMOTE}) nor SHMEM_MALLOC_SIGNAL_REMOTE ({SHMEM_MALLOC_SIGNAL_REMOTE})",
                heap().pe()
            ),
        ));
    }
    // SAFETY: as in shmem_malloc.
    unsafe { symmetric_alloc(alloc::MIN_ALIGN, size, false, "shmem_malloc_with_hints") }
}

/// The allocation behind `shmem_malloc`, `shmem_calloc` and `shmem_align`: NULL for 0 bytes
/// (every PE still takes part in the barrier every symmetric allocation ends with); `zero`
/// clears the block before that barrier.
unsafe fn symmetric_alloc(align: usize, size: usize, zero: bool, call: &str) -> *mut c_void {
    let p = if size == 0 {
        std::ptr::null_mut()
    } else {
        let off = ok(heap().align(align, size).map_err(|e| e.context(call)));
        heap_addr(off)
    };
    if zero && !p.is_null() {
        // SAFETY: the block [p, p + size) was just allocated in this PE's heap, and no other
        // PE knows of it before the barrier below.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, size) };
    }
    shmem_barrier_all();
    p
}

/// OpenSHMEM 1.5 §9.3.4 `shmem_calloc`: zeroed; NULL when `count` or `size` is 0.
pub(crate) fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    let bytes = bytes_of(count, size, "shmem_calloc");
    // SAFETY: no alignment beyond the minimum.
    unsafe { symmetric_alloc(alloc::MIN_ALIGN, bytes, true, "shmem_calloc") }
}

/// OpenSHMEM 1.5 §9.3.3 `shmem_align`: `alignment` must be a power of two, at most the
/// alignment of the heap's base, which is the same on every PE (the largest power of two
/// dividing `WEFT_SYMMETRIC_SIZE`, up to 1 GiB: 512 MiB by default), so the block is
/// aligned alike on every PE; NULL for 0 bytes.
pub(crate) fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    // SAFETY: the heap checks the alignment.
    unsafe { symmetric_alloc(alignment, size, false, "shmem_align") }
}

/// OpenSHMEM 1.5 §9.3.1 `shmem_free` (collective; starts with a barrier).
pub(crate) fn shmem_free(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    shmem_barrier_all();
    let off = heap_offset(ptr, "shmem_free");
    ok(heap().free(off).map_err(|e| e.context("shmem_free")));
}

/// OpenSHMEM 1.5 §9.3.2 `shmem_realloc`: `shmem_malloc` for a NULL `ptr`; a size of 0
/// frees `ptr` and returns NULL.
pub(crate) fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    if ptr.is_null() {
        return shmem_malloc(size);
    }
    if size == 0 {
        shmem_free(ptr);
        return std::ptr::null_mut();
    }
    shmem_barrier_all();
    let off = heap_offset(ptr, "shmem_realloc");
    let new = ok(heap()
        .realloc(off, size)
        .map_err(|e| e.context("shmem_realloc")));
    shmem_barrier_all();
    heap_addr(new)
}

/// Deprecated (1.2) `shmalloc`.
pub(crate) fn shmalloc(size: usize) -> *mut c_void {
    shmem_malloc(size)
}

/// Deprecated (1.2) `shfree`.
pub(crate) fn shfree(ptr: *mut c_void) {
    shmem_free(ptr)
}

/// Deprecated (1.2) `shrealloc`.
pub(crate) fn shrealloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    shmem_realloc(ptr, size)
}

/// Deprecated (1.2) `shmemalign`.
pub(crate) fn shmemalign(alignment: usize, size: usize) -> *mut c_void {
    shmem_align(alignment, size)
}

/// OpenSHMEM 1.5 §9.11.2 `shmem_quiet`: every thread's default-context puts to other
/// nodes' PEs are acknowledged (same-node puts are complete already).
pub(crate) fn shmem_quiet() {
    ok(heap().try_quiet().map_err(|e| e.context("shmem_quiet")));
}

/// OpenSHMEM 1.5 §9.11.1 `shmem_fence`.
pub(crate) fn shmem_fence() {
    heap().fence();
}

/// OpenSHMEM 1.5 `shmem_ctx_quiet`: completes this context's operations only (its own
/// lanes to other nodes' PEs); nothing for `SHMEM_CTX_INVALID`.
pub(crate) fn shmem_ctx_quiet(ctx: ShmemCtx) {
    let call = "shmem_ctx_quiet";
    if ctx == 0 {
        return;
    }
    let id = ctx_id(ctx, call);
    let r = if id == 0 {
        heap().try_quiet()
    } else {
        heap().quiet_ctx(id)
    };
    ok(r.map_err(|e| e.context(call)));
}

/// OpenSHMEM 1.5 `shmem_ctx_fence`: a context's lane to a PE is one ordered stream, so the
/// release fence of same-node stores is all it takes; nothing for `SHMEM_CTX_INVALID`.
pub(crate) fn shmem_ctx_fence(ctx: ShmemCtx) {
    if ctx == 0 {
        return;
    }
    ctx_id(ctx, "shmem_ctx_fence");
    heap().fence();
}

/// OpenSHMEM 1.5 §9.5.1 `shmem_ctx_create`: a context of `SHMEM_TEAM_WORLD` with its own
/// lanes (connections and send buffers) to other nodes' PEs, so its operations neither wait
/// behind nor complete with the default context's. Same-node stores are direct for every
/// context. Options are hints weft does not need (every context is thread-safe).
pub(crate) unsafe fn shmem_ctx_create(options: std::ffi::c_long, ctx: *mut ShmemCtx) -> c_int {
    // SAFETY: forwarded API contract.
    unsafe { shmem_team_create_ctx(1, options, ctx) }
}

/// OpenSHMEM 1.5 §9.5.2 `shmem_team_create_ctx`: a context whose operations number PEs in
/// `team`. Nonzero (and `SHMEM_CTX_INVALID`) for an invalid team, a null `ctx` or unknown
/// option bits.
pub(crate) unsafe fn shmem_team_create_ctx(
    team: ShmemTeam,
    options: std::ffi::c_long,
    ctx: *mut ShmemCtx,
) -> c_int {
    if ctx.is_null() {
        return 1;
    }
    const KNOWN: std::ffi::c_long = SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE;
    let Some(t) = team_of(team).filter(|_| options & !KNOWN == 0) else {
        // SAFETY: non-null out-pointer from the caller.
        unsafe { *ctx = 0 };
        return 1;
    };
    let c = Context {
        id: heap().ctx_create(),
        team,
        pes: (team != 1).then(|| t.pes.clone()),
    };
    // SAFETY: non-null out-pointer from the caller. The Box is freed by shmem_ctx_destroy.
    unsafe { *ctx = Box::into_raw(Box::new(c)) as ShmemCtx };
    0
}

/// OpenSHMEM 1.5 §9.5.3 `shmem_ctx_destroy`: completes the context's operations first;
/// `SHMEM_CTX_INVALID` is ignored.
pub(crate) fn shmem_ctx_destroy(ctx: ShmemCtx) {
    let call = "shmem_ctx_destroy";
    match ctx {
        0 => {}
        CTX_DEFAULT => fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!("{call}: SHMEM_CTX_DEFAULT cannot be destroyed"),
        )),
        _ => {
            let id = context(ctx, call).id;
            ok(heap().ctx_destroy(id).map_err(|e| e.context(call)));
            // SAFETY: a handle made by shmem_team_create_ctx (Box::into_raw), destroyed once
            // (destroying twice is erroneous in OpenSHMEM).
            drop(unsafe { Box::from_raw(ctx as *mut Context) });
        }
    }
}

/// OpenSHMEM 1.5 §9.5.4 `shmem_ctx_get_team`: the team `ctx` was created from
/// (`SHMEM_TEAM_WORLD` for the default context); nonzero and `SHMEM_TEAM_INVALID` for
/// `SHMEM_CTX_INVALID`.
pub(crate) unsafe fn shmem_ctx_get_team(ctx: ShmemCtx, team: *mut ShmemTeam) -> c_int {
    if team.is_null() {
        return 1;
    }
    let (t, rc) = match ctx {
        0 => (0, 1),
        CTX_DEFAULT => (1, 0),
        c => (context(c, "shmem_ctx_get_team").team, 0),
    };
    // SAFETY: non-null out-pointer from the caller.
    unsafe { *team = t };
    rc
}

/// OpenSHMEM 1.5 §9.9.1 `shmem_barrier_all`: quiet, then every PE arrives. On one node it
/// is the synchronisation engine's counter barrier, otherwise weft's barrier.
pub(crate) fn shmem_barrier_all() {
    ok(heap()
        .quiet_all()
        .map_err(|e| e.context("shmem_barrier_all")));
    shmem_sync_all();
}

/// OpenSHMEM 1.5 §9.9.3 `shmem_sync_all`.
pub(crate) fn shmem_sync_all() {
    if ONE_NODE.get().copied().unwrap_or(false) {
        ok(engine()
            .barrier(TAG_BARRIER_ALL, heap().npes())
            .map_err(|e| e.context("shmem_barrier_all")));
    } else {
        with_team(1, "shmem_barrier_all", |t| t.comm.barrier());
    }
}

/// Deprecated (1.4) active-set `shmem_barrier`.
pub(crate) fn shmem_barrier(
    pe_start: c_int,
    log_stride: c_int,
    pe_size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    let set = active_set(pe_start, log_stride, pe_size, "shmem_barrier");
    active_barrier(&set, "shmem_barrier");
}

/// OpenSHMEM 1.5 §9.9.2 `shmem_team_sync` (and the C11 `shmem_sync` on a team): nonzero
/// for an invalid team.
pub(crate) fn shmem_team_sync(team: ShmemTeam) -> c_int {
    if team_of(team).is_none() {
        return 1;
    }
    with_team(team, "shmem_team_sync", |t| t.comm.barrier());
    0
}

/// Deprecated (1.5) active-set `shmem_sync`: the members of the set meet (no quiet, unlike
/// `shmem_barrier`). shmem.h maps `shmem_sync(team)` to `shmem_team_sync` and the
/// four-argument form here.
pub(crate) fn shmem_sync(
    pe_start: c_int,
    log_stride: c_int,
    pe_size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    let call = "shmem_sync";
    let set = active_set(pe_start, log_stride, pe_size, call);
    active_sync(&set, call);
}

/// Deprecated (1.3) cache management: no-ops on cache-coherent machines (OpenSHMEM 1.5 Annex
/// F).
pub(crate) fn shmem_clear_cache_inv() {}
/// See [`shmem_clear_cache_inv`].
pub(crate) fn shmem_set_cache_inv() {}
/// See [`shmem_clear_cache_inv`].
pub(crate) fn shmem_clear_cache_line_inv(_dest: *mut c_void) {}
/// See [`shmem_clear_cache_inv`].
pub(crate) fn shmem_set_cache_line_inv(_dest: *mut c_void) {}
/// See [`shmem_clear_cache_inv`].
pub(crate) fn shmem_udcflush() {}
/// See [`shmem_clear_cache_inv`].
pub(crate) fn shmem_udcflush_line(_dest: *mut c_void) {}

/// The put-with-signal behind every `put_signal` form (`nelems` in bytes).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn put_signal(
    ctx: ShmemCtx,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
    call: &str,
) {
    let op = match sig_op {
        0 => Amo::Set,
        1 => Amo::Add,
        _ => fatal(Error::new(
            ErrorKind::InvalidOp,
            format!("{call}: signal operation {sig_op} is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD"),
        )),
    };
    let pe = pe_u32(pe, call);
    let src: &[u8] = if nelems == 0 {
        &[]
    } else {
        // SAFETY: the caller promises `source` is readable for nelems bytes (OpenSHMEM API).
        unsafe { std::slice::from_raw_parts(source as *const u8, nelems) }
    };
    ok(heap()
        .put_signal(
            ctx_id(ctx, call),
            pe,
            dest as u64,
            src,
            sig_addr as u64,
            signal,
            op,
        )
        .map_err(|e| e.context(call)));
}

/// OpenSHMEM 1.5 `shmem_signal_fetch`.
pub(crate) unsafe fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
    check_ptr(sig_addr, "shmem_signal_fetch");
    // SAFETY: checked non-null and aligned; the caller's symmetric signal word.
    unsafe { u64::load(sig_addr) }
}

/// OpenSHMEM 1.5 `shmem_signal_wait_until`: returns the satisfying value.
pub(crate) unsafe fn shmem_signal_wait_until(sig_addr: *mut u64, cmp: c_int, value: u64) -> u64 {
    // SAFETY: forwarded API contract.
    unsafe {
        wait_until(
            sig_addr as *const u64,
            cmp,
            value,
            "shmem_signal_wait_until",
        );
        u64::load(sig_addr)
    }
}

/// Deprecated (1.4) `shmem_wait`: waits while `*ivar == cmp_value`.
pub(crate) unsafe fn shmem_wait(ivar: *mut std::ffi::c_long, cmp_value: std::ffi::c_long) {
    // SAFETY: forwarded API contract (`long` is 64 bits on the platforms weft supports).
    unsafe {
        wait_until(
            ivar as *const i64,
            crate::cmp::SHMEM_CMP_NE,
            cmp_value,
            "shmem_wait",
        )
    }
}

/// Deprecated (1.4) untyped `shmem_wait_until` on a `long`.
pub(crate) unsafe fn shmem_wait_until(
    ivar: *mut std::ffi::c_long,
    cmp: c_int,
    value: std::ffi::c_long,
) {
    // SAFETY: forwarded API contract.
    unsafe { wait_until(ivar as *const i64, cmp, value, "shmem_wait_until") }
}

fn lock_tag(lock: *mut std::ffi::c_long, call: &str) -> u64 {
    check_ptr(lock as *const std::ffi::c_long, call);
    heap().symmetric_id(lock as u64).unwrap_or_else(|| {
        fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!("{call}: lock at {lock:?} on PE {} is not symmetric (neither in the symmetric heap nor a global)", heap().pe()),
        ))
    })
}

/// Across nodes, a lock is PE 0's copy of the lock word (0 free, holder's PE + 1), taken and
/// released with compare-and-swap: a CPU atomic for PEs of PE 0's node (on the heap or a
/// shared global), the service's atomic for the others.
fn lock_word(lock: *mut std::ffi::c_long, call: &str) -> Option<u64> {
    if ONE_NODE.get().copied().unwrap_or(true) {
        return None;
    }
    lock_tag(lock, call);
    Some(lock as u64)
}

fn cswap_lock(word: u64, from: u64, to: u64, call: &str) -> u64 {
    ok(heap()
        .atomic(0, 0, word, 8, Amo::CompareSwap, from, to, true)
        .map_err(|e| e.context(call)))
}

/// OpenSHMEM 1.5 §9.10.1 `shmem_set_lock`. On one node: the lock bit of the node
/// synchronisation engine's word tagged by the lock's symmetric identity (so a global `long`
/// works as well as a heap one; the lock variable itself is not written). Across nodes: PE
/// 0's copy of the (heap) lock word, see `lock_word`.
pub(crate) fn shmem_set_lock(lock: *mut std::ffi::c_long) {
    let call = "shmem_set_lock";
    if let Some(word) = lock_word(lock, call) {
        let me = heap().pe() as u64 + 1;
        let mut round = 0;
        while cswap_lock(word, 0, me, call) != 0 {
            backoff(&mut round);
        }
        return;
    }
    let tag = lock_tag(lock, call);
    ok(engine().lock(tag).map_err(|e| e.context(call)));
}

/// OpenSHMEM 1.5 §9.10.3 `shmem_test_lock`: 0 when acquired, 1 when held elsewhere.
pub(crate) fn shmem_test_lock(lock: *mut std::ffi::c_long) -> c_int {
    let call = "shmem_test_lock";
    if let Some(word) = lock_word(lock, call) {
        return (cswap_lock(word, 0, heap().pe() as u64 + 1, call) != 0) as c_int;
    }
    let tag = lock_tag(lock, call);
    (!ok(engine().try_lock(tag).map_err(|e| e.context(call)))) as c_int
}

/// OpenSHMEM 1.5 §9.10.2 `shmem_clear_lock`: quiet (so the critical section's puts are
/// visible), then release.
pub(crate) fn shmem_clear_lock(lock: *mut std::ffi::c_long) {
    let call = "shmem_clear_lock";
    ok(heap().quiet_all().map_err(|e| e.context(call)));
    if let Some(word) = lock_word(lock, call) {
        let me = heap().pe() as u64 + 1;
        let held = cswap_lock(word, me, 0, call);
        if held != me {
            fatal(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{call}: PE {} releases lock {lock:?}, which it does not hold (holder: {})",
                    me - 1,
                    if held == 0 {
                        "none".to_string()
                    } else {
                        format!("PE {}", held - 1)
                    }
                ),
            ));
        }
        return;
    }
    let tag = lock_tag(lock, call);
    ok(engine().unlock(tag).map_err(|e| e.context(call)));
}

/// OpenSHMEM 1.5 §9.4.4 `shmem_team_my_pe`: -1 for an invalid team.
pub(crate) fn shmem_team_my_pe(team: ShmemTeam) -> c_int {
    team_of(team).map_or(-1, |t| t.rank as c_int)
}

/// OpenSHMEM 1.5 §9.4.5 `shmem_team_n_pes`: -1 for an invalid team.
pub(crate) fn shmem_team_n_pes(team: ShmemTeam) -> c_int {
    team_of(team).map_or(-1, |t| t.pes.len() as c_int)
}

/// OpenSHMEM 1.5 §9.4.6 `shmem_team_get_config`: the configuration `team` was created with,
/// for the fields in `config_mask`; nonzero for an invalid team or a null `config`.
pub(crate) unsafe fn shmem_team_get_config(
    team: ShmemTeam,
    config_mask: std::ffi::c_long,
    config: *mut TeamConfig,
) -> c_int {
    let Some(t) = team_of(team).filter(|_| !config.is_null()) else {
        return 1;
    };
    if config_mask & SHMEM_TEAM_NUM_CONTEXTS != 0 {
        // SAFETY: non-null out-pointer from the caller.
        unsafe { (*config).num_contexts = t.config.num_contexts };
    }
    0
}

/// OpenSHMEM 1.5 §9.4.7 `shmem_team_translate_pe`: -1 when a team is invalid or `src_pe` is
/// not a member of both.
pub(crate) fn shmem_team_translate_pe(
    src_team: ShmemTeam,
    src_pe: c_int,
    dest_team: ShmemTeam,
) -> c_int {
    let (Some(src), Some(dest)) = (team_of(src_team), team_of(dest_team)) else {
        return -1;
    };
    usize::try_from(src_pe)
        .ok()
        .and_then(|i| src.pes.get(i))
        .and_then(|w| dest.pes.iter().position(|p| p == w))
        .map_or(-1, |i| i as c_int)
}

/// The configuration a new team gets from a split's `config` and `mask` (defaults for the
/// fields the mask leaves out).
unsafe fn team_config(config: *const TeamConfig, mask: std::ffi::c_long) -> TeamConfig {
    let mut c = TeamConfig::default();
    if mask & SHMEM_TEAM_NUM_CONTEXTS != 0 && !config.is_null() {
        // SAFETY: a non-null config from the caller.
        c.num_contexts = unsafe { (*config).num_contexts };
    }
    c
}

/// Splits `parent` (collective over its members): the PEs whose `place` is `Some((color,
/// key))` form one new team per color, ordered by key, whose world PEs are `members(color)`;
/// returns this PE's new handle (`SHMEM_TEAM_INVALID` when it is in none).
fn split_team(
    parent: ShmemTeam,
    place: Option<(u32, u32)>,
    members: impl Fn(u32) -> Vec<u32>,
    config: TeamConfig,
    call: &str,
) -> ShmemTeam {
    let (color, key) = match place {
        Some((c, k)) => (c as i32, k as i32),
        None => (weft::UNDEFINED, 0),
    };
    let mut g = runtime();
    let Some(rt) = g.0.as_mut() else { return 0 };
    let Some(p) = parent
        .checked_sub(1)
        .and_then(|i| rt.teams.get(i))
        .and_then(|t| t.as_ref())
    else {
        return 0;
    };
    let comm = match p.comm.split(color, key) {
        Ok(c) => c,
        Err(e) => {
            drop(g);
            fatal(e.context(call))
        }
    };
    match (comm, place) {
        (Some(comm), Some((c, _))) => {
            rt.teams.push(Some(Team {
                comm,
                pes: members(c).into(),
                config,
            }));
            rt.teams.len()
        }
        _ => 0,
    }
}

/// OpenSHMEM 1.5 §9.4.8 `shmem_team_split_strided`: collective over `parent`; the members of
/// the triplet get a new handle, the others `SHMEM_TEAM_INVALID`. A triplet that does not fit
/// the parent (or names a PE twice), or an invalid parent, makes no team and returns nonzero
/// (every PE of the parent sees the same triplet, so all return without communicating).
pub(crate) unsafe fn shmem_team_split_strided(
    parent: ShmemTeam,
    start: c_int,
    stride: c_int,
    size: c_int,
    config: *const TeamConfig,
    config_mask: std::ffi::c_long,
    new_team: *mut ShmemTeam,
) -> c_int {
    let call = "shmem_team_split_strided";
    let set = |h: ShmemTeam| {
        if !new_team.is_null() {
            // SAFETY: non-null out-pointer from the caller.
            unsafe { *new_team = h };
        }
    };
    set(0);
    let Some(p) = team_of(parent) else { return 1 };
    let n = p.pes.len() as i64;
    let members: Vec<i64> = (0..size.max(0) as i64)
        .map(|i| start as i64 + i * stride as i64)
        .collect();
    let distinct = members.len() < 2 || stride != 0;
    if size < 1 || !distinct || members.iter().any(|&m| m < 0 || m >= n) {
        return 1;
    }
    let me = p.rank as i64;
    let place = members.iter().position(|&m| m == me).map(|i| (0, i as u32));
    let world: Vec<u32> = members.iter().map(|&m| p.pes[m as usize]).collect();
    // SAFETY: forwarded API contract.
    let config = unsafe { team_config(config, config_mask) };
    set(split_team(parent, place, |_| world.clone(), config, call));
    0
}

/// OpenSHMEM 1.5 §9.4.9 `shmem_team_split_2d`: the parent's PEs laid out on rows of `xrange`
/// (parent PE `p` at `(p % xrange, p / xrange)`); `xaxis_team` is this PE's row (numbered by
/// x), `yaxis_team` its column (numbered by y). Collective over `parent`; nonzero (and both
/// teams `SHMEM_TEAM_INVALID`) for an invalid parent or `xrange` < 1.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn shmem_team_split_2d(
    parent: ShmemTeam,
    xrange: c_int,
    xaxis_config: *const TeamConfig,
    xaxis_mask: std::ffi::c_long,
    xaxis_team: *mut ShmemTeam,
    yaxis_config: *const TeamConfig,
    yaxis_mask: std::ffi::c_long,
    yaxis_team: *mut ShmemTeam,
) -> c_int {
    let call = "shmem_team_split_2d";
    let set = |out: *mut ShmemTeam, h: ShmemTeam| {
        if !out.is_null() {
            // SAFETY: non-null out-pointer from the caller.
            unsafe { *out = h };
        }
    };
    set(xaxis_team, 0);
    set(yaxis_team, 0);
    let Some(p) = team_of(parent) else { return 1 };
    if xrange < 1 {
        return 1;
    }
    let n = p.pes.len() as u32;
    let x = (xrange as u32).min(n.max(1));
    let me = p.rank;
    let pes = p.pes.clone();
    // SAFETY: forwarded API contract.
    let (xc, yc) = unsafe {
        (
            team_config(xaxis_config, xaxis_mask),
            team_config(yaxis_config, yaxis_mask),
        )
    };
    // Rows: color y, numbered by x; columns: color x, numbered by y.
    let row = |y: u32| {
        (y * x..((y + 1) * x).min(n))
            .map(|q| pes[q as usize])
            .collect()
    };
    let col = |c: u32| {
        (c..n)
            .step_by(x as usize)
            .map(|q| pes[q as usize])
            .collect()
    };
    set(
        xaxis_team,
        split_team(parent, Some((me / x, me % x)), row, xc, call),
    );
    set(
        yaxis_team,
        split_team(parent, Some((me % x, me / x)), col, yc, call),
    );
    0
}

/// OpenSHMEM 1.5 §9.4.10 `shmem_team_destroy`: predefined teams and `SHMEM_TEAM_INVALID`
/// are left alone.
pub(crate) fn shmem_team_destroy(team: ShmemTeam) {
    if team <= 2 {
        return;
    }
    let mut g = runtime();
    if let Some(rt) = g.0.as_mut() {
        if let Some(slot) = rt.teams.get_mut(team - 1) {
            *slot = None;
        }
    }
}

/// OpenSHMEM 1.5 §9.9.4 `shmem_broadcastmem`: `source` of team PE `root` into `dest` on every
/// team PE (the root included).
pub(crate) unsafe fn shmem_broadcastmem(
    team: ShmemTeam,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    root: c_int,
) -> c_int {
    with_team(team, "shmem_broadcastmem", |t| {
        if t.comm.rank() as c_int == root && nelems > 0 {
            // SAFETY: source and dest have nelems bytes (API contract); may overlap.
            unsafe { std::ptr::copy(source as *const u8, dest as *mut u8, nelems) };
        }
        if nelems == 0 {
            return Ok(());
        }
        // SAFETY: dest has nelems bytes.
        let buf = unsafe { std::slice::from_raw_parts_mut(dest as *mut u8, nelems) };
        t.comm.bcast(buf, root.max(0) as u32)
    });
    0
}

/// OpenSHMEM 1.5 §9.9.6 `shmem_fcollectmem`: every PE's `nelems` bytes, in team order.
pub(crate) unsafe fn shmem_fcollectmem(
    team: ShmemTeam,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
) -> c_int {
    with_team(team, "shmem_fcollectmem", |t| {
        // SAFETY: source has nelems bytes; copied because it may overlap dest.
        let src = unsafe { std::slice::from_raw_parts(source as *const u8, nelems) }.to_vec();
        // SAFETY: dest has nelems × team size bytes.
        let dst = unsafe {
            std::slice::from_raw_parts_mut(dest as *mut u8, nelems * t.comm.size() as usize)
        };
        t.comm.allgather(&src, dst)
    });
    0
}

/// OpenSHMEM 1.5 §9.9.5 `shmem_collectmem`: like fcollect, each PE with its own length.
pub(crate) unsafe fn shmem_collectmem(
    team: ShmemTeam,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
) -> c_int {
    with_team(team, "shmem_collectmem", |t| {
        let n = t.comm.size() as usize;
        let mut lens = vec![0u64; n];
        t.comm.allgather(&[nelems as u64], &mut lens)?;
        let max = lens.iter().copied().max().unwrap_or(0) as usize;
        let mut mine = vec![0u8; max];
        // SAFETY: source has nelems bytes.
        mine[..nelems]
            .copy_from_slice(unsafe { std::slice::from_raw_parts(source as *const u8, nelems) });
        let mut all = vec![0u8; max * n];
        t.comm.allgather(&mine, &mut all)?;
        let mut at = 0;
        for (i, &l) in lens.iter().enumerate() {
            // SAFETY: dest holds the sum of all lengths (API contract).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    all[i * max..].as_ptr(),
                    (dest as *mut u8).add(at),
                    l as usize,
                )
            };
            at += l as usize;
        }
        Ok(())
    });
    0
}

/// OpenSHMEM 1.5 §9.9.7 `shmem_alltoallmem`.
pub(crate) unsafe fn shmem_alltoallmem(
    team: ShmemTeam,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
) -> c_int {
    with_team(team, "shmem_alltoallmem", |t| {
        let total = nelems * t.comm.size() as usize;
        // SAFETY: source and dest have nelems × team size bytes.
        let src = unsafe { std::slice::from_raw_parts(source as *const u8, total) }.to_vec();
        // SAFETY: as above.
        let dst = unsafe { std::slice::from_raw_parts_mut(dest as *mut u8, total) };
        t.comm.alltoall(&src, dst)
    });
    0
}

#[allow(clippy::too_many_arguments)]
unsafe fn active_broadcast(
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    root: c_int,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    call: &str,
) {
    let set = active_set(start, log_stride, size, call);
    let root_pe = *set.get(root.max(0) as usize).unwrap_or_else(|| {
        fatal(Error::new(
            ErrorKind::InvalidRoot,
            format!("{call}: PE_root {root} outside an active set of {size}"),
        ))
    });
    active_barrier(&set, call);
    if heap().pe() != root_pe && bytes > 0 {
        // SAFETY: dest has `bytes` bytes (API contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(dest, bytes) };
        ok(heap()
            .get(root_pe, source as u64, dst)
            .map_err(|e| e.context(call)));
    }
    active_barrier(&set, call);
}

unsafe fn active_fcollect(
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    call: &str,
) {
    let set = active_set(start, log_stride, size, call);
    active_barrier(&set, call);
    for (i, &pe) in set.iter().enumerate() {
        // SAFETY: dest has bytes × set size bytes (API contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(dest.add(i * bytes), bytes) };
        ok(heap()
            .get(pe, source as u64, dst)
            .map_err(|e| e.context(call)));
    }
    active_barrier(&set, call);
}

#[allow(clippy::too_many_arguments)]
unsafe fn active_alltoall(
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    call: &str,
) {
    let set = active_set(start, log_stride, size, call);
    let Some(index) = set.iter().position(|&p| p == heap().pe()) else {
        fatal(Error::new(
            ErrorKind::InvalidRank,
            format!("{call}: PE {} is not in the active set", heap().pe()),
        ))
    };
    active_barrier(&set, call);
    for (i, &pe) in set.iter().enumerate() {
        // SAFETY: dest has bytes × set size bytes (API contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(dest.add(i * bytes), bytes) };
        let src = source.wrapping_add(index * bytes);
        ok(heap().get(pe, src as u64, dst).map_err(|e| e.context(call)));
    }
    active_barrier(&set, call);
}

/// Variable-length active-set collect: each member publishes its byte count in its
/// [`COLLECT_WORD`], then every member reads the counts and the blocks of all members in set
/// order (one get per member), and a last barrier keeps sources and counts alive until all
/// have read them.
unsafe fn active_collect(
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    call: &str,
) {
    let set = active_set(start, log_stride, size, call);
    let word = *COLLECT_WORD.get().unwrap_or_else(|| {
        fatal(Error::new(
            ErrorKind::InvalidArgument,
            format!("{call} before shmem_init"),
        ))
    });
    // SAFETY: our own heap word, 8-byte aligned (allocated at init); others read it only
    // after the barrier below.
    unsafe { std::sync::atomic::AtomicU64::from_ptr(word as *mut u64).store(bytes as u64, SeqCst) };
    active_barrier(&set, call);
    let mut at = 0usize;
    for &pe in &set {
        let mut len = [0u8; 8];
        ok(heap().get(pe, word, &mut len).map_err(|e| e.context(call)));
        let len = u64::from_ne_bytes(len) as usize;
        if len > 0 {
            // SAFETY: dest holds the sum of every member's nelems (API contract).
            let dst = unsafe { std::slice::from_raw_parts_mut(dest.add(at), len) };
            ok(heap()
                .get(pe, source as u64, dst)
                .map_err(|e| e.context(call)));
        }
        at += len;
    }
    active_barrier(&set, call);
}

/// Deprecated (1.4) `shmem_collect32`: every member's `nelems` 4-byte elements (each its
/// own count), concatenated in active-set order.
pub(crate) unsafe fn shmem_collect32(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    let call = "shmem_collect32";
    // SAFETY: forwarded API contract.
    unsafe {
        active_collect(
            dest as *mut u8,
            source as *const u8,
            bytes_of(nelems, 4, call),
            start,
            log_stride,
            size,
            call,
        )
    }
}

/// Deprecated (1.4) `shmem_collect64`.
pub(crate) unsafe fn shmem_collect64(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    let call = "shmem_collect64";
    // SAFETY: forwarded API contract.
    unsafe {
        active_collect(
            dest as *mut u8,
            source as *const u8,
            bytes_of(nelems, 8, call),
            start,
            log_stride,
            size,
            call,
        )
    }
}

/// Strided active-set alltoall: from each member `pe` this PE (set index `me`) reads the
/// span holding `pe`'s elements `(me * nelems + k) * sst` in one get, then places element `k`
/// at `dest[(i * nelems + k) * dst]` (`i` = the member's set index).
#[allow(clippy::too_many_arguments)]
unsafe fn active_alltoalls(
    dest: *mut u8,
    source: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    elem: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    call: &str,
) {
    let set = active_set(start, log_stride, size, call);
    check_strides(dst, sst, set.len().saturating_mul(nelems), elem, call);
    let Some(me) = set.iter().position(|&p| p == heap().pe()) else {
        fatal(Error::new(
            ErrorKind::InvalidRank,
            format!("{call}: PE {} is not in the active set", heap().pe()),
        ))
    };
    let (dst, sst) = (dst as usize, sst as usize);
    active_barrier(&set, call);
    if nelems > 0 {
        let span = bytes_of((nelems - 1) * sst + 1, elem, call);
        let mut buf = vec![0u8; span];
        for (i, &pe) in set.iter().enumerate() {
            let from = source.wrapping_add(me * nelems * sst * elem);
            ok(heap()
                .get(pe, from as u64, &mut buf)
                .map_err(|e| e.context(call)));
            for k in 0..nelems {
                // SAFETY: dest holds (set size * nelems - 1) * dst + 1 elements (API
                // contract); buf holds element k at k * sst.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        buf.as_ptr().add(k * sst * elem),
                        dest.add((i * nelems + k) * dst * elem),
                        elem,
                    )
                };
            }
        }
    }
    active_barrier(&set, call);
}

/// Deprecated (1.4) `shmem_alltoalls32`: [`shmem_alltoall32`] with element strides `dst`
/// (in dest) and `sst` (in source).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn shmem_alltoalls32(
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    // SAFETY: forwarded API contract.
    unsafe {
        active_alltoalls(
            dest as *mut u8,
            source as *const u8,
            dst,
            sst,
            nelems,
            4,
            start,
            log_stride,
            size,
            "shmem_alltoalls32",
        )
    }
}

/// Deprecated (1.4) `shmem_alltoalls64`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn shmem_alltoalls64(
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    // SAFETY: forwarded API contract.
    unsafe {
        active_alltoalls(
            dest as *mut u8,
            source as *const u8,
            dst,
            sst,
            nelems,
            8,
            start,
            log_stride,
            size,
            "shmem_alltoalls64",
        )
    }
}

/// OpenSHMEM 1.5 §9.9.8 `shmem_alltoallsmem`: the strided team alltoall of bytes.
pub(crate) unsafe fn shmem_alltoallsmem(
    team: ShmemTeam,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
) -> c_int {
    // SAFETY: forwarded API contract.
    unsafe {
        alltoalls_elems(
            team,
            dest as *mut u8,
            source as *const u8,
            dst,
            sst,
            nelems,
            1,
            "shmem_alltoallsmem",
        )
    }
}

/// Deprecated (1.4) `shmem_alltoall32`: block j of each member's source goes to member j.
pub(crate) unsafe fn shmem_alltoall32(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    // SAFETY: forwarded API contract.
    unsafe {
        active_alltoall(
            dest as *mut u8,
            source as *const u8,
            nelems * 4,
            start,
            log_stride,
            size,
            "shmem_alltoall32",
        )
    }
}

/// Deprecated (1.4) `shmem_alltoall64`.
pub(crate) unsafe fn shmem_alltoall64(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    // SAFETY: forwarded API contract.
    unsafe {
        active_alltoall(
            dest as *mut u8,
            source as *const u8,
            nelems * 8,
            start,
            log_stride,
            size,
            "shmem_alltoall64",
        )
    }
}

/// Deprecated (1.4) `shmem_broadcast32` (the root's dest is left alone, as 1.4 says).
pub(crate) unsafe fn shmem_broadcast32(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    root: c_int,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    // SAFETY: forwarded API contract.
    unsafe {
        active_broadcast(
            dest as *mut u8,
            source as *const u8,
            nelems * 4,
            root,
            start,
            log_stride,
            size,
            "shmem_broadcast32",
        )
    }
}

/// Deprecated (1.4) `shmem_broadcast64`.
pub(crate) unsafe fn shmem_broadcast64(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    root: c_int,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    // SAFETY: forwarded API contract.
    unsafe {
        active_broadcast(
            dest as *mut u8,
            source as *const u8,
            nelems * 8,
            root,
            start,
            log_stride,
            size,
            "shmem_broadcast64",
        )
    }
}

/// Deprecated (1.4) `shmem_fcollect32`.
pub(crate) unsafe fn shmem_fcollect32(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    // SAFETY: forwarded API contract.
    unsafe {
        active_fcollect(
            dest as *mut u8,
            source as *const u8,
            nelems * 4,
            start,
            log_stride,
            size,
            "shmem_fcollect32",
        )
    }
}

/// Deprecated (1.4) `shmem_fcollect64`.
pub(crate) unsafe fn shmem_fcollect64(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    _psync: *mut std::ffi::c_long,
) {
    // SAFETY: forwarded API contract.
    unsafe {
        active_fcollect(
            dest as *mut u8,
            source as *const u8,
            nelems * 8,
            start,
            log_stride,
            size,
            "shmem_fcollect64",
        )
    }
}

fn sync_op(op: c_int, call: &str) -> SyncOp {
    match op {
        0 => SyncOp::Sum,
        1 => SyncOp::Prod,
        2 => SyncOp::Min,
        3 => SyncOp::Max,
        4 => SyncOp::And,
        5 => SyncOp::Or,
        6 => SyncOp::Xor,
        _ => fatal(Error::new(
            ErrorKind::InvalidOp,
            format!("{call}: operation {op} is not one of WEFT_SYNC_SUM..WEFT_SYNC_XOR (0..=6)"),
        )),
    }
}

/// weft/sync.h `weft_sync_put`: store `value` at tagged word `addr`, full for `readers` gets.
#[no_mangle]
pub extern "C" fn weft_sync_put(addr: u64, value: i64, readers: u32) {
    ok(engine()
        .put(addr, value, readers)
        .map_err(|e| e.context("weft_sync_put")));
}

/// weft/sync.h `weft_sync_get`: wait until full, take the value.
#[no_mangle]
pub extern "C" fn weft_sync_get(addr: u64) -> i64 {
    ok(engine().get(addr).map_err(|e| e.context("weft_sync_get")))
}

/// weft/sync.h `weft_sync_lock`.
#[no_mangle]
pub extern "C" fn weft_sync_lock(addr: u64) {
    ok(engine().lock(addr).map_err(|e| e.context("weft_sync_lock")));
}

/// weft/sync.h `weft_sync_unlock`.
#[no_mangle]
pub extern "C" fn weft_sync_unlock(addr: u64) {
    ok(engine()
        .unlock(addr)
        .map_err(|e| e.context("weft_sync_unlock")));
}

/// weft/sync.h `weft_sync_barrier`: `n` processes of this node meet at `addr`.
#[no_mangle]
pub extern "C" fn weft_sync_barrier(addr: u64, n: u32) {
    ok(engine()
        .barrier(addr, n)
        .map_err(|e| e.context("weft_sync_barrier")));
}

/// weft/sync.h `weft_sync_reduce_long`.
#[no_mangle]
pub extern "C" fn weft_sync_reduce_long(addr: u64, value: i64, op: c_int, n: u32) -> i64 {
    let op = sync_op(op, "weft_sync_reduce_long");
    ok(engine()
        .reduce(addr, value, op, n)
        .map_err(|e| e.context("weft_sync_reduce_long")))
}

/// weft/sync.h `weft_sync_reduce_double`.
#[no_mangle]
pub extern "C" fn weft_sync_reduce_double(addr: u64, value: f64, op: c_int, n: u32) -> f64 {
    let op = sync_op(op, "weft_sync_reduce_double");
    ok(engine()
        .reduce(addr, value, op, n)
        .map_err(|e| e.context("weft_sync_reduce_double")))
}

/// weft/sync.h `weft_sync_burst_reduce_double`: `dst[i]` = op over the `n` processes' `src[i]`.
#[no_mangle]
pub unsafe extern "C" fn weft_sync_burst_reduce_double(
    addr: u64,
    src: *const f64,
    dst: *mut f64,
    len: usize,
    op: c_int,
    n: u32,
) {
    let op = sync_op(op, "weft_sync_burst_reduce_double");
    if len == 0 {
        return;
    }
    // SAFETY: src and dst have len elements (API contract); src copied in case they overlap.
    let s = unsafe { std::slice::from_raw_parts(src, len) }.to_vec();
    // SAFETY: as above.
    let d = unsafe { std::slice::from_raw_parts_mut(dst, len) };
    ok(engine()
        .burst_reduce(addr, &s, d, op, n)
        .map_err(|e| e.context("weft_sync_burst_reduce_double")));
}

/// weft/sync.h `weft_sync_burst_reduce_long`.
#[no_mangle]
pub unsafe extern "C" fn weft_sync_burst_reduce_long(
    addr: u64,
    src: *const i64,
    dst: *mut i64,
    len: usize,
    op: c_int,
    n: u32,
) {
    let op = sync_op(op, "weft_sync_burst_reduce_long");
    if len == 0 {
        return;
    }
    // SAFETY: as in the double form.
    let s = unsafe { std::slice::from_raw_parts(src, len) }.to_vec();
    // SAFETY: as above.
    let d = unsafe { std::slice::from_raw_parts_mut(dst, len) };
    ok(engine()
        .burst_reduce(addr, &s, d, op, n)
        .map_err(|e| e.context("weft_sync_burst_reduce_long")));
}

/// weft/sync.h `weft_sync_node_size`: processes of this node (the `n` of a node-wide or
/// job-wide call in which all of them take part).
#[no_mangle]
pub extern "C" fn weft_sync_node_size() -> u32 {
    with_job("weft_sync_node_size", |j| Ok(j.local_size()))
}

/// weft/sync.h `weft_sync_nodes`: nodes the job spans.
#[no_mangle]
pub extern "C" fn weft_sync_nodes() -> u32 {
    with_job("weft_sync_nodes", |j| Ok(j.nodes()))
}

/// weft/sync.h `weft_sync_job_barrier`: returns once `n` processes of every node (`n`
/// counted on the caller's node) called it on `addr`.
#[no_mangle]
pub extern "C" fn weft_sync_job_barrier(addr: u64, n: u32) {
    with_job("weft_sync_job_barrier", |j| j.barrier(addr, n));
}

/// weft/sync.h `weft_sync_job_reduce_long`: one value from each participant of every node.
#[no_mangle]
pub extern "C" fn weft_sync_job_reduce_long(addr: u64, value: i64, op: c_int, n: u32) -> i64 {
    let call = "weft_sync_job_reduce_long";
    let op = sync_op(op, call);
    with_job(call, |j| j.reduce(addr, value, op, n))
}

/// weft/sync.h `weft_sync_job_reduce_double`.
#[no_mangle]
pub extern "C" fn weft_sync_job_reduce_double(addr: u64, value: f64, op: c_int, n: u32) -> f64 {
    let call = "weft_sync_job_reduce_double";
    let op = sync_op(op, call);
    with_job(call, |j| j.reduce(addr, value, op, n))
}

/// weft/sync.h `weft_sync_job_burst_reduce_long`: `dst[i]` = op over every participant's
/// `src[i]`, across every node.
#[no_mangle]
pub unsafe extern "C" fn weft_sync_job_burst_reduce_long(
    addr: u64,
    src: *const i64,
    dst: *mut i64,
    len: usize,
    op: c_int,
    n: u32,
) {
    // SAFETY: forwarded API contract.
    unsafe {
        job_burst(
            addr,
            src,
            dst,
            len,
            op,
            n,
            "weft_sync_job_burst_reduce_long",
        )
    }
}

/// weft/sync.h `weft_sync_job_burst_reduce_double`.
#[no_mangle]
pub unsafe extern "C" fn weft_sync_job_burst_reduce_double(
    addr: u64,
    src: *const f64,
    dst: *mut f64,
    len: usize,
    op: c_int,
    n: u32,
) {
    // SAFETY: forwarded API contract.
    unsafe {
        job_burst(
            addr,
            src,
            dst,
            len,
            op,
            n,
            "weft_sync_job_burst_reduce_double",
        )
    }
}

unsafe fn job_burst<T: weft::sync::SyncValue>(
    addr: u64,
    src: *const T,
    dst: *mut T,
    len: usize,
    op: c_int,
    n: u32,
    call: &str,
) {
    let op = sync_op(op, call);
    if len == 0 {
        return;
    }
    check_ptr(src, call);
    check_ptr(dst as *const T, call);
    // SAFETY: src and dst have len elements (API contract); src copied in case they overlap.
    let s = unsafe { std::slice::from_raw_parts(src, len) }.to_vec();
    // SAFETY: as above.
    let d = unsafe { std::slice::from_raw_parts_mut(dst, len) };
    with_job(call, |j| j.burst_reduce(addr, &s, d, op, n));
}
