//! The running executable's writable globals and statics (`.data`, `.bss`) as symmetric
//! objects. Every PE runs the same executable, so a global lies at the same offset from each
//! process's load base.
//!
//! Two ways to reach a peer's copy on the same node:
//!
//! - **Shared** (what libshmem does): before `main`, while the process has one thread,
//!   [`share_at_load`] moves the executable's writable pages into a shared-memory file of
//!   this PE (`/weft-<job>-globals<rank>`, mode 0600, reserved in full so a full `/dev/shm`
//!   is an error here and never a SIGBUS later): it copies their contents into the file and
//!   maps the file over them (`MAP_FIXED | MAP_SHARED`). At heap creation the PEs of a node
//!   map each other's files ([`PeerGlobals`]), so a put to a peer's global is a memory copy
//!   and an atomic a CPU atomic on the mapped word, exactly as on the heap; the names are
//!   then removed (the launcher removes those of a job that died first).
//! - **CMA** (programs that did not share, e.g. Rust programs on `weft::rma`): a put is one
//!   `process_vm_writev` at `address - my_base + peer_base`; atomics are refused (a copy is
//!   not atomic).
//!
//! Only the main executable's writable segments count (not shared libraries' globals, not
//! thread-locals), and of them only what the program can write: the pages the loader made
//! read-only after relocation (`PT_GNU_RELRO`: the GOT, `.data.rel.ro`) stay private and are
//! not symmetric. Depends on the dynamic loader's program headers (`dl_iterate_phdr`) and
//! the transport's [`Segment`] for mapping peers' files.

use std::sync::OnceLock;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::shm::segment::Segment;

/// The main executable's writable segments: load base, the symmetric address ranges in
/// this process, the page ranges a shared file covers, and a fingerprint of their layout
/// (equal in every process of one binary).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Image {
    /// Load base (the ELF load bias) in this process.
    pub base: u64,
    /// Symmetric (writable) address ranges `[start, end)` in this process.
    pub ranges: Vec<(u64, u64)>,
    /// The pages holding them, `[start, end)` page-aligned, each with the address from which
    /// the segment's bytes are zero-filled rather than read from the file (`.bss`).
    pub pages: Vec<PageRange>,
    /// Fingerprint of the segment layout relative to the base.
    pub fingerprint: u64,
}

/// Pages of one writable segment, as laid out in a PE's shared globals file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageRange {
    /// First byte (page-aligned) in this process.
    pub start: u64,
    /// One past the last byte (page-aligned).
    pub end: u64,
    /// Where the segment's file contents end: pages wholly above are anonymous `.bss`.
    pub file_end: u64,
    /// Offset of `start` in the shared file.
    pub file_offset: u64,
}

impl Image {
    /// The executable of this process.
    pub fn of_executable() -> Image {
        let mut image = Image::default();
        // SAFETY: the callback only reads the loader's program headers for the duration of
        // the call, and stops after the first object (the main executable, per the loader's
        // documented order); `data` points to our local `image`.
        unsafe {
            libc::dl_iterate_phdr(
                Some(first_object),
                &mut image as *mut Image as *mut libc::c_void,
            );
        }
        image
    }

    /// Whether `[addr, addr + len)` lies inside one symmetric range.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        self.ranges
            .iter()
            .any(|&(s, e)| addr >= s && addr.checked_add(len).is_some_and(|end| end <= e))
    }

    /// Bytes of a shared globals file of this image.
    pub fn file_bytes(&self) -> usize {
        self.pages.iter().map(|p| (p.end - p.start) as usize).sum()
    }

    /// Offset in a shared globals file of the symmetric `[addr, addr + len)`, or `None`
    /// when it is not symmetric.
    pub fn file_offset(&self, addr: u64, len: u64) -> Option<usize> {
        if !self.contains(addr, len) {
            return None;
        }
        let p = self
            .pages
            .iter()
            .find(|p| addr >= p.start && addr < p.end)?;
        Some((p.file_offset + (addr - p.start)) as usize)
    }
}

fn page_bytes() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

