//! Whether sleeping helps a waiting rank (`WEFT_BLOCK=auto`): the node's load, read now and
//! then in the slow part of a wait, and the decision made from it.
//!
//! Sleeping in the kernel until a peer's delivery wakes the rank wins big when programs
//! that are not this job's ranks compete for the cores: a rank that only yields hands its
//! core back and forth with a program that spins, while the rank it waits for does not get
//! to run (measured here beside two spinning processes, np 2 on 2 cores: ping-pong 1 MiB
//! 558 -> 45 us, allreduce 1 MiB 5282 -> 295 us; np 4: barrier 2968 -> 49 us). Without such
//! programs it loses: on a node with more ranks than cores a yield hands the core to one of
//! our own peers sooner than a futex wake-up does (np 4 on 2 cores, idle: barrier 1.8 ->
//! 61 us). So a wait sleeps only while others compete ([`others_compete`]) and its yields
//! do not get the core back soon ([`auto_sleeps`]), or once it has waited so long
//! ([`IDLE_SLEEP_AFTER`]) that a wake-up's cost no longer counts.
//!
//! The load is the kernel's count of runnable tasks on the node (the fourth field of
//! `/proc/loadavg`, `running/total`: the same `nr_running` as `procs_running` in
//! `/proc/stat`, read from a file of a few dozen bytes kept open, so one `pread`), less this
//! job's ranks that are awake on the node (its local ranks less the sleepers counted in the
//! node's segment): what is left are other programs' tasks.

use std::time::Duration;

/// What a rank knows of its node when it decides whether to sleep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLoad {
    /// Runnable tasks on the node (the kernel's `nr_running`), the reading rank included.
    pub runnable: u32,
    /// This job's ranks on the node that are not asleep (local ranks less sleepers).
    pub ours_awake: u32,
    /// Cores this process may run on (its CPU affinity and quota).
    pub usable_cores: u32,
    /// Cores online on the node: the runnable tasks counted are spread over these.
    pub online_cores: u32,
}

impl NodeLoad {
    /// Runnable tasks that are not this job's awake ranks.
    pub fn others(&self) -> u32 {
        self.runnable.saturating_sub(self.ours_awake)
    }

    /// The other programs' runnable tasks expected on this process's cores: all of them
    /// when it may use every online core, else their share (rounded up) of the cores it
    /// may use (the count is node-wide; a process bound to a few cores sees only some).
    pub fn others_on_my_cores(&self) -> u32 {
        let usable = self.usable_cores.max(1) as u64;
        let online = (self.online_cores as u64).max(usable);
        let share = (self.others() as u64 * usable).div_ceil(online);
        share.min(u32::MAX as u64) as u32
    }
}

/// Whether programs that are not this job's ranks compete for this rank's cores: at least
/// one of their tasks is runnable on them, and with it there are more runnable tasks than
/// cores (someone waits for a core). A job alone on its cores, oversubscribed or not,
/// never competes with others: its waits spin and yield to each other.
pub fn others_compete(load: NodeLoad) -> bool {
    let others = load.others_on_my_cores();
    others > 0 && load.ours_awake as u64 + others as u64 > load.usable_cores.max(1) as u64
}

/// A wait that has yielded this long with nothing arriving sleeps under `WEFT_BLOCK=auto`
/// whatever the load: nothing is coming soon, and a wake-up (tens of microseconds in a VM)
/// is then a small part of the wait, while a rank that keeps yielding takes a core from
/// whatever else the node runs.
pub const IDLE_SLEEP_AFTER: Duration = Duration::from_millis(20);

/// How often a waiting rank reads the node's load at most (in the slow part of a wait
/// only): runnable tasks change by the scheduler's time slice, a few milliseconds.
pub const LOAD_SAMPLE_PERIOD: Duration = Duration::from_millis(2);

/// A yield that kept the rank off its core at least this long handed the core to other
/// work for a time slice (a yield to nobody returns in about a microsecond, one to a rank of
/// the job that soon waits again in a few). While others compete, a rank that yields at
/// once takes the core as lost for the next [`CORE_LOST_FOR`].
pub const YIELD_LOST_CORE: Duration = Duration::from_micros(50);

