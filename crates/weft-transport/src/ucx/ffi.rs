//! The part of UCX's `ucp` API weft uses, loaded at run time with `dlopen` (so a binary built
//! with the `ucx` feature runs, without the UCX lane, where libucp is absent).
//!
//! The structures are declared with the layout of UCX 1.13's `ucp.h` (the build checks it
//! against the installed header: `build.rs`); UCX keeps that layout in later 1.x releases
//! (fields are only ever added at the end, selected by `field_mask`). Fields weft does not
//! set stay zero and out of the mask.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

pub type Status = c_int;
pub type Context = *mut c_void;
pub type Worker = *mut c_void;
pub type Ep = *mut c_void;
pub type Config = *mut c_void;
pub type Address = c_void;
pub type MemH = *mut c_void;
pub type RKey = *mut c_void;
/// `ucs_status_ptr_t`: NULL (done), a request, or an error status cast to a pointer.
pub type StatusPtr = *mut c_void;

pub const UCS_OK: Status = 0;
pub const UCS_INPROGRESS: Status = 1;
pub const UCS_ERR_NO_MESSAGE: Status = -1;
pub const UCS_ERR_MESSAGE_TRUNCATED: Status = -9;
pub const UCS_ERR_CANCELED: Status = -16;
pub const UCS_ERR_CONNECTION_RESET: Status = -25;
pub const UCS_ERR_FIRST_LINK_FAILURE: Status = -40;
pub const UCS_ERR_LAST_ENDPOINT_FAILURE: Status = -89;
const UCS_ERR_LAST: isize = -100;

/// The API version weft is written against (`UCP_API_MAJOR`, `UCP_API_MINOR` of 1.13).
pub const API_MAJOR: c_uint = 1;
pub const API_MINOR: c_uint = 13;

pub const UCP_PARAM_FIELD_FEATURES: u64 = 1 << 0;
pub const UCP_FEATURE_TAG: u64 = 1 << 0;
pub const UCP_FEATURE_RMA: u64 = 1 << 1;
pub const UCP_FEATURE_AMO32: u64 = 1 << 2;
pub const UCP_FEATURE_AMO64: u64 = 1 << 3;
pub const UCP_FEATURE_AM: u64 = 1 << 6;

pub const UCP_WORKER_PARAM_FIELD_THREAD_MODE: u64 = 1 << 0;
pub const UCS_THREAD_MODE_SINGLE: c_int = 0;

pub const UCP_EP_PARAM_FIELD_REMOTE_ADDRESS: u64 = 1 << 0;
pub const UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE: u64 = 1 << 1;
pub const UCP_EP_PARAM_FIELD_ERR_HANDLER: u64 = 1 << 2;
pub const UCP_ERR_HANDLING_MODE_PEER: c_int = 1;
pub const UCP_EP_CLOSE_FLAG_FORCE: u32 = 1 << 0;

pub const UCP_AM_HANDLER_PARAM_FIELD_ID: u64 = 1 << 0;
pub const UCP_AM_HANDLER_PARAM_FIELD_FLAGS: u64 = 1 << 1;
pub const UCP_AM_HANDLER_PARAM_FIELD_CB: u64 = 1 << 2;
pub const UCP_AM_HANDLER_PARAM_FIELD_ARG: u64 = 1 << 3;
pub const UCP_AM_FLAG_WHOLE_MSG: u32 = 1 << 0;
pub const UCP_AM_SEND_FLAG_EAGER: u32 = 1 << 1;
pub const UCP_AM_SEND_FLAG_RNDV: u32 = 1 << 2;
pub const UCP_AM_RECV_ATTR_FLAG_RNDV: u64 = 1 << 17;

pub const UCP_OP_ATTR_FIELD_CALLBACK: u32 = 1 << 1;
pub const UCP_OP_ATTR_FIELD_USER_DATA: u32 = 1 << 2;
pub const UCP_OP_ATTR_FIELD_DATATYPE: u32 = 1 << 3;
pub const UCP_OP_ATTR_FIELD_FLAGS: u32 = 1 << 4;
pub const UCP_OP_ATTR_FIELD_REPLY_BUFFER: u32 = 1 << 5;
pub const UCP_OP_ATTR_FLAG_NO_IMM_CMPL: u32 = 1 << 16;
/// `ucp_dt_make_contig(1)`: contiguous bytes.
pub const DATATYPE_BYTES: u64 = 8;

