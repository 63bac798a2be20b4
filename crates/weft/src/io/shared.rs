//! The shared file pointer (MPI-4.1 §14.4.4): one position that every rank of the file's
//! communicator moves, kept in a small hidden file beside the data file (or in the temporary
//! directory when the data file's directory cannot take it and the ranks share one node),
//! read and advanced under an exclusive byte-range lock. No rank has to make progress for
//! another's access, and ranks on other nodes of a shared file system reach it alike.
//! Every rank opens the hidden file on its first use (O_CREAT; an empty file is position
//! 0); the file's close removes it.

use super::posix::{os_error, read_full, write_full, RangeLock};
use std::fs::File as OsFile;
use std::path::{Path, PathBuf};
use weft_core::Result;

/// A shared file pointer's home.
pub(crate) struct SharedPointer {
    path: PathBuf,
    file: Option<OsFile>,
}

impl SharedPointer {
    /// The pointer of data file `data` for the open instance `nonce` (the same on every
    /// rank), beside the data file or, with `local_fallback`, in the temporary directory if
    /// the data file's directory is not writable.
    pub(super) fn new(data: &Path, nonce: u64, local_fallback: bool) -> SharedPointer {
        let name = data
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let hidden = format!(".{name}.weft-shfp-{nonce:016x}");
        let dir = data.parent().filter(|d| !d.as_os_str().is_empty());
        let beside = dir.map_or_else(|| PathBuf::from(&hidden), |d| d.join(&hidden));
        let writable = dir.unwrap_or(Path::new(".")).metadata().is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            // A quick test; the open reports the real outcome.
            m.mode() & 0o222 != 0
        });
        let path = if writable || !local_fallback {
            beside
        } else {
            std::env::temp_dir().join(&hidden)
        };
        SharedPointer { path, file: None }
    }

    fn file(&mut self) -> Result<&OsFile> {
        if self.file.is_none() {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)
                .map_err(|e| os_error("open shared file pointer", &self.path, e))?;
            self.file = Some(f);
        }
        Ok(self.file.as_ref().expect("opened"))
    }

    /// Adds `delta` to the pointer; returns its value before (a fetch-and-add).
    pub(super) fn fetch_add(&mut self, delta: u64) -> Result<u64> {
        self.update(|v| v.saturating_add(delta))
    }

    /// The pointer's value.
    pub(super) fn get(&mut self) -> Result<u64> {
        self.update(|v| v)
    }

    /// Sets the pointer; returns its value before.
    pub(super) fn set(&mut self, value: u64) -> Result<u64> {
        self.update(|_| value)
    }

    fn update(&mut self, f: impl FnOnce(u64) -> u64) -> Result<u64> {
        let path = self.path.clone();
        let file = self.file()?;
        let _lock = RangeLock::take(file, &path, 0, 8, true)?;
        let mut b = [0u8; 8];
        let n = read_full(file, &mut b, 0).map_err(|e| os_error("pread", &path, e))?;
        let old = if n == 8 { u64::from_le_bytes(b) } else { 0 };
        let new = f(old);
        if new != old || n != 8 {
            write_full(file, &new.to_le_bytes(), 0).map_err(|e| os_error("pwrite", &path, e))?;
        }
        Ok(old)
    }

    /// Removes the hidden file (one rank, at the file's close, after every rank is done).
    pub(super) fn remove(&mut self) {
        self.file = None;
        let _ = std::fs::remove_file(&self.path);
    }

    /// Closes this rank's descriptor.
    pub(super) fn close(&mut self) {
        self.file = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_handles_share_one_position() {
        let data = std::env::temp_dir().join(format!("weft-io-shfp-{}", std::process::id()));
        let mut a = SharedPointer::new(&data, 7, true);
        let mut b = SharedPointer::new(&data, 7, true);
        assert_eq!(a.fetch_add(10).unwrap(), 0);
        assert_eq!(b.fetch_add(5).unwrap(), 10);
        assert_eq!(a.get().unwrap(), 15);
        assert_eq!(b.set(3).unwrap(), 15);
        assert_eq!(a.get().unwrap(), 3);
        a.close();
        b.remove();
        assert!(!b.path.exists());
    }
}
