//! Cross Memory Attach: single-copy reads and writes of another process's memory with
//! `process_vm_readv` / `process_vm_writev`, and the start-up probe that tells whether the
//! kernel allows them between this job's processes (ptrace policy, containers).

use std::sync::atomic::{AtomicU64, Ordering};

/// A word each process publishes the address of, so peers can test CMA by reading it.
static PROBE_WORD: AtomicU64 = AtomicU64::new(0);

/// Sets this process's probe word to a value derived from `pid` and returns (address, value).
pub fn probe_target(pid: i32) -> (u64, u64) {
    let value = 0x5745_4654_0000_0000u64 ^ (pid as u32 as u64);
    PROBE_WORD.store(value, Ordering::SeqCst);
    (&PROBE_WORD as *const AtomicU64 as u64, value)
}

/// True when this process can read `expected` at `addr` in process `pid` with CMA.
pub fn probe(pid: i32, addr: u64, expected: u64) -> bool {
    let mut word = [0u8; 8];
    read(pid, addr, &mut word).is_ok() && u64::from_ne_bytes(word) == expected
}

/// Reads `local.len()` bytes at `remote_addr` of process `pid` into `local`, looping over
/// partial transfers.
pub fn read(pid: i32, remote_addr: u64, local: &mut [u8]) -> std::io::Result<()> {
    let (ptr, len) = (local.as_mut_ptr(), local.len());
    // SAFETY: `ptr..ptr+len` is `local`, writable and exclusively borrowed for this call.
    transfer(remote_addr, ptr, len, |l, r| unsafe {
        libc::process_vm_readv(pid, l, 1, r, 1, 0)
    })
}

/// Writes `local` to `remote_addr` of process `pid`, looping over partial transfers.
pub fn write(pid: i32, remote_addr: u64, local: &[u8]) -> std::io::Result<()> {
    let (ptr, len) = (local.as_ptr() as *mut u8, local.len());
    // SAFETY: `ptr..ptr+len` is `local`, readable for this call; the kernel only reads it.
    transfer(remote_addr, ptr, len, |l, r| unsafe {
        libc::process_vm_writev(pid, l, 1, r, 1, 0)
    })
}

/// Drives one CMA system call over `len` bytes until all have moved.
fn transfer(
    remote_addr: u64,
    ptr: *mut u8,
    len: usize,
    call: impl Fn(&libc::iovec, &libc::iovec) -> isize,
) -> std::io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let liov = libc::iovec {
            // SAFETY: done < len, so the pointer stays inside the caller's buffer.
            iov_base: unsafe { ptr.add(done) } as *mut libc::c_void,
            iov_len: len - done,
        };
        let riov = libc::iovec {
            iov_base: (remote_addr + done as u64) as *mut libc::c_void,
            iov_len: len - done,
        };
        let n = call(&liov, &riov);
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "CMA transfer moved 0 bytes",
            ));
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_memory() {
        let pid = std::process::id() as i32;
        let (addr, value) = probe_target(pid);
        assert!(probe(pid, addr, value));
        assert!(!probe(pid, addr, value ^ 1));
        let src: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        let mut dst = vec![0u8; src.len()];
        read(pid, src.as_ptr() as u64, &mut dst).unwrap();
        assert_eq!(src, dst);
        let mut target = vec![0u8; 1000];
        write(pid, target.as_mut_ptr() as u64, &src[..1000]).unwrap();
        assert_eq!(&target[..], &src[..1000]);
    }

    #[test]
    fn bad_address_is_an_error() {
        let mut dst = [0u8; 8];
        assert!(read(std::process::id() as i32, 8, &mut dst).is_err());
    }
}