/// How long a core found lost to a yield ([`YIELD_LOST_CORE`]) is taken to stay so.
pub const CORE_LOST_FOR: Duration = Duration::from_millis(50);

/// Whether a wait under `WEFT_BLOCK=auto` that has yielded for `yielded_for` sleeps now
/// (where it would yield again). `compete` is [`others_compete`] of a recent reading (None:
/// not read, which the caller does only when the answer depends on it, see
/// [`auto_needs_load`]); `yields_at_once`: the rank yields without spinning first (more
/// ranks than cores on the node, or `WEFT_YIELD=on`); `core_lost`: a yield of the last
/// [`CORE_LOST_FOR`] kept the rank off its core for [`YIELD_LOST_CORE`]; `block_after`:
/// the yielding before a sleep ([`block_after`]: `WEFT_BLOCK_AFTER_US` or the rank's
/// default; learned from there by a rank with a core of its own).
///
/// Only while others compete: a rank that yields at once sleeps at once when its yields
/// lose the core (each may hand it to the competitor for a whole time slice, while a
/// sleeper woken by its peer is run at once), else after `block_after` of yielding (by
/// default [`AT_ONCE_BLOCK_AFTER`]), and a rank with a core of its own after
/// `block_after` of yielding: by default none, so it sleeps where it would first yield,
/// after its spin. Such a rank is pinned while others compete (`crate::bind`), so its
/// partner runs on another core and answers within the spin whenever both run; its yields
/// would only hand its core to a competitor for a time slice (np 2 beside two spinning
/// processes, pinned, 1 MiB broadcast through the shared area: 2-13 ms per call after
/// 200 us of yielding, 0.1-0.6 ms sleeping at once). Unpinned partners that share a core
/// do better yielding to each other first (8 B collectives: 0.3 -> 140 us sleeping at
/// once). Without competitors a wait keeps yielding (to its own peers, faster than a
/// wake-up) until [`IDLE_SLEEP_AFTER`].
pub fn auto_sleeps(
    compete: Option<bool>,
    yields_at_once: bool,
    core_lost: bool,
    yielded_for: Duration,
    block_after: Duration,
) -> bool {
    yielded_for >= IDLE_SLEEP_AFTER
        || (compete == Some(true) && ((yields_at_once && core_lost) || yielded_for >= block_after))
}

/// The default yielding before a sleep, while others compete, of a rank that yields at once
/// (more ranks than cores): its yields hand the core to its own co-located ranks, which a
/// sleep would not do sooner.
pub const AT_ONCE_BLOCK_AFTER: Duration = Duration::from_micros(200);

/// The yielding before a sleep while others compete (`WEFT_BLOCK=auto`): `given`
/// (`WEFT_BLOCK_AFTER_US`, when it was set) for every rank; unset, [`AT_ONCE_BLOCK_AFTER`]
/// for a rank that yields at once and none for a rank with a core of its own (it sleeps
/// where it would first yield, after its spin; see [`auto_sleeps`]).
pub fn block_after(given: Option<Duration>, yields_at_once: bool) -> Duration {
    given.unwrap_or(if yields_at_once {
        AT_ONCE_BLOCK_AFTER
    } else {
        Duration::ZERO
    })
}

/// Whether [`auto_sleeps`] needs the load for these inputs (a wait reads it only then).
pub fn auto_needs_load(
    yields_at_once: bool,
    core_lost: bool,
    yielded_for: Duration,
    block_after: Duration,
) -> bool {
    yielded_for < IDLE_SLEEP_AFTER && ((yields_at_once && core_lost) || yielded_for >= block_after)
}

/// The longest a learned `WEFT_BLOCK_AFTER_US` grows ([`learned_block_after`]).
pub const BLOCK_AFTER_MAX: Duration = Duration::from_millis(5);

