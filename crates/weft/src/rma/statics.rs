//! Where the running executable keeps its writable globals and statics (`.data`, `.bss`), so
//! they can be symmetric too: every PE runs the same executable, so a global lies at the
//! same offset from each process's load base, and a PE reaches a peer's copy at
//! `address - my_base + peer_base` with `process_vm_writev` / `process_vm_readv`.
//!
//! Only the main executable's writable segments count (not shared libraries' globals, not
//! thread-locals). Depends on the dynamic loader's program headers (`dl_iterate_phdr`).

/// The main executable's writable segments: load base and `[start, end)` address ranges in
/// this process, and a fingerprint of their layout (equal in every process of one binary).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Image {
    /// Load base (the ELF load bias) in this process.
    pub base: u64,
    /// Writable address ranges in this process.
    pub ranges: Vec<(u64, u64)>,
    /// Fingerprint of the segment layout relative to the base.
    pub fingerprint: u64,
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

    /// Whether `[addr, addr + len)` lies inside one writable range.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        self.ranges
            .iter()
            .any(|&(s, e)| addr >= s && addr.checked_add(len).is_some_and(|end| end <= e))
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
    let mut fp = 0xcbf2_9ce4_8422_2325u64;
    for i in 0..info.dlpi_phnum as usize {
        // SAFETY: dlpi_phdr points to dlpi_phnum program headers.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W != 0 {
            let start = info.dlpi_addr + ph.p_vaddr;
            image.ranges.push((start, start + ph.p_memsz));
            for x in [ph.p_vaddr, ph.p_memsz] {
                fp = (fp ^ x).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    image.fingerprint = fp;
    1
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
    }
}
