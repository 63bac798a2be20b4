//! Naming and removal of a job's shared-memory segments in `/dev/shm`.
//!
//! The runtime names every segment `weft-<job_id>-<anything>`; the launcher removes them all
//! when the job ends, however it ends. Depends on nothing but std.

use std::path::Path;

const SHM_DIR: &str = "/dev/shm";

/// `/dev/shm/weft-<job_id>`: every segment of the job starts with this path.
pub fn shm_prefix(job_id: &str) -> String {
    format!("{SHM_DIR}/weft-{job_id}")
}

/// Removes every `/dev/shm/weft-<job_id>*` entry; returns how many were removed.
pub fn remove_job_segments(job_id: &str) -> usize {
    remove_with_prefix(Path::new(SHM_DIR), &format!("weft-{job_id}"))
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
}