unsafe extern "C" fn first_object(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: the loader passes a valid info for this call; data is the &mut Image given to
    // dl_iterate_phdr.
    let (info, image) = unsafe { (&*info, &mut *(data as *mut Image)) };
    image.base = info.dlpi_addr;
    let page = page_bytes();
    // SAFETY: dlpi_phdr points to dlpi_phnum program headers.
    let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    // The loader makes [floor(start), floor(end)) of PT_GNU_RELRO read-only after relocation.
    let relro = headers
        .iter()
        .find(|ph| ph.p_type == libc::PT_GNU_RELRO)
        .map(|ph| {
            let s = info.dlpi_addr + ph.p_vaddr;
            (s / page * page, (s + ph.p_memsz) / page * page)
        });
    let mut fp = 0xcbf2_9ce4_8422_2325u64;
    let mut file_offset = 0;
    for ph in headers {
        if ph.p_type != libc::PT_LOAD || ph.p_flags & libc::PF_W == 0 {
            continue;
        }
        for x in [ph.p_vaddr, ph.p_memsz] {
            fp = (fp ^ x).wrapping_mul(0x0100_0000_01b3);
        }
        let mut start = info.dlpi_addr + ph.p_vaddr;
        let end = start + ph.p_memsz;
        if let Some((rs, re)) = relro {
            if rs <= start && re > start {
                start = re.min(end);
            }
        }
        if start >= end {
            continue;
        }
        image.ranges.push((start, end));
        let pages = PageRange {
            start: start / page * page,
            end: end.div_ceil(page) * page,
            file_end: info.dlpi_addr + ph.p_vaddr + ph.p_filesz,
            file_offset,
        };
        file_offset += pages.end - pages.start;
        image.pages.push(pages);
    }
    image.fingerprint = fp;
    1
}

/// The name of PE `rank`'s shared globals file in job `job_id`.
pub fn file_name(job_id: &str, rank: u32) -> String {
    format!("/weft-{job_id}-globals{rank}")
}

/// What [`share_at_load`] did in this process.
#[derive(Debug)]
pub struct Shared {
    /// The job the file belongs to.
    pub job_id: String,
    /// The PE (world rank) the file belongs to.
    pub rank: u32,
    /// Its name in `/dev/shm`.
    pub name: String,
    /// Its bytes.
    pub bytes: usize,
}

static SHARED: OnceLock<std::result::Result<Shared, String>> = OnceLock::new();

/// Moves this process's globals into its shared globals file (see the module docs), once.
/// `var` reads the launcher's environment: `WEFT_JOB_ID`, `WEFT_RANK` and
/// `WEFT_SYMMETRIC_GLOBALS` (`map`, the default, or `cma`). Does nothing for a process not
/// started by `weft run` (a job of one PE has no peer) or with `cma`. Must run while the
/// process has a single thread (libshmem calls it from its load-time constructor); a failure
/// is kept and reported by [`shared`] at heap creation.
pub fn share_at_load(var: impl Fn(&str) -> Option<String>) {
    let (Some(job_id), Some(rank)) = (var("WEFT_JOB_ID"), var("WEFT_RANK")) else {
        return;
    };
    if var("WEFT_SYMMETRIC_GLOBALS").is_some_and(|v| v.trim() == "cma") {
        return;
    }
    let result = match rank.trim().parse::<u32>() {
        Err(_) => Err(format!("WEFT_RANK={rank:?} is not a PE number")),
        Ok(rank) => share(&job_id, rank).map_err(|e| e.to_string()),
    };
    let _ = SHARED.set(result);
}

/// What [`share_at_load`] did: `None` when it did not run (or had nothing to do), the
/// reason when it failed.
pub fn shared() -> Option<&'static std::result::Result<Shared, String>> {
    SHARED.get()
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

