//! The `WEFT_BIND` policy: whether and where a launched rank pins its process (its main
//! thread; threads started later inherit the mask) to one core. With more ranks than
//! cores, the kernel's placement decides whether two partners share a core, and a pair that
//! does must go through the scheduler for every message: measured on a 2-core machine, MPI
//! ping-pong at 4 ranks took 1.16-1.22 us at 8 B in 4 of 5 unpinned jobs and 0.24 us in 5
//! of 5 pinned ones (rank to core `local rank mod cores`, so ranks 2k and 2k + 1 run on
//! different cores). Pinning happens after start-up, so the engine's view of the node (how
//! many cores, so whether to yield) is the unpinned one ([`usable_cores`]).
//!
//! weft's own helper threads undo the pinning for themselves ([`unpin_this_thread`]); a
//! program's threads keep it. The mapping assumes that the job has the node to itself and
//! that every local rank may use the same CPUs; `auto` therefore leaves alone a process that
//! someone already bound to fewer CPUs than are online (a batch system's or a wrapper's
//! binding). Depends on the transport's affinity calls (`weft_transport::shm::affinity`)
//! and the typed config.

use crate::config::BindMode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use weft_transport::shm::affinity;

/// CPUs this process could run on before anything was pinned, in increasing order (empty
/// when the system does not say).
pub(crate) fn allowed_cpus() -> &'static [usize] {
    static CPUS: OnceLock<Vec<usize>> = OnceLock::new();
    CPUS.get_or_init(affinity::allowed_cpus)
}

/// Cores this process may use, as it started: the same answer before and after a rank
/// pinned itself (which shrinks what the system reports to one). Counts a CPU quota too
/// (`available_parallelism`).
pub(crate) fn usable_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        let _ = allowed_cpus();
        std::thread::available_parallelism().map_or(1, |n| n.get())
    })
}

/// Why `WEFT_BIND` pins a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PinReason {
    /// `WEFT_BIND=core`.
    Asked,
    /// `auto`, the node has more ranks than CPUs.
    Oversubscribed,
    /// `auto`, a CPU per rank, and other programs competed for the CPUs at start-up
    /// ([`others_competed_at_start`]).
    BesideOthers,
}

/// Where a rank is pinned and why ([`placement`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The CPU.
    pub(crate) cpu: usize,
    /// Why.
    pub(crate) why: PinReason,
}

/// Where local rank `local` of `local_size` goes under `mode`, if it is pinned: the
/// `local mod n`-th of the `n` CPUs the process may use. `auto` pins when the node has
/// more ranks than those CPUs, or two ranks or more while other programs compete for the
/// cores ([`others_competed_at_start`]), unless the process was already bound to fewer CPUs
/// than the machine has online. The one place that decides; [`pin`] records the decision
/// it carried out, for [`pinned_for`].
pub(crate) fn placement(mode: BindMode, local: u32, local_size: u32) -> Option<Placement> {
    let cpus = allowed_cpus();
    let compete = mode == BindMode::Auto
        && local_size >= 2
        && local_size as usize <= cpus.len()
        && others_competed_at_start(local_size);
    place_in(
        mode,
        local,
        local_size,
        cpus,
        affinity::online_cpus(),
        compete,
    )
}

/// The CPU of [`placement`].
pub(crate) fn cpu_for(mode: BindMode, local: u32, local_size: u32) -> Option<usize> {
    placement(mode, local, local_size).map(|p| p.cpu)
}

/// Whether programs that are not this job's ranks competed for this process's CPUs when it
/// first asked (`crate::node_load::others_compete`, counting all `local_size` ranks awake,
/// so a partner asleep in start-up never adds to the others), read once: every pinning
/// decision of the process sees the same answer. With a core per rank the kernel places
/// the ranks; beside busy programs it often puts two partners on one core, where every
/// message waits for a turn of the scheduler (np 2 on 2 cores beside two spinning
/// processes, OSU-style p50: barrier 0.35 us pinned in 9 of 9 jobs, 235-2098 us in 2 of 3
/// unpinned ones; Open MPI binds such ranks to cores by default).
pub(crate) fn others_competed_at_start(local_size: u32) -> bool {
    static COMPETED: OnceLock<bool> = OnceLock::new();
    *COMPETED.get_or_init(|| {
        let Some(runnable) = crate::node_load::LoadProbe::open().and_then(|p| p.runnable()) else {
            return false;
        };
        crate::node_load::others_compete(crate::node_load::NodeLoad {
            runnable,
            ours_awake: local_size,
            usable_cores: crate::node_load::usable_cores(),
            online_cores: crate::node_load::online_cores(),
        })
    })
}

/// [`placement`] on given CPUs: `others_compete` says that other programs compete for them
/// (which `auto` pins for too, for a job of at most one rank per CPU).
fn place_in(
    mode: BindMode,
    local: u32,
    local_size: u32,
    cpus: &[usize],
    online: usize,
    others_compete: bool,
) -> Option<Placement> {
    if cpus.is_empty() {
        return None;
    }
    let why = match mode {
        BindMode::None => None,
        BindMode::Core => Some(PinReason::Asked),
        BindMode::Auto if cpus.len() < online => None,
        BindMode::Auto if local_size as usize > cpus.len() => Some(PinReason::Oversubscribed),
        BindMode::Auto => (others_compete && local_size >= 2).then_some(PinReason::BesideOthers),
    };
    why.map(|why| Placement {
        cpu: cpus[local as usize % cpus.len()],
        why,
    })
}