/// The yielding time before a sleep of a rank with a core of its own, after a sleep that
/// lasted `slept` (`rung`: ended by a peer's delivery), learned as an adaptive lock learns
/// its spin: a sleep rung sooner than the rank had yielded before it (`current`) would
/// have been caught by yielding that long again, so the next wait yields twice as long (up
/// to [`BLOCK_AFTER_MAX`]) before it sleeps; a longer sleep (or one that timed out) halves
/// it back towards `base` (`WEFT_BLOCK_AFTER_US`; its default 0 stays 0: a pinned rank
/// sleeps at once, see [`auto_sleeps`]). Two unpinned partners of a ping-pong on a loaded
/// node otherwise settle into both falling asleep on every exchange and waking each other
/// (np 2, 8 B, 13 other runnable tasks on 2 cores: 0.19 -> 131 us), where yielding
/// partners keep meeting.
pub fn learned_block_after(
    current: Duration,
    base: Duration,
    slept: Duration,
    rung: bool,
) -> Duration {
    if rung && slept < current.max(base) {
        (current.max(base) * 2).min(BLOCK_AFTER_MAX.max(base))
    } else {
        (current / 2).max(base)
    }
}

/// The runnable tasks of a `/proc/loadavg` text (`0.52 0.58 0.59 3/456 12345`: the numerator
/// of the fourth field); None when the text is not that.
pub fn runnable_in_loadavg(text: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(text).ok()?;
    let field = text.split_ascii_whitespace().nth(3)?;
    let (running, total) = field.split_once('/')?;
    total.parse::<u64>().ok()?;
    running.parse().ok()
}

/// The node's `/proc/loadavg`, opened once at setup and read again in place.
pub struct LoadProbe {
    file: std::fs::File,
}

impl LoadProbe {
    /// Opens `/proc/loadavg` (None where there is none: `auto` then sleeps only after
    /// [`IDLE_SLEEP_AFTER`]).
    pub fn open() -> Option<LoadProbe> {
        let probe = LoadProbe {
            file: std::fs::File::open("/proc/loadavg").ok()?,
        };
        probe.runnable().map(|_| probe)
    }

    /// The node's runnable tasks now (one `pread` of a few dozen bytes).
    pub fn runnable(&self) -> Option<u32> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 128];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        runnable_in_loadavg(&buf[..n])
    }
}

/// Cores online on the node.
pub fn online_cores() -> u32 {
    weft_transport::shm::affinity::online_cpus().max(1) as u32
}

/// Cores this process may use.
pub fn usable_cores() -> u32 {
    crate::bind::usable_cores().max(1) as u32
}

