//! Naming and removal of a job's shared-memory segments in `/dev/shm`, and the sweep of
//! segments whose job is gone.
//!
//! The runtime names every segment `weft-<job_id>-<anything>` and its creator unlinks it as
//! soon as every local rank has mapped it; the launcher (or a host's agent) removes whatever
//! is left of its job when the job ends, however it ends. What neither can remove — a
//! launcher or agent killed with SIGKILL between a segment's creation and the last rank's
//! attach, a whole node's processes killed at once — is swept: [`sweep_stale_segments`]
//! removes this user's `weft-*` entries that no live process holds (maps or has open). The
//! launcher and every agent sweep when a job starts, and `weft clean` does it on demand.
//! A segment in use always has a holder (its creator holds the descriptor from the moment
//! the name exists, then the mapping), so a live job's segments are never taken.
//! Depends on std and libc.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const SHM_DIR: &str = "/dev/shm";

/// `/dev/shm/weft-<job_id>`: every segment of the job starts with this path.
pub fn shm_prefix(job_id: &str) -> String {
    format!("{SHM_DIR}/weft-{job_id}")
}

/// Removes every `/dev/shm/weft-<job_id>*` entry; returns how many were removed.
pub fn remove_job_segments(job_id: &str) -> usize {
    remove_with_prefix(Path::new(SHM_DIR), &format!("weft-{job_id}"))
}

/// A `weft-*` entry of `/dev/shm` that no live process holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleSegment {
    /// Its path.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether it was removed (false for a dry run or when removal failed).
    pub removed: bool,
}

/// Entries younger than this are left alone by the sweep at job start (a margin on top of
/// the holder check; `weft clean` passes zero).
pub const SWEEP_MIN_AGE: Duration = Duration::from_secs(1);

/// Finds (and unless `dry_run` removes) this user's `/dev/shm/weft-*` entries older than
/// `min_age` that no live process maps or has open. Entries of other users are never
/// looked at. Cheap when nothing is stale: `/proc` is read only if some candidate exists.
pub fn sweep_stale_segments(dry_run: bool, min_age: Duration) -> Vec<StaleSegment> {
    sweep_in(Path::new(SHM_DIR), dry_run, min_age)
}

fn sweep_in(dir: &Path, dry_run: bool, min_age: Duration) -> Vec<StaleSegment> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let now = SystemTime::now();
    let mut candidates: Vec<(PathBuf, u64, u64, u64)> = Vec::new();
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with("weft-") {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.uid() != me || !meta.file_type().is_file() {
            continue;
        }
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        if age < min_age {
            continue;
        }
        candidates.push((e.path(), meta.dev(), meta.ino(), meta.len()));
    }
    if candidates.is_empty() {
        return Vec::new();
    }
    // Two scans: `/proc/<pid>/maps` is read a page at a time, so a mapping that moves while
    // it is read (a creator aligning its segment with mremap) can be missed by one scan; a
    // segment counts as unheld only when neither scan saw a holder.
    let held = held_inodes(dir);
    let candidates: Vec<_> = candidates
        .into_iter()
        .filter(|(_, dev, ino, _)| !held.contains(&(*dev, *ino)))
        .collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    let held = held_inodes(dir);
    let mut stale = Vec::new();
    for (path, dev, ino, bytes) in candidates {
        if held.contains(&(dev, ino)) {
            continue;
        }
        // Checked again right before removal: a name replaced since (same path, new
        // object) belongs to someone else now.
        let same = std::fs::symlink_metadata(&path).is_ok_and(|m| m.dev() == dev && m.ino() == ino);
        if !same {
            continue;
        }
        let removed = !dry_run && std::fs::remove_file(&path).is_ok();
        stale.push(StaleSegment {
            path,
            bytes,
            removed,
        });
    }
    stale
}