/// [`place_in`]'s CPU.
#[cfg(test)]
fn cpu_in(
    mode: BindMode,
    local: u32,
    local_size: u32,
    cpus: &[usize],
    online: usize,
    others_compete: bool,
) -> Option<usize> {
    place_in(mode, local, local_size, cpus, online, others_compete).map(|p| p.cpu)
}

/// The CPUs this process could use before anything was pinned, as a list (`0-3,6`).
pub(crate) fn allowed_cpus_text() -> String {
    let cpus = allowed_cpus();
    if cpus.is_empty() {
        "unknown".into()
    } else {
        number_ranges(cpus)
    }
}

/// Ascending numbers as a list of ranges: `0-3,6`.
pub(crate) fn number_ranges(sorted: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Why this process is pinned, as [`pin`] last did it (0: not pinned; else a
/// [`PinReason`] + 1). A process's pinning is the process's: one per process.
static PINNED_FOR: AtomicU8 = AtomicU8::new(0);

/// Pins the calling process (its calling thread, and the threads it starts later) to the
/// place's CPU, and records why ([`pinned_for`]); a refusal records nothing pinned.
pub(crate) fn pin(place: Placement) -> std::io::Result<()> {
    let done = affinity::pin_to(place.cpu);
    let code = match (&done, place.why) {
        (Err(_), _) => 0,
        (Ok(()), PinReason::Asked) => 1,
        (Ok(()), PinReason::Oversubscribed) => 2,
        (Ok(()), PinReason::BesideOthers) => 3,
    };
    PINNED_FOR.store(code, Ordering::Relaxed);
    done
}

/// Why [`pin`] pinned this process (None: it did not, or failed).
pub(crate) fn pinned_for() -> Option<PinReason> {
    match PINNED_FOR.load(Ordering::Relaxed) {
        1 => Some(PinReason::Asked),
        2 => Some(PinReason::Oversubscribed),
        3 => Some(PinReason::BesideOthers),
        _ => None,
    }
}

/// Lets the calling thread run on every CPU the process could use before it was pinned:
/// for weft's own helper threads (the one-sided service and proxy), which would otherwise
/// inherit their rank's core and take turns with it.
pub(crate) fn unpin_this_thread() {
    let cpus = allowed_cpus();
    if !cpus.is_empty() {
        let _ = affinity::allow_only(cpus);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_spread_over_the_allowed_cpus() {
        let cpus = [0, 1, 4, 5];
        assert_eq!(cpu_in(BindMode::None, 0, 64, &cpus, 4, false), None);
        for local in 0..9 {
            assert_eq!(
                cpu_in(BindMode::Core, local, 9, &cpus, 8, false),
                Some(cpus[local as usize % 4])
            );
        }
        // Auto pins only a node with more ranks than CPUs...
        assert_eq!(cpu_in(BindMode::Auto, 0, 4, &cpus, 4, false), None);
        assert_eq!(cpu_in(BindMode::Auto, 1, 5, &cpus, 4, false), Some(1));
        // ... and never a process someone bound to fewer CPUs than are online.
        assert_eq!(cpu_in(BindMode::Auto, 1, 5, &cpus, 8, false), None);
        assert_eq!(cpu_in(BindMode::Core, 1, 5, &cpus, 8, false), Some(1));
        // With a CPU per rank, auto pins only while other programs compete, and only a
        // job of two ranks or more, never a process bound to fewer CPUs than are online.
        assert_eq!(cpu_in(BindMode::Auto, 1, 2, &cpus, 4, false), None);
        assert_eq!(cpu_in(BindMode::Auto, 1, 2, &cpus, 4, true), Some(1));
        assert_eq!(cpu_in(BindMode::Auto, 3, 4, &cpus, 4, true), Some(5));
        assert_eq!(cpu_in(BindMode::Auto, 0, 1, &cpus, 4, true), None);
        assert_eq!(cpu_in(BindMode::Auto, 1, 2, &cpus, 8, true), None);
        assert_eq!(cpu_in(BindMode::None, 1, 2, &cpus, 4, true), None);
        // Nothing known, nothing pinned.
        assert_eq!(cpu_in(BindMode::Core, 0, 5, &[], 8, false), None);
    }

    #[test]
    fn each_pin_says_why() {
        let cpus = [0, 1, 4, 5];
        let why = |mode, local, size, compete| {
            place_in(mode, local, size, &cpus, 4, compete).map(|p| p.why)
        };
        assert_eq!(why(BindMode::Core, 0, 2, true), Some(PinReason::Asked));
        assert_eq!(
            why(BindMode::Auto, 0, 5, true),
            Some(PinReason::Oversubscribed)
        );
        assert_eq!(
            why(BindMode::Auto, 0, 5, false),
            Some(PinReason::Oversubscribed)
        );
        assert_eq!(
            why(BindMode::Auto, 1, 2, true),
            Some(PinReason::BesideOthers)
        );
        assert_eq!(why(BindMode::Auto, 1, 2, false), None);
        assert_eq!(why(BindMode::None, 1, 2, true), None);
    }
}