fn share(job_id: &str, rank: u32) -> Result<Shared> {
    let fail = |what: String| {
        Error::new(
            ErrorKind::Unsupported,
            format!("PE {rank}: sharing the program's globals: {what}"),
        )
    };
    let n = threads();
    if n != 1 {
        return Err(fail(format!(
            "the process had {n} threads when libshmem was loaded (globals are moved before any other thread exists)"
        )));
    }
    let image = Image::of_executable();
    let bytes = image.file_bytes();
    if bytes == 0 {
        return Err(fail("the executable has no writable segment".into()));
    }
    let name = file_name(job_id, rank);
    let cname = std::ffi::CString::new(name.as_str())
        .map_err(|_| fail(format!("job id {job_id:?} has a NUL")))?;
    // SAFETY: cname is NUL-terminated; flags and mode are plain integers.
    let fd = unsafe {
        libc::shm_open(
            cname.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(fail(format!("shm_open {name}: {e}")));
    }
    let cleanup = |why: String| {
        // SAFETY: fd is ours and cname valid; the name goes with the failed attempt.
        unsafe {
            libc::close(fd);
            libc::shm_unlink(cname.as_ptr());
        }
        fail(why)
    };
    // SAFETY: fd is an open shm object; the size is checked below by fallocate.
    if unsafe { libc::ftruncate(fd, bytes as libc::off_t) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(cleanup(format!("ftruncate {name} to {bytes} bytes: {e}")));
    }
    // Reserve every page now: a global touched later must not meet a full /dev/shm (SIGBUS).
    // SAFETY: fd is an open shm object of `bytes` bytes.
    let rc = unsafe { libc::posix_fallocate(fd, 0, bytes as libc::off_t) };
    if rc != 0 {
        let e = std::io::Error::from_raw_os_error(rc);
        return Err(cleanup(format!(
            "reserving {bytes} bytes in /dev/shm for {name}: {e} (free /dev/shm, or set WEFT_SYMMETRIC_GLOBALS=cma)"
        )));
    }
    // SAFETY: a fresh shared mapping of the whole file, anywhere.
    let copy = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if copy == libc::MAP_FAILED {
        let e = std::io::Error::last_os_error();
        return Err(cleanup(format!("mmap {name}: {e}")));
    }
    let page = page_bytes() as usize;
    for p in &image.pages {
        let len = (p.end - p.start) as usize;
        let resident = resident_pages(p.start, len, page);
        for (i, &resident) in resident.iter().enumerate() {
            let at = p.start + (i * page) as u64;
            // An untouched page of .bss is zero and stays so in the file: skip it without
            // reading it (reading would fault in a page for nothing).
            if at >= p.file_end.div_ceil(page as u64) * page as u64 && !resident {
                continue;
            }
            // SAFETY: `at` is a mapped page of the executable's writable segment (the loader
            // mapped [start, end) readable), and nothing else runs in this process.
            let src = unsafe { std::slice::from_raw_parts(at as *const u8, page) };
            if src.iter().all(|&b| b == 0) {
                continue;
            }
            // SAFETY: the copy mapping holds `bytes` bytes; this page lies inside it.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr(),
                    (copy as *mut u8).add(p.file_offset as usize + i * page),
                    page,
                )
            };
        }
    }
    for p in &image.pages {
        // SAFETY: [start, end) is the executable's own writable mapping, whose contents are
        // in the file (copied above); nothing else runs, so no store is lost between the copy
        // and this call, which replaces those pages with the file's, at the same addresses.
        let at = unsafe {
            libc::mmap(
                p.start as *mut libc::c_void,
                (p.end - p.start) as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd,
                p.file_offset as libc::off_t,
            )
        };
        if at == libc::MAP_FAILED {
            // The pages may already be gone: nothing this process could still run is sound.
            weft_core::diag!(
                "weft: PE {rank}: mapping {name} over the program's globals at {:#x}: {}",
                p.start,
                std::io::Error::last_os_error()
            );
            std::process::abort();
        }
    }
    // SAFETY: the copy mapping made above; the file stays mapped over the globals.
    unsafe {
        libc::munmap(copy, bytes);
        libc::close(fd);
    }
    Ok(Shared {
        job_id: job_id.to_string(),
        rank,
        name,
        bytes,
    })
}

/// Which of the `len / page` pages from `start` are resident (all of them when the kernel
/// cannot say).
fn resident_pages(start: u64, len: usize, page: usize) -> Vec<bool> {
    let mut vec = vec![0u8; len / page];
    // SAFETY: [start, start + len) is a mapped, page-aligned range; vec has one byte per page.
    let rc = unsafe { libc::mincore(start as *mut libc::c_void, len, vec.as_mut_ptr()) };
    if rc != 0 {
        return vec![true; len / page];
    }
    vec.iter().map(|b| b & 1 != 0).collect()
}

fn own_check(image: &Image, addr: u64, len: usize, align: u64) -> Result<()> {
    if !image.contains(addr, len as u64) || !addr.is_multiple_of(align) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{len} bytes at {addr:#x}: not a global of the program, or not {align}-byte aligned"),
        ));
    }
    Ok(())
}

/// Copies `src` to this process's global at `addr`, which [`Image::contains`] (checked:
/// panics otherwise, as a caller that skipped its own check is a bug).
pub fn own_write(image: &Image, addr: u64, src: &[u8]) {
    own_check(image, addr, src.len(), 1).expect("a global of this PE");
    // SAFETY: [addr, addr + len) lies in a writable segment of the executable (checked), which
    // stays mapped for the life of the process; src is a distinct buffer.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), addr as *mut u8, src.len()) };
}

/// Copies this process's global at `addr` (as [`own_write`]) into `dst`.
pub fn own_read(image: &Image, addr: u64, dst: &mut [u8]) {
    own_check(image, addr, dst.len(), 1).expect("a global of this PE");
    // SAFETY: as in own_write; dst is exclusively borrowed.
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, dst.as_mut_ptr(), dst.len()) };
}