pub const UCP_MEM_MAP_PARAM_FIELD_ADDRESS: u64 = 1 << 0;
pub const UCP_MEM_MAP_PARAM_FIELD_LENGTH: u64 = 1 << 1;

pub const UCP_ATOMIC_OP_ADD: c_int = 0;
pub const UCP_ATOMIC_OP_SWAP: c_int = 1;
pub const UCP_ATOMIC_OP_CSWAP: c_int = 2;
pub const UCP_ATOMIC_OP_AND: c_int = 3;
pub const UCP_ATOMIC_OP_OR: c_int = 4;
pub const UCP_ATOMIC_OP_XOR: c_int = 5;

/// `ucp_params_t` (80 bytes).
#[repr(C)]
pub struct Params {
    pub field_mask: u64,
    pub features: u64,
    pub rest: [u64; 8],
}

/// `ucp_worker_params_t` (200 bytes).
#[repr(C)]
pub struct WorkerParams {
    pub field_mask: u64,
    pub thread_mode: c_int,
    pub rest: [u32; 47],
}

pub type ErrCallback = unsafe extern "C" fn(arg: *mut c_void, ep: Ep, status: Status);

/// `ucp_ep_params_t` (104 bytes).
#[repr(C)]
pub struct EpParams {
    pub field_mask: u64,
    pub address: *const Address,
    pub err_mode: c_int,
    pub pad0: u32,
    pub err_cb: Option<ErrCallback>,
    pub err_arg: *mut c_void,
    pub user_data: *mut c_void,
    pub flags: u32,
    pub pad1: u32,
    pub rest: [u64; 6],
}

pub type SendCallback =
    unsafe extern "C" fn(request: *mut c_void, status: Status, user: *mut c_void);
pub type RecvDataCallback =
    unsafe extern "C" fn(request: *mut c_void, status: Status, length: usize, user: *mut c_void);

/// `ucp_request_param_t` (72 bytes); `cb` is the union of the callback kinds.
/// `ucp_tag_recv_info_t`: what a tag receive got.
#[repr(C)]
pub struct TagRecvInfo {
    pub sender_tag: u64,
    pub length: usize,
}

pub type TagRecvCallback = unsafe extern "C" fn(
    request: *mut c_void,
    status: Status,
    info: *const TagRecvInfo,
    user: *mut c_void,
);

#[repr(C)]
pub struct RequestParam {
    pub op_attr_mask: u32,
    pub flags: u32,
    pub request: *mut c_void,
    pub cb: *const c_void,
    pub datatype: u64,
    pub user_data: *mut c_void,
    pub reply_buffer: *mut c_void,
    pub memory_type: c_int,
    pub pad0: u32,
    pub recv_info: *mut c_void,
    pub memh: *mut c_void,
}

impl RequestParam {
    /// A parameter block with a completion callback and its argument.
    pub fn with_callback(cb: *const c_void, user_data: *mut c_void) -> RequestParam {
        RequestParam {
            op_attr_mask: UCP_OP_ATTR_FIELD_CALLBACK
                | UCP_OP_ATTR_FIELD_USER_DATA
                | UCP_OP_ATTR_FIELD_DATATYPE,
            flags: 0,
            request: std::ptr::null_mut(),
            cb,
            datatype: DATATYPE_BYTES,
            user_data,
            reply_buffer: std::ptr::null_mut(),
            memory_type: 0,
            pad0: 0,
            recv_info: std::ptr::null_mut(),
            memh: std::ptr::null_mut(),
        }
    }
}

/// `ucp_am_recv_param_t` (16 bytes).
#[repr(C)]
pub struct AmRecvParam {
    pub recv_attr: u64,
    pub reply_ep: Ep,
}

pub type AmRecvCallback = unsafe extern "C" fn(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const AmRecvParam,
) -> Status;

/// `ucp_am_handler_param_t` (32 bytes).
#[repr(C)]
pub struct AmHandlerParam {
    pub field_mask: u64,
    pub id: c_uint,
    pub flags: u32,
    pub cb: Option<AmRecvCallback>,
    pub arg: *mut c_void,
}

