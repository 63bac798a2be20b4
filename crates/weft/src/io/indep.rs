//! Independent access: one rank moves its access list between a contiguous buffer (the
//! stream bytes in order) and the file by itself. Pieces that lie close together are
//! moved by data sieving (read the span once; for a write, patch it and write it back under
//! an exclusive byte-range lock, so ranks sieving neighbouring pieces do not undo each
//! other's writes); scattered ones by one positioned call each. In atomic mode
//! (MPI_File_set_atomicity) the whole extent of the access is locked for its duration:
//! shared for a read, exclusive for a write. Used by the blocking calls, by the background
//! thread of the nonblocking ones and by collective calls that do not aggregate.

use super::posix::{os_error, read_full, write_full, RangeLock};
use super::segs::SegList;
use std::fs::File as OsFile;
use std::path::Path;
use weft_core::Result;

/// Where and how an independent access runs.
#[derive(Clone, Copy)]
pub(crate) struct Access<'f> {
    pub file: &'f OsFile,
    pub path: &'f Path,
    /// Largest span data sieving reads at once (0: never sieve).
    pub sieve_bytes: u64,
    /// Lock the access's extent for its duration.
    pub atomic: bool,
}

/// A run of pieces moved together: indices `first..end` of the flat piece list and the
/// file span they lie in.
struct Group {
    first: usize,
    end: usize,
    lo: u64,
    hi: u64,
    data: u64,
}

impl Group {
    /// Sieve it: more than one piece, and the data fills at least half of the span.
    fn sieve(&self) -> bool {
        self.end - self.first > 1 && self.data * 2 >= self.hi - self.lo
    }
}

/// The pieces as (file offset, length, stream offset), and their groups: consecutive
/// pieces whose span stays within `sieve_bytes`.
fn groups(list: &SegList, sieve_bytes: u64) -> (Vec<(u64, u64, u64)>, Vec<Group>) {
    let mut pieces = Vec::new();
    list.for_each(|a, n, p| pieces.push((a, n, p)));
    let mut out: Vec<Group> = Vec::new();
    for (i, &(a, n, _)) in pieces.iter().enumerate() {
        if let Some(g) = out.last_mut() {
            let hi = g.hi.max(a + n);
            if a >= g.lo && hi - g.lo <= sieve_bytes {
                g.end = i + 1;
                g.hi = hi;
                g.data += n;
                continue;
            }
        }
        out.push(Group {
            first: i,
            end: i + 1,
            lo: a,
            hi: a + n,
            data: n,
        });
    }
    (pieces, out)
}

/// Writes `data` (the stream bytes of `list`, in order) to the file.
pub(crate) fn write(acc: Access<'_>, list: &SegList, data: &[u8]) -> Result<()> {
    debug_assert_eq!(data.len() as u64, list.bytes());
    let Some((lo, hi)) = list.extent() else {
        return Ok(());
    };
    let _whole = if acc.atomic {
        Some(RangeLock::take(acc.file, acc.path, lo, hi, true)?)
    } else {
        None
    };
    if list.segs().len() == 1 && list.segs()[0].count == 1 {
        return write_full(acc.file, data, lo).map_err(|e| os_error("pwrite", acc.path, e));
    }
    let (pieces, groups) = groups(list, acc.sieve_bytes);
    let mut span = Vec::new();
    for g in &groups {
        if g.sieve() {
            // Read, patch, write back under a lock of the span (unless the whole extent
            // is locked already: a second lock by the same owner would end with the first).
            let _lock = if acc.atomic {
                None
            } else {
                Some(RangeLock::take(acc.file, acc.path, g.lo, g.hi, true)?)
            };
            span.clear();
            span.resize((g.hi - g.lo) as usize, 0);
            read_full(acc.file, &mut span, g.lo).map_err(|e| os_error("pread", acc.path, e))?;
            for &(a, n, p) in &pieces[g.first..g.end] {
                let at = (a - g.lo) as usize;
                span[at..at + n as usize].copy_from_slice(&data[p as usize..(p + n) as usize]);
            }
            write_full(acc.file, &span, g.lo).map_err(|e| os_error("pwrite", acc.path, e))?;
        } else {
            for &(a, n, p) in &pieces[g.first..g.end] {
                write_full(acc.file, &data[p as usize..(p + n) as usize], a)
                    .map_err(|e| os_error("pwrite", acc.path, e))?;
            }
        }
    }
    Ok(())
}