/// (device, inode) of every file under `dir` that a process visible in `/proc` maps or has
/// open.
fn held_inodes(dir: &Path) -> HashSet<(u64, u64)> {
    let mut held = HashSet::new();
    let dir_text = dir.to_string_lossy().into_owned();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return held;
    };
    for p in procs.flatten() {
        let name = p.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let base = p.path();
        // Mappings: "addr perms offset dev inode path"; the inode is the fifth field.
        if let Ok(maps) = std::fs::read_to_string(base.join("maps")) {
            for line in maps.lines().filter(|l| l.contains(&dir_text)) {
                let mut f = line.split_whitespace();
                let (Some(dev), Some(ino)) = (f.nth(3), f.next()) else {
                    continue;
                };
                if let (Some(dev), Ok(ino)) = (parse_maps_dev(dev), ino.parse::<u64>()) {
                    held.insert((dev, ino));
                }
            }
        }
        // Open descriptors (a creator between shm_open and mmap holds only this).
        if let Ok(fds) = std::fs::read_dir(base.join("fd")) {
            for fd in fds.flatten() {
                let Ok(target) = std::fs::read_link(fd.path()) else {
                    continue;
                };
                if !target.starts_with(dir) {
                    continue;
                }
                if let Ok(m) = std::fs::metadata(fd.path()) {
                    held.insert((m.dev(), m.ino()));
                }
            }
        }
    }
    held
}

/// The device of a `/proc/<pid>/maps` line ("major:minor" in hex) as `st_dev` encodes it.
fn parse_maps_dev(text: &str) -> Option<u64> {
    let (major, minor) = text.split_once(':')?;
    let major = u32::from_str_radix(major, 16).ok()?;
    let minor = u32::from_str_radix(minor, 16).ok()?;
    Some(libc::makedev(major, minor))
}

fn remove_with_prefix(dir: &Path, prefix: &str) -> usize {
    // An empty job id would match every job's segments.
    if prefix.len() <= "weft-".len() {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let path = e.path();
        let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
        let r = if is_dir {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if r.is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_the_jobs_entries() {
        let dir = std::env::temp_dir().join(format!("weft-shm-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in [
            "weft-aaa111-x",
            "weft-aaa111-ring-3",
            "weft-bbb222-x",
            "other",
        ] {
            std::fs::write(dir.join(name), b"1").unwrap();
        }
        std::fs::create_dir_all(dir.join("weft-aaa111-d/sub")).unwrap();
        assert_eq!(remove_with_prefix(&dir, "weft-aaa111"), 3);
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["other", "weft-bbb222-x"]);
        assert_eq!(
            remove_with_prefix(&dir, "weft-"),
            0,
            "empty id removes nothing"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(shm_prefix("abc"), "/dev/shm/weft-abc");
    }

    #[test]
    fn the_sweep_takes_only_what_nobody_holds() {
        // A private folder of /dev/shm (not a `weft-*` file, so other sweeps pass it by):
        // a zero-age sweep of /dev/shm itself could race with jobs running beside the test.
        let pid = std::process::id();
        let private = Path::new(SHM_DIR).join(format!("weft-sweeptest{pid}"));
        std::fs::create_dir_all(&private).unwrap();
        let dir = private.as_path();
        let sweep_stale_segments = |dry_run, min_age| sweep_in(dir, dry_run, min_age);
        let stale = dir.join(format!("weft-sweeptest{pid}-stale"));
        let open = dir.join(format!("weft-sweeptest{pid}-open"));
        let mapped = dir.join(format!("weft-sweeptest{pid}-mapped"));
        for p in [&stale, &open, &mapped] {
            std::fs::write(p, [1u8; 4096]).unwrap();
        }
        let held_open = std::fs::File::open(&open).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .open(&mapped)
            .unwrap();
        // SAFETY: mapping one page of a file we just wrote; unmapped below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&f),
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        drop(f);
        let mine = |v: &[StaleSegment]| -> Vec<PathBuf> {
            v.iter()
                .filter(|s| {
                    s.path
                        .to_string_lossy()
                        .contains(&format!("sweeptest{pid}-"))
                })
                .map(|s| s.path.clone())
                .collect()
        };
        // Too young for the sweep at job start.
        assert!(mine(&sweep_stale_segments(true, Duration::from_secs(3600))).is_empty());
        let dry = sweep_stale_segments(true, Duration::ZERO);
        assert_eq!(mine(&dry), std::slice::from_ref(&stale));
        assert!(stale.exists(), "a dry run removes nothing");
        let wet = sweep_stale_segments(false, Duration::ZERO);
        assert_eq!(mine(&wet), std::slice::from_ref(&stale));
        assert!(!stale.exists() && open.exists() && mapped.exists());
        drop(held_open);
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(map, 4096) };
        let wet = sweep_stale_segments(false, Duration::ZERO);
        let mut got = mine(&wet);
        got.sort();
        let mut want = vec![mapped.clone(), open.clone()];
        want.sort();
        assert_eq!(got, want, "released segments are stale");
        assert!(!open.exists() && !mapped.exists());
        std::fs::remove_dir(dir).unwrap();
    }
}