/// `ucp_mem_map_params_t` (40 bytes).
#[repr(C)]
pub struct MemMapParams {
    pub field_mask: u64,
    pub address: *mut c_void,
    pub length: usize,
    pub flags: u32,
    pub prot: u32,
    pub memory_type: c_int,
    pub pad0: u32,
}

const _: () = assert!(std::mem::size_of::<Params>() == 80);
const _: () = assert!(std::mem::size_of::<WorkerParams>() == 200);
const _: () = assert!(std::mem::size_of::<EpParams>() == 104);
const _: () = assert!(std::mem::size_of::<RequestParam>() == 72);
const _: () = assert!(std::mem::size_of::<AmRecvParam>() == 16);
const _: () = assert!(std::mem::size_of::<TagRecvInfo>() == 16);
const _: () = assert!(std::mem::size_of::<AmHandlerParam>() == 32);
const _: () = assert!(std::mem::size_of::<MemMapParams>() == 40);

/// `UCS_PTR_IS_ERR`.
pub fn ptr_is_err(p: StatusPtr) -> bool {
    (p as usize) >= (UCS_ERR_LAST as usize)
}

/// `UCS_PTR_STATUS` of a pointer that is an error.
pub fn ptr_status(p: StatusPtr) -> Status {
    p as isize as Status
}

/// True for a status that means the peer (or the path to it) is gone.
pub fn is_peer_failure(s: Status) -> bool {
    s == UCS_ERR_CONNECTION_RESET
        || (UCS_ERR_LAST_ENDPOINT_FAILURE..=UCS_ERR_FIRST_LINK_FAILURE).contains(&s)
        || s == -6 // UCS_ERR_UNREACHABLE
        || s == -24 // UCS_ERR_NOT_CONNECTED
        || s == -20 // UCS_ERR_TIMED_OUT
}

macro_rules! ucp_api {
    ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The loaded library: one function pointer per `ucp`/`ucs` call weft makes.
        #[allow(non_snake_case)]
        pub struct Ucp {
            _lib: libloading::Library,
            /// The library's version (major, minor, release).
            pub version: (u32, u32, u32),
            $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl Ucp {
            fn resolve(lib: libloading::Library) -> Result<Ucp, String> {
                $(
                    // SAFETY: the symbol is a function of this signature in UCX >= 1.13's
                    // libucp (or the libucs it links), checked against ucp.h by build.rs.
                    let $name = unsafe {
                        *lib.get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                            concat!(stringify!($name), "\0").as_bytes(),
                        )
                        .map_err(|e| format!("{}: {e}", stringify!($name)))?
                    };
                )*
                Ok(Ucp { _lib: lib, version: (0, 0, 0), $($name,)* })
            }
        }
    };
}

ucp_api! {
    ucp_get_version: fn(*mut c_uint, *mut c_uint, *mut c_uint);
    ucp_config_read: fn(*const c_char, *const c_char, *mut Config) -> Status;
    ucp_config_modify: fn(Config, *const c_char, *const c_char) -> Status;
    ucp_config_release: fn(Config);
    ucp_init_version: fn(c_uint, c_uint, *const Params, Config, *mut Context) -> Status;
    ucp_cleanup: fn(Context);
    ucp_worker_create: fn(Context, *const WorkerParams, *mut Worker) -> Status;
    ucp_worker_destroy: fn(Worker);
    ucp_worker_get_address: fn(Worker, *mut *mut Address, *mut usize) -> Status;
    ucp_worker_release_address: fn(Worker, *mut Address);
    ucp_worker_progress: fn(Worker) -> c_uint;
    ucp_worker_set_am_recv_handler: fn(Worker, *const AmHandlerParam) -> Status;
    ucp_ep_create: fn(Worker, *const EpParams, *mut Ep) -> Status;
    ucp_ep_close_nbx: fn(Ep, *const RequestParam) -> StatusPtr;
    ucp_am_send_nbx: fn(Ep, c_uint, *const c_void, usize, *const c_void, usize, *const RequestParam) -> StatusPtr;
    ucp_am_recv_data_nbx: fn(Worker, *mut c_void, *mut c_void, usize, *const RequestParam) -> StatusPtr;
    ucp_am_data_release: fn(Worker, *mut c_void);
    ucp_tag_send_sync_nbx: fn(Ep, *const c_void, usize, u64, *const RequestParam) -> StatusPtr;
    ucp_tag_recv_nbx: fn(Worker, *mut c_void, usize, u64, u64, *const RequestParam) -> StatusPtr;
    ucp_request_check_status: fn(*mut c_void) -> Status;
    ucp_request_cancel: fn(Worker, *mut c_void);
    ucp_request_free: fn(*mut c_void);
    ucp_mem_map: fn(Context, *const MemMapParams, *mut MemH) -> Status;
    ucp_mem_unmap: fn(Context, MemH) -> Status;
    ucp_rkey_pack: fn(Context, MemH, *mut *mut c_void, *mut usize) -> Status;
    ucp_rkey_buffer_release: fn(*mut c_void);
    ucp_ep_rkey_unpack: fn(Ep, *const c_void, *mut RKey) -> Status;
    ucp_rkey_destroy: fn(RKey);
    ucp_put_nbx: fn(Ep, *const c_void, usize, u64, RKey, *const RequestParam) -> StatusPtr;
    ucp_get_nbx: fn(Ep, *mut c_void, usize, u64, RKey, *const RequestParam) -> StatusPtr;
    ucp_atomic_op_nbx: fn(Ep, c_int, *const c_void, usize, u64, RKey, *const RequestParam) -> StatusPtr;
    ucp_ep_flush_nbx: fn(Ep, *const RequestParam) -> StatusPtr;
    ucs_status_string: fn(Status) -> *const c_char;
}

