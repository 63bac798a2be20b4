//! The POSIX side of file I/O: opening with the access mode's flags, positioned reads and
//! writes that finish what they start, size changes, and byte-range locks (open file
//! description locks, so each rank's own open of the file holds its own locks). Operating
//! system errors become weft errors of the kind that names them (no such file, access,
//! no space, ...). The only `unsafe` of `weft::io` is here: `posix_fallocate` and `fcntl`.

use std::fs::File as OsFile;
use std::io::ErrorKind as IoKind;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use weft_core::{Error, ErrorKind, Result};

/// The weft error for operating-system error `e` of `op` on `path`, by errno.
pub(crate) fn os_error(op: &str, path: &Path, e: std::io::Error) -> Error {
    let kind = match e.raw_os_error() {
        Some(libc::ENOENT) => ErrorKind::FileNotFound,
        Some(libc::EEXIST) => ErrorKind::FileExists,
        Some(libc::EACCES | libc::EPERM) => ErrorKind::FileAccess,
        Some(libc::ENOSPC) => ErrorKind::NoSpace,
        Some(libc::EDQUOT) => ErrorKind::Quota,
        Some(libc::EROFS) => ErrorKind::ReadOnly,
        Some(libc::ETXTBSY | libc::EBUSY) => ErrorKind::FileInUse,
        Some(libc::ENAMETOOLONG | libc::ENOTDIR | libc::EISDIR | libc::ELOOP) => ErrorKind::BadFile,
        _ => ErrorKind::Io,
    };
    Error::new(kind, format!("{op} {}: {e}", path.display()))
}

/// Opens `path` for reading and/or writing; `create` adds O_CREAT (mode 0666 less the
/// umask), `exclusive` O_EXCL.
pub(crate) fn open(
    path: &Path,
    read: bool,
    write: bool,
    create: bool,
    exclusive: bool,
) -> Result<OsFile> {
    let mut o = std::fs::OpenOptions::new();
    o.read(read).write(write).mode(0o666);
    if create && exclusive {
        o.create_new(true);
    } else if create {
        o.create(true);
    }
    let f = o.open(path).map_err(|e| os_error("open", path, e))?;
    let meta = f.metadata().map_err(|e| os_error("fstat", path, e))?;
    if meta.is_dir() {
        return Err(Error::new(
            ErrorKind::BadFile,
            format!("open {}: is a directory", path.display()),
        ));
    }
    Ok(f)
}

/// Reads into `buf` from file offset `off` until it is full or the file ends; returns the
/// bytes read (less than `buf.len()` only at the end of the file).
pub(crate) fn read_full(f: &OsFile, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == IoKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Writes all of `buf` at file offset `off`.
pub(crate) fn write_full(f: &OsFile, buf: &[u8], off: u64) -> std::io::Result<()> {
    f.write_all_at(buf, off)
}

/// The file's size in bytes.
pub(crate) fn size(f: &OsFile, path: &Path) -> Result<u64> {
    f.metadata()
        .map(|m| m.len())
        .map_err(|e| os_error("fstat", path, e))
}

/// Makes sure the first `bytes` of the file have storage, growing the file to `bytes` if it
/// is shorter (MPI_File_preallocate); never shrinks it.
pub(crate) fn preallocate(f: &OsFile, path: &Path, bytes: u64) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let len = i64::try_from(bytes).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "preallocate {}: {bytes} bytes is beyond off_t",
                path.display()
            ),
        )
    })?;
    // SAFETY: posix_fallocate reads no memory of ours; the descriptor is open for the call.
    let rc = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, len) };
    if rc != 0 {
        return Err(os_error(
            "posix_fallocate",
            path,
            std::io::Error::from_raw_os_error(rc),
        ));
    }
    Ok(())
}

/// A byte-range lock `[lo, hi)` on an open file, released on drop. Locks are open file
/// description locks (`F_OFD_SETLKW`): they belong to this open of the file, so ranks of
/// one node (each with its own open) exclude each other, and closing another descriptor of
/// the file does not drop them.
pub(crate) struct RangeLock<'f> {
    file: &'f OsFile,
    lo: u64,
    len: u64,
}

impl<'f> RangeLock<'f> {
    /// Waits for and takes a lock on `[lo, hi)`: exclusive for `write`, shared otherwise.
    pub(crate) fn take(
        file: &'f OsFile,
        path: &Path,
        lo: u64,
        hi: u64,
        write: bool,
    ) -> Result<RangeLock<'f>> {
        let len = hi.saturating_sub(lo);
        let kind = if write { libc::F_WRLCK } else { libc::F_RDLCK };
        lock(file, lo, len, kind)
            .map_err(|e| os_error(&format!("fcntl lock [{lo}, {hi}) of"), path, e))?;
        Ok(RangeLock { file, lo, len })
    }
}

impl Drop for RangeLock<'_> {
    fn drop(&mut self) {
        // Unlocking an owned range cannot fail on Linux but for a bad descriptor, which the
        // borrow rules out.
        let _ = lock(self.file, self.lo, self.len, libc::F_UNLCK);
    }
}

/// One `fcntl(F_OFD_SETLKW)` call on `[lo, lo + len)` (`len` 0: to the end of any size),
/// retried when a signal interrupts the wait.
fn lock(file: &OsFile, lo: u64, len: u64, kind: libc::c_int) -> std::io::Result<()> {
    // SAFETY: flock is plain old data; all-zero is a valid value (l_pid must be 0 for OFD
    // locks).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = lo.min(i64::MAX as u64) as libc::off_t;
    fl.l_len = len.min(i64::MAX as u64) as libc::off_t;
    loop {
        // SAFETY: `fl` is a valid flock the call reads and may write; the descriptor is
        // open while `file` is borrowed.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLKW, &mut fl) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != IoKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("weft-io-posix-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&d);
        d
    }

    #[test]
    fn errors_name_their_kind() {
        let p = tmp("missing");
        let e = open(&p, true, false, false, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FileNotFound, "{e}");
        let f = open(&p, true, true, true, true).unwrap();
        drop(f);
        let e = open(&p, true, true, true, true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FileExists, "{e}");
        let e = open(&std::env::temp_dir(), true, false, false, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadFile, "{e}");
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn reads_stop_at_the_end_and_preallocate_grows() {
        let p = tmp("rw");
        let f = open(&p, true, true, true, false).unwrap();
        write_full(&f, b"hello", 10).unwrap();
        let mut b = [7u8; 20];
        assert_eq!(read_full(&f, &mut b, 8).unwrap(), 7);
        assert_eq!(&b[..7], b"\0\0hello");
        preallocate(&f, &p, 4096).unwrap();
        assert_eq!(size(&f, &p).unwrap(), 4096);
        preallocate(&f, &p, 100).unwrap();
        assert_eq!(size(&f, &p).unwrap(), 4096, "never shrinks");
        let l = RangeLock::take(&f, &p, 0, 100, true).unwrap();
        drop(l);
        std::fs::remove_file(&p).unwrap();
    }
}