/// `weft info`'s line: what `WEFT_BLOCK=auto` would decide now for a job of `local_ranks`
/// awake ranks on this node (the reading process stands for one of them).
pub fn explain_now(local_ranks: u32) -> String {
    let Some(runnable) = LoadProbe::open().and_then(|p| p.runnable()) else {
        return "no /proc/loadavg: sleep only after a long idle wait".into();
    };
    // This process is runnable and counted; the job's other ranks are not running yet.
    let load = NodeLoad {
        runnable: runnable.saturating_sub(1) + local_ranks.max(1),
        ours_awake: local_ranks.max(1),
        usable_cores: usable_cores(),
        online_cores: online_cores(),
    };
    format!(
        "now {} runnable tasks besides this job's {} ranks on {} usable of {} online cores: {}",
        load.others(),
        load.ours_awake,
        load.usable_cores,
        load.online_cores,
        if others_compete(load) {
            "others compete, waits would sleep"
        } else {
            "nobody else competes, waits would spin and yield"
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(runnable: u32, ours_awake: u32, usable: u32, online: u32) -> NodeLoad {
        NodeLoad {
            runnable,
            ours_awake,
            usable_cores: usable,
            online_cores: online,
        }
    }

    #[test]
    fn a_job_alone_never_competes_oversubscribed_or_not() {
        // np 2 on 2 cores, np 4 on 2 cores (all awake, or two asleep), np 1.
        assert!(!others_compete(load(2, 2, 2, 2)));
        assert!(!others_compete(load(4, 4, 2, 2)));
        assert!(!others_compete(load(2, 2, 2, 2)));
        assert!(!others_compete(load(1, 1, 2, 2)));
        // Fewer runnable than our awake ranks (one blocked in a system call).
        assert!(!others_compete(load(1, 4, 2, 2)));
    }

    #[test]
    fn spinners_beside_the_job_compete() {
        // Two spinners beside np 2 and np 4 on 2 cores; np 4 with two ranks asleep.
        assert!(others_compete(load(4, 2, 2, 2)));
        assert!(others_compete(load(6, 4, 2, 2)));
        assert!(others_compete(load(4, 2, 2, 2)));
        // One spinner beside np 2: three tasks for two cores.
        assert!(others_compete(load(3, 2, 2, 2)));
        // One other task beside one rank on 2 cores: a core for each.
        assert!(!others_compete(load(2, 1, 2, 2)));
    }

    #[test]
    fn a_big_node_with_free_cores_does_not_compete() {
        assert!(!others_compete(load(12, 2, 64, 64)));
        assert!(others_compete(load(70, 8, 64, 64)));
        assert!(!others_compete(load(64, 8, 64, 64)));
    }

    #[test]
    fn a_process_bound_to_few_cores_counts_its_share_of_the_others() {
        // 2 of 64 cores; 31 other tasks spread over 64 cores: one on ours (rounded up).
        let l = load(33, 2, 2, 64);
        assert_eq!(l.others(), 31);
        assert_eq!(l.others_on_my_cores(), 1);
        assert!(others_compete(l));
        // Nothing else runnable.
        assert!(!others_compete(load(2, 2, 2, 64)));
        // Nonsense counts do not crash.
        assert!(!others_compete(load(0, 0, 0, 0)));
        assert!(others_compete(load(u32::MAX, 0, 0, 0)));
    }

    #[test]
    fn auto_sleeps_at_once_only_where_yields_lose_the_core_to_competitors() {
        let after = Duration::from_micros(200);
        let us = Duration::from_micros;
        // Yielding at once (oversubscribed): sleep at once under competition when a yield
        // lost the core; never before the long idle time without competitors.
        assert!(auto_sleeps(Some(true), true, true, us(0), after));
        assert!(!auto_sleeps(Some(true), true, false, us(0), after));
        assert!(auto_sleeps(Some(true), true, false, us(200), after));
        assert!(!auto_sleeps(Some(false), true, true, us(0), after));
        assert!(!auto_sleeps(Some(false), true, true, us(19_999), after));
        assert!(!auto_sleeps(None, true, true, us(0), after));
        // A core of its own: only after block_after of yielding, under competition.
        assert!(!auto_sleeps(Some(true), false, true, us(199), after));
        assert!(auto_sleeps(Some(true), false, false, us(200), after));
        assert!(!auto_sleeps(Some(false), false, true, us(5_000), after));
        // Long idle: sleep whatever the load.
        for c in [None, Some(false), Some(true)] {
            for at_once in [false, true] {
                for lost in [false, true] {
                    assert!(auto_sleeps(c, at_once, lost, IDLE_SLEEP_AFTER, after));
                }
            }
        }
    }

    #[test]
    fn the_load_is_read_only_where_the_decision_needs_it() {
        let after = Duration::from_micros(200);
        let us = Duration::from_micros;
        assert!(auto_needs_load(true, true, us(0), after));
        assert!(
            !auto_needs_load(true, false, us(0), after),
            "yields keep the core"
        );
        assert!(
            !auto_needs_load(false, true, us(100), after),
            "own core, early"
        );
        assert!(auto_needs_load(false, false, us(200), after));
        assert!(
            !auto_needs_load(true, true, IDLE_SLEEP_AFTER, after),
            "long idle"
        );
        // Wherever the load is not read, the answer does not depend on it.
        for y in [us(0), us(100), us(200), us(5_000), IDLE_SLEEP_AFTER] {
            for at_once in [false, true] {
                for lost in [false, true] {
                    if !auto_needs_load(at_once, lost, y, after) {
                        assert_eq!(
                            auto_sleeps(Some(true), at_once, lost, y, after),
                            auto_sleeps(Some(false), at_once, lost, y, after)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn short_woken_sleeps_lengthen_the_yield_before_sleeping_and_long_ones_shorten_it() {
        let us = Duration::from_micros;
        let base = us(200);
        // Woken sooner than it had yielded: yield twice as long next time, up to the cap.
        let mut a = learned_block_after(base, base, us(50), true);
        assert_eq!(a, us(400));
        for _ in 0..10 {
            a = learned_block_after(a, base, us(50), true);
        }
        assert_eq!(a, BLOCK_AFTER_MAX);
        // A long sleep, a timeout: halve back to the base, never below.
        assert_eq!(
            learned_block_after(a, base, us(6_000), true),
            BLOCK_AFTER_MAX / 2
        );
        assert_eq!(learned_block_after(us(400), base, us(50), false), base);
        assert_eq!(learned_block_after(base, base, us(10_000), true), base);
        // The default base, 0: nothing is learned, a rank sleeps where it would yield.
        let zero = Duration::ZERO;
        assert_eq!(learned_block_after(zero, zero, us(1), true), zero);
        assert_eq!(learned_block_after(zero, zero, us(9_000), false), zero);
        assert!(auto_sleeps(Some(true), false, false, zero, zero));
        // A base above the cap stays the base.
        let big = Duration::from_millis(50);
        assert_eq!(learned_block_after(big, big, us(50), true), big);
    }

    #[test]
    fn block_after_defaults_by_the_way_a_rank_waits_and_a_set_value_applies_to_all() {
        let us = Duration::from_micros;
        // Unset: a rank with a core of its own sleeps where it would first yield, a rank
        // that yields at once yields its 200 us first.
        assert_eq!(block_after(None, false), Duration::ZERO);
        assert_eq!(block_after(None, true), AT_ONCE_BLOCK_AFTER);
        let at_once = block_after(None, true);
        assert!(!auto_sleeps(Some(true), true, false, us(199), at_once));
        assert!(!auto_needs_load(true, false, us(199), at_once));
        assert!(auto_sleeps(Some(true), true, false, us(200), at_once));
        assert!(auto_sleeps(
            Some(true),
            false,
            false,
            us(0),
            block_after(None, false)
        ));
        // Set, whatever its value (0 included), it applies to both kinds of rank.
        for given in [us(0), us(50), us(1_000)] {
            for yields_at_once in [false, true] {
                let after = block_after(Some(given), yields_at_once);
                assert_eq!(after, given);
                assert!(auto_sleeps(Some(true), yields_at_once, false, given, after));
                if given > Duration::ZERO {
                    let before = given - us(1);
                    assert!(!auto_sleeps(
                        Some(true),
                        yields_at_once,
                        false,
                        before,
                        after
                    ));
                }
            }
        }
    }

    #[test]
    fn the_runnable_count_is_read_from_loadavg() {
        assert_eq!(
            runnable_in_loadavg(b"1.66 1.58 1.73 3/456 12345\n"),
            Some(3)
        );
        assert_eq!(runnable_in_loadavg(b"0.00 0.00 0.00 1/80 7"), Some(1));
        assert_eq!(runnable_in_loadavg(b""), None);
        assert_eq!(runnable_in_loadavg(b"1.0 1.0 1.0"), None);
        assert_eq!(runnable_in_loadavg(b"1.0 1.0 1.0 x/9 1"), None);
        assert_eq!(runnable_in_loadavg(b"1.0 1.0 1.0 3 1"), None);
        assert_eq!(runnable_in_loadavg(b"1.0 1.0 1.0 3/ 1"), None);
        assert_eq!(runnable_in_loadavg(&[0xff, 0xfe]), None);
    }

    #[test]
    fn this_node_has_a_load_to_read() {
        // Linux always has /proc/loadavg; the reading process is runnable itself.
        let probe = LoadProbe::open().expect("/proc/loadavg");
        assert!(probe.runnable().expect("a count") >= 1);
        assert!(usable_cores() >= 1 && online_cores() >= 1);
    }
}