impl Ucp {
    /// Loads `path` (a file name the dynamic loader searches for, or a path) and resolves
    /// every function; an error says what was missing.
    pub fn load(path: &str) -> Result<Ucp, String> {
        if !dynamically_linked() {
            return Err(format!(
                "this program is linked statically (mpicc -static), so it cannot load {path} \
                 at run time (a static executable's dlopen would bring in a second C library); \
                 link it dynamically to use the UCX lane"
            ));
        }
        // SAFETY: loading libucp runs its constructors (UCX's global init), which is what
        // linking it would do too.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
        let mut ucp = Ucp::resolve(lib)?;
        let (mut major, mut minor, mut release) = (0, 0, 0);
        // SAFETY: three writable unsigned ints.
        unsafe { (ucp.ucp_get_version)(&mut major, &mut minor, &mut release) };
        ucp.version = (major, minor, release);
        if (major, minor) < (API_MAJOR, API_MINOR) {
            return Err(format!(
                "{path} is UCX {major}.{minor}.{release}; weft needs UCX {API_MAJOR}.{API_MINOR} or later"
            ));
        }
        Ok(ucp)
    }

    /// UCX's name of `status` and the status's code.
    pub fn status_text(&self, status: Status) -> String {
        // SAFETY: ucs_status_string returns a static NUL-terminated string for any value.
        let s = unsafe { CStr::from_ptr((self.ucs_status_string)(status)) };
        format!("{} (UCX status {status})", s.to_string_lossy())
    }
}

#[cfg(target_pointer_width = "64")]
type Phdr = libc::Elf64_Phdr;
#[cfg(target_pointer_width = "32")]
type Phdr = libc::Elf32_Phdr;

/// Whether the running program has a dynamic loader (its program headers name one,
/// `PT_INTERP`): a statically linked executable (`-static` or `-static-pie`) has none, and
/// loading a shared library that needs the C library into it crashes.
fn dynamically_linked() -> bool {
    // SAFETY: getauxval only reads the auxiliary vector the kernel gave the process.
    let (phdr, phnum) = unsafe {
        (
            libc::getauxval(libc::AT_PHDR),
            libc::getauxval(libc::AT_PHNUM),
        )
    };
    if phdr == 0 {
        // No program headers to look at: let the loader decide.
        return true;
    }
    // SAFETY: AT_PHDR is the address of the main program's program headers, mapped for the
    // life of the process, AT_PHNUM entries of the native ELF header type.
    let headers = unsafe { std::slice::from_raw_parts(phdr as *const Phdr, phnum as usize) };
    headers.iter().any(|h| h.p_type == libc::PT_INTERP)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_test_binary_has_a_dynamic_loader() {
        assert!(super::dynamically_linked());
    }
}
