//! Pinning a launched rank's process to one core (`WEFT_BIND`). With more ranks than cores,
//! the kernel's placement decides whether two partners share a core, and a pair that does
//! must go through the scheduler for every message: measured on a 2-core machine, MPI
//! ping-pong at 4 ranks took 1.16-1.22 us at 8 B in 4 of 5 unpinned jobs and 0.24 us in 5
//! of 5 pinned ones (rank to core `local rank mod cores`, so ranks 2k and 2k + 1 run on
//! different cores). Pinning happens after start-up, so the engine's view of the node (how
//! many cores, so whether to yield) is the unpinned one ([`usable_cores`]).
//!
//! Depends on the operating system's affinity calls only.

use crate::config::BindMode;
use std::sync::OnceLock;

/// CPUs this process could run on before anything was pinned, in increasing order (empty
/// when the system does not say).
fn allowed_cpus() -> &'static [usize] {
    static CPUS: OnceLock<Vec<usize>> = OnceLock::new();
    CPUS.get_or_init(|| {
        // SAFETY: cpu_set_t is a plain bit array, for which all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: pid 0 is the calling thread; the size and pointer describe `set`, which
        // lives for the call.
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `c` is below CPU_SETSIZE, inside the set.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    })
}

/// Cores this process may use, as it started: the same answer before and after a rank
/// pinned itself (which shrinks what the system reports to one).
pub(crate) fn usable_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        let _ = allowed_cpus();
        std::thread::available_parallelism().map_or(1, |n| n.get())
    })
}

/// The CPU local rank `local` of `local_size` goes on under `mode`, if it is pinned: the
/// `local mod n`-th of the `n` CPUs it may use.
pub(crate) fn cpu_for(mode: BindMode, local: u32, local_size: u32) -> Option<usize> {
    let cpus = allowed_cpus();
    let pin = match mode {
        BindMode::None => false,
        BindMode::Core => true,
        BindMode::Auto => local_size as usize > usable_cores().min(cpus.len().max(1)),
    };
    if !pin || cpus.is_empty() {
        return None;
    }
    Some(cpus[local as usize % cpus.len()])
}

/// Pins the calling process (its thread) to `cpu`.
pub(crate) fn pin(cpu: usize) -> std::io::Result<()> {
    // SAFETY: as in `allowed_cpus`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    }
    // SAFETY: `cpu` is below CPU_SETSIZE (checked), inside the set.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; the size and pointer describe `set`.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_spread_over_the_allowed_cpus() {
        let cpus = allowed_cpus();
        assert!(
            !cpus.is_empty(),
            "this system reports the CPUs a process may use"
        );
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(cpu_for(BindMode::None, 0, 64), None);
        let n = cpus.len() as u32;
        for local in 0..2 * n + 1 {
            let cpu = cpu_for(BindMode::Core, local, 2 * n + 1);
            assert_eq!(cpu, Some(cpus[(local % n) as usize]));
        }
        // Auto pins only a node with more ranks than cores.
        let cores = usable_cores().min(cpus.len()) as u32;
        assert_eq!(cpu_for(BindMode::Auto, 0, cores), None);
        assert_eq!(
            cpu_for(BindMode::Auto, 1, cores + 1),
            Some(cpus[1 % cpus.len()])
        );
    }
}