/// Reads the stream bytes of `list` into `data`, in order; returns how many were read
/// before the end of the file (the bytes past it are left as they were).
pub(crate) fn read(acc: Access<'_>, list: &SegList, data: &mut [u8]) -> Result<u64> {
    debug_assert_eq!(data.len() as u64, list.bytes());
    let Some((lo, hi)) = list.extent() else {
        return Ok(0);
    };
    let _whole = if acc.atomic {
        Some(RangeLock::take(acc.file, acc.path, lo, hi, false)?)
    } else {
        None
    };
    if list.segs().len() == 1 && list.segs()[0].count == 1 {
        let n = read_full(acc.file, data, lo).map_err(|e| os_error("pread", acc.path, e))?;
        return Ok(n as u64);
    }
    let (pieces, groups) = groups(list, acc.sieve_bytes);
    let mut span = Vec::new();
    // Stream bytes read before the first piece that the end of the file cut.
    let mut done: Option<u64> = None;
    for g in &groups {
        if g.sieve() {
            span.clear();
            span.resize((g.hi - g.lo) as usize, 0);
            let got = read_full(acc.file, &mut span, g.lo)
                .map_err(|e| os_error("pread", acc.path, e))? as u64;
            for &(a, n, p) in &pieces[g.first..g.end] {
                let at = a - g.lo;
                let have = got.saturating_sub(at).min(n);
                data[p as usize..(p + have) as usize]
                    .copy_from_slice(&span[at as usize..(at + have) as usize]);
                if have < n && done.is_none() {
                    done = Some(p + have);
                }
            }
        } else {
            for &(a, n, p) in &pieces[g.first..g.end] {
                let got = read_full(acc.file, &mut data[p as usize..(p + n) as usize], a)
                    .map_err(|e| os_error("pread", acc.path, e))? as u64;
                if got < n && done.is_none() {
                    done = Some(p + got);
                }
            }
        }
        if done.is_some() && !list.overlaps() {
            // Sorted, disjoint pieces: everything after lies past the end too.
            break;
        }
    }
    Ok(done.unwrap_or(list.bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> (std::path::PathBuf, OsFile) {
        let p = std::env::temp_dir().join(format!("weft-io-indep-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let f = super::super::posix::open(&p, true, true, true, false).unwrap();
        (p, f)
    }

    #[test]
    fn sieved_and_scattered_writes_leave_the_holes_alone() {
        for sieve in [0u64, 1 << 20] {
            let (p, f) = tmp(&format!("w{sieve}"));
            write_full(&f, &[b'.'; 64], 0).unwrap();
            let acc = Access {
                file: &f,
                path: &p,
                sieve_bytes: sieve,
                atomic: false,
            };
            let mut l = SegList::new();
            l.push(2, 3, 8, 4); // [2,5) [10,13) [18,21) [26,29)
            l.push(60, 8, 0, 1); // past the end of the file
            write(acc, &l, b"aaabbbcccdddEEEEEEEE").unwrap();
            let got = std::fs::read(&p).unwrap();
            assert_eq!(
                &got[..],
                &b"..aaa.....bbb.....ccc.....ddd...............................EEEEEEEE"[..]
            );
            let mut back = vec![0u8; 20];
            assert_eq!(read(acc, &l, &mut back).unwrap(), 20);
            assert_eq!(&back, b"aaabbbcccdddEEEEEEEE");
            // A view that runs past the end: the bytes before it.
            let mut l2 = SegList::new();
            l2.push(60, 4, 6, 3); // [60,64) [66,70) [72,76): the file ends at 68
            let mut b2 = vec![0u8; 12];
            assert_eq!(read(acc, &l2, &mut b2).unwrap(), 6, "sieve {sieve}");
            std::fs::remove_file(&p).unwrap();
        }
    }

    #[test]
    fn atomic_accesses_lock_their_extent() {
        let (p, f) = tmp("atomic");
        let acc = Access {
            file: &f,
            path: &p,
            sieve_bytes: 1 << 20,
            atomic: true,
        };
        let mut l = SegList::new();
        l.push(0, 2, 4, 3);
        write(acc, &l, b"xxyyzz").unwrap();
        let mut b = [0u8; 6];
        assert_eq!(read(acc, &l, &mut b).unwrap(), 6);
        assert_eq!(&b, b"xxyyzz");
        std::fs::remove_file(&p).unwrap();
    }
}
