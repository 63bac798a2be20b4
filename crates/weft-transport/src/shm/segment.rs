//! A POSIX shared-memory segment: created 0600 under a job-specific name, its memory
//! reserved at creation, mapped by every local rank, unlinked by its creator once all have
//! attached.
//!
//! `ftruncate` alone makes a sparse object: a `/dev/shm` too small for it is only noticed
//! when a page is first touched, as a SIGBUS with no hint. [`Segment::create`] therefore
//! checks the free space and reserves every page (`posix_fallocate`), failing at once with an
//! error naming `/dev/shm`, the bytes needed and the bytes free.

use std::ffi::CString;
use weft_core::{Error, ErrorKind, Result};

/// A mapped shared-memory segment. Unmapped on drop; never unlinked on drop (the creator
/// unlinks explicitly once everyone attached, and the launcher removes leftovers).
pub struct Segment {
    base: *mut u8,
    len: usize,
    name: String,
}

impl Segment {
    /// Creates a new segment of `len` bytes named `name` (e.g. `/weft-<job>-node`), private to
    /// this user (mode 0600), zero-filled. Fails if it already exists.
    pub fn create(name: &str, len: usize) -> Result<Segment> {
        let cname = c_name(name)?;
        // SAFETY: cname is a valid NUL-terminated string; flags and mode are plain integers.
        let fd = unsafe {
            libc::shm_open(
                cname.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC,
                0o600,
            )
        };
        if fd < 0 {
            return Err(Error::io(
                format!("shm_open(create) {name}"),
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: fd is a descriptor we own; ftruncate only sizes the object.
        let rc = unsafe { libc::ftruncate(fd, len as libc::off_t) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            // SAFETY: fd is ours; cname valid. Best-effort cleanup on the error path.
            unsafe {
                libc::close(fd);
                libc::shm_unlink(cname.as_ptr());
            }
            return Err(Error::io(format!("ftruncate {name} to {len} bytes"), err));
        }
        if let Err(e) = reserve(fd, len, name) {
            // SAFETY: fd is ours; cname valid. Nothing was mapped yet.
            unsafe {
                libc::close(fd);
                libc::shm_unlink(cname.as_ptr());
            }
            return Err(e);
        }
        let seg = map(fd, len, name);
        if seg.is_err() {
            // SAFETY: cname valid; remove the object we failed to map.
            unsafe { libc::shm_unlink(cname.as_ptr()) };
        }
        seg
    }

    /// The same mapping moved to an address where `base() + at` is a multiple of `align` (a
    /// power of two), e.g. to align a region's body: reserves `len + align` bytes of address
    /// space, moves the pages into it with `mremap`, and returns the slack.
    pub fn aligned(mut self, align: usize, at: usize) -> Result<Segment> {
        if !align.is_power_of_two() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "segment {}: alignment {align} is not a power of two",
                    self.name
                ),
            ));
        }
        if (self.base as usize + at).is_multiple_of(align) {
            return Ok(self);
        }
        let span = self.len + align;
        // SAFETY: a fresh private reservation, never accessed (PROT_NONE).
        let room = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if room == libc::MAP_FAILED {
            return Err(Error::io(
                format!("reserving {span} bytes of address space for {}", self.name),
                std::io::Error::last_os_error(),
            ));
        }
        let room = room as usize;
        let target = (room + at).next_multiple_of(align) - at;
        // The system call, not libc's `mremap`: a memory-hook library loaded into the process
        // may interpose that symbol with four arguments and pass garbage as the new address
        // (UCX's libucm up to 1.14, which libucp loads; openucx/ucx#8820), which moved the
        // pages anywhere or nowhere. The pages moved here are new and this function's own,
        // so no hook can have anything registered on them.
        // SAFETY: [base, base + len) is our mapping; [target, target + len) lies inside the
        // reservation, which MREMAP_FIXED replaces. The old range is unmapped by the move.
        let moved = unsafe {
            libc::syscall(
                libc::SYS_mremap,
                self.base as *mut libc::c_void,
                self.len,
                self.len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                target as *mut libc::c_void,
            )
        } as *mut libc::c_void;
        let err = std::io::Error::last_os_error();
        // SAFETY: the parts of the reservation below and above the moved pages are ours.
        unsafe {
            if target > room {
                libc::munmap(room as *mut libc::c_void, target - room);
            }
            let end = target + self.len;
            if room + span > end {
                libc::munmap(end as *mut libc::c_void, room + span - end);
            }
        }
        if moved == libc::MAP_FAILED {
            // SAFETY: the move failed, so the reserved pages under target are still ours.
            unsafe { libc::munmap(target as *mut libc::c_void, self.len) };
            return Err(Error::io(format!("mremap {}", self.name), err));
        }
        self.base = moved as *mut u8;
        Ok(self)
    }

    /// Opens and maps an existing segment created by another local rank.
    pub fn open(name: &str) -> Result<Segment> {
        let cname = c_name(name)?;
        // SAFETY: cname is a valid NUL-terminated string.
        let fd = unsafe { libc::shm_open(cname.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC, 0) };
        if fd < 0 {
            return Err(Error::io(
                format!("shm_open {name}"),
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: an all-zero `stat` is a valid value to be overwritten by fstat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is open and st is a valid out-pointer.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            let err = std::io::Error::last_os_error();
            // SAFETY: fd is ours.
            unsafe { libc::close(fd) };
            return Err(Error::io(format!("fstat {name}"), err));
        }
        map(fd, st.st_size as usize, name)
    }

    /// Removes the segment's name; mappings stay valid until unmapped.
    pub fn unlink(name: &str) -> Result<()> {
        let cname = c_name(name)?;
        // SAFETY: cname is a valid NUL-terminated string.
        if unsafe { libc::shm_unlink(cname.as_ptr()) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::ENOENT) {
                return Err(Error::io(format!("shm_unlink {name}"), err));
            }
        }
        Ok(())
    }

    /// Base address of the mapping.
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the mapping is empty (never for a usable segment).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The segment's name as given at creation.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Where POSIX shared-memory objects live on Linux (named in errors).
const SHM_DIR: &str = "/dev/shm";

/// Bytes an unprivileged process may still allocate in the file system of `fd`.
fn free_bytes(fd: i32) -> Option<u64> {
    // SAFETY: an all-zero statvfs is a valid value for fstatvfs to overwrite.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open and st a valid out-pointer.
    if unsafe { libc::fstatvfs(fd, &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

fn no_room(name: &str, len: usize, free: Option<u64>) -> Error {
    let free = free.map_or_else(|| "an unknown number of".to_owned(), |f| f.to_string());
    Error::new(
        ErrorKind::Io,
        format!(
            "not enough shared memory in {SHM_DIR} for {name}: {len} bytes needed, {free} bytes free \
             (enlarge {SHM_DIR}, run fewer ranks per node or ask for smaller buffers)"
        ),
    )
}

/// Reserves the `len` bytes of the new object `fd` so that touching them later cannot fail.
fn reserve(fd: i32, len: usize, name: &str) -> Result<()> {
    let free = free_bytes(fd);
    // Checked first: a request that cannot fit fails without filling /dev/shm on the way.
    if free.is_some_and(|f| len as u64 > f) {
        return Err(no_room(name, len, free));
    }
    // SAFETY: fd is an open object of ours; the range is its whole size.
    match unsafe { libc::posix_fallocate(fd, 0, len as libc::off_t) } {
        0 => Ok(()),
        libc::ENOSPC => Err(no_room(name, len, free_bytes(fd))),
        // A file system without fallocate: the object stays sparse, as before.
        libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        rc => Err(Error::io(
            format!("reserving {len} bytes for {name} in {SHM_DIR} (posix_fallocate)"),
            std::io::Error::from_raw_os_error(rc),
        )),
    }
}

fn c_name(name: &str) -> Result<CString> {
    if !name.starts_with('/') || name[1..].contains('/') || name.len() > 250 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("shared-memory name {name:?} must be '/name' without further slashes"),
        ));
    }
    CString::new(name).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("shared-memory name {name:?} has a NUL"),
        )
    })
}

fn map(fd: i32, len: usize, name: &str) -> Result<Segment> {
    // SAFETY: fd is an open shm object of at least `len` bytes; we ask for a fresh shared mapping.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    let err = std::io::Error::last_os_error();
    // SAFETY: the mapping (if any) keeps the object alive; the descriptor is no longer needed.
    unsafe { libc::close(fd) };
    if ptr == libc::MAP_FAILED {
        return Err(Error::io(format!("mmap {name} ({len} bytes)"), err));
    }
    Ok(Segment {
        base: ptr as *mut u8,
        len,
        name: name.to_owned(),
    })
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: base/len describe a mapping made by `map` and not unmapped before.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}