/// This process's 64-bit global at `addr`, for a CPU atomic.
pub fn own_u64(image: &Image, addr: u64) -> Result<&'static std::sync::atomic::AtomicU64> {
    own_check(image, addr, 8, 8)?;
    // SAFETY: an aligned word of the executable's writable segment (checked), mapped for the
    // life of the process; any bits are a valid AtomicU64.
    Ok(unsafe { &*(addr as *const std::sync::atomic::AtomicU64) })
}

/// This process's 32-bit global at `addr`, for a CPU atomic.
pub fn own_u32(image: &Image, addr: u64) -> Result<&'static std::sync::atomic::AtomicU32> {
    own_check(image, addr, 4, 4)?;
    // SAFETY: as in own_u64.
    Ok(unsafe { &*(addr as *const std::sync::atomic::AtomicU32) })
}

/// A peer's shared globals file, mapped in this process: the symmetric
/// globals of that PE at [`Image::file_offset`] offsets.
pub struct PeerGlobals {
    seg: Segment,
}

// SAFETY: the mapping lives as long as the value and every access goes through bounds-checked
// copies or atomics, valid from any thread (other processes touch the same bytes anyway).
unsafe impl Send for PeerGlobals {}
// SAFETY: as above; `&PeerGlobals` only hands out atomics and copies.
unsafe impl Sync for PeerGlobals {}

impl PeerGlobals {
    /// Maps PE `rank`'s file of job `job_id`, which must be `bytes` long.
    pub fn open(job_id: &str, rank: u32, bytes: usize) -> Result<PeerGlobals> {
        let name = file_name(job_id, rank);
        let seg = Segment::open(&name)?;
        if seg.len() != bytes {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "{name} is {} bytes, this executable's globals take {bytes}",
                    seg.len()
                ),
            ));
        }
        Ok(PeerGlobals { seg })
    }

    fn check(&self, offset: usize, len: usize, align: usize) -> Result<()> {
        if !offset.is_multiple_of(align)
            || offset.checked_add(len).is_none_or(|e| e > self.seg.len())
        {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{len} bytes at offset {offset} of {} ({} bytes, alignment {align}): out of bounds or misaligned",
                    self.seg.name(),
                    self.seg.len()
                ),
            ));
        }
        Ok(())
    }

    /// The address in this process of `offset` in the file.
    pub fn ptr(&self, offset: usize) -> *mut u8 {
        self.seg.base().wrapping_add(offset)
    }

    /// Copies `src` to `offset`. Races with the owner's stores as two puts to one address
    /// do, never on memory safety: no Rust reference to the shared bytes exists.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.check(offset, src.len(), 1)?;
        // SAFETY: in bounds (checked); src is a private buffer distinct from the mapping.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr(offset), src.len()) };
        Ok(())
    }

    /// Copies from `offset` into `dst`.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.check(offset, dst.len(), 1)?;
        // SAFETY: in bounds (checked); dst is exclusively borrowed.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr(offset), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// The 64-bit word at `offset` (8-byte aligned).
    pub fn u64_at(&self, offset: usize) -> Result<&std::sync::atomic::AtomicU64> {
        self.check(offset, 8, 8)?;
        // SAFETY: in bounds and aligned (checked); any bits are a valid AtomicU64 and the
        // mapping lives as long as self.
        Ok(unsafe { &*(self.ptr(offset) as *const std::sync::atomic::AtomicU64) })
    }

    /// The 32-bit word at `offset` (4-byte aligned).
    pub fn u32_at(&self, offset: usize) -> Result<&std::sync::atomic::AtomicU32> {
        self.check(offset, 4, 4)?;
        // SAFETY: as for u64_at.
        Ok(unsafe { &*(self.ptr(offset) as *const std::sync::atomic::AtomicU32) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static mut GLOBAL: [u64; 4] = [1, 2, 3, 4];

    #[test]
    fn a_static_lies_in_the_image() {
        let image = Image::of_executable();
        assert!(!image.ranges.is_empty());
        let addr = std::ptr::addr_of!(GLOBAL) as u64;
        assert!(image.contains(addr, 32), "{image:?} {addr:#x}");
        let local = 5u64;
        assert!(!image.contains(&local as *const u64 as u64, 8));
        assert_eq!(image.fingerprint, Image::of_executable().fingerprint);
        // Its place in a shared file: inside the file, and the same for every byte's offset.
        let off = image.file_offset(addr, 32).unwrap();
        assert!(off + 32 <= image.file_bytes());
        assert_eq!(image.file_offset(addr + 8, 8), Some(off + 8));
        for p in &image.pages {
            assert_eq!(p.start % page_bytes(), 0);
            assert!(p.start <= p.file_end && p.end >= p.file_end.min(p.end));
        }
    }

    #[test]
    fn nothing_is_shared_outside_a_launched_job() {
        share_at_load(|_| None);
        assert!(shared().is_none());
    }
}
