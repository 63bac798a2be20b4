//! The operating system's view of which CPUs a process runs on: the CPUs it may use, the
//! CPUs online, and pinning the calling thread to one (the node-local placement that
//! `weft`'s `WEFT_BIND` policy decides). Depends on libc's affinity calls only.

/// CPUs the calling thread may run on, in increasing order (empty when the system does not
/// say, e.g. more CPUs than a `cpu_set_t` holds).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is a plain bit array, for which all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the size and pointer describe `set`, which lives
    // for the call.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below CPU_SETSIZE, inside the set.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// CPUs online on this machine (at least 1).
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory effects; a negative answer means unknown.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        1
    }
}

/// Pins the calling thread to `cpu` (threads it starts later inherit the mask).
pub fn pin_to(cpu: usize) -> std::io::Result<()> {
    allow_only(&[cpu])
}

/// Lets the calling thread run on exactly `cpus` (threads it starts later inherit them).
pub fn allow_only(cpus: &[usize]) -> std::io::Result<()> {
    if cpus.is_empty() || cpus.iter().any(|&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    }
    // SAFETY: as in `allowed_cpus`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: `cpu` is below CPU_SETSIZE (checked), inside the set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
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
    fn this_thread_may_run_somewhere_online() {
        let cpus = allowed_cpus();
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
        assert!(cpus.len() <= online_cpus().max(cpus.len()));
        assert!(pin_to(libc::CPU_SETSIZE as usize).is_err());
        assert!(allow_only(&[]).is_err());
        // On a thread of its own (the mask is per thread): pin to the last allowed CPU,
        // then allow them all again.
        std::thread::spawn(move || {
            if let Some(&last) = cpus.last() {
                pin_to(last).unwrap();
                assert_eq!(allowed_cpus(), vec![last]);
                allow_only(&cpus).unwrap();
                assert_eq!(allowed_cpus(), cpus);
            }
        })
        .join()
        .unwrap();
    }
}
