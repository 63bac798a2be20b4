//! The symmetric heap's allocator: deterministic first-fit over offsets, so PEs that make the
//! same calls in the same order get the same offsets (that is what makes the heap symmetric).
//! Pure bookkeeping: no memory is touched, no I/O, no `unsafe`.

use std::collections::BTreeMap;
use weft_core::{Error, ErrorKind, Result};

/// Smallest alignment of every block (enough for any C scalar and a cache line's halves).
pub const MIN_ALIGN: usize = 16;

/// Offsets of live and free blocks in a heap of a fixed size.
#[derive(Clone, Debug)]
pub struct Allocator {
    size: usize,
    /// Free ranges: start → length, coalesced.
    free: BTreeMap<usize, usize>,
    /// Live blocks: start → length.
    live: BTreeMap<usize, usize>,
}

impl Allocator {
    /// An empty heap of `size` bytes.
    pub fn new(size: usize) -> Allocator {
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(0, size);
        }
        Allocator {
            size,
            free,
            live: BTreeMap::new(),
        }
    }

    /// Bytes in live blocks.
    pub fn used_bytes(&self) -> usize {
        self.live.values().sum()
    }

    /// Allocates `bytes` (at least 1) aligned to `align` (a power of two); returns the offset.
    pub fn alloc(&mut self, bytes: usize, align: usize) -> Result<usize> {
        if !align.is_power_of_two() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("symmetric allocation alignment {align}: must be a power of two"),
            ));
        }
        let align = align.max(MIN_ALIGN);
        let len = bytes
            .max(1)
            .checked_next_multiple_of(MIN_ALIGN)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("symmetric allocation of {bytes} bytes is too large"),
                )
            })?;
        let found = self.free.iter().find_map(|(&start, &flen)| {
            let at = start.checked_next_multiple_of(align)?;
            (at.checked_add(len)? <= start + flen).then_some((start, flen, at))
        });
        let Some((start, flen, at)) = found else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "symmetric heap exhausted: {bytes} bytes (alignment {align}) do not fit in the {} bytes of the heap (WEFT_SYMMETRIC_SIZE or SHMEM_SYMMETRIC_SIZE; {} in use)",
                    self.size,
                    self.used_bytes()
                ),
            ));
        };
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        if at + len < start + flen {
            self.free.insert(at + len, start + flen - at - len);
        }
        self.live.insert(at, len);
        Ok(at)
    }

    /// Frees the block at `offset`.
    pub fn free(&mut self, offset: usize) -> Result<()> {
        let len = self.live.remove(&offset).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("symmetric free of offset {offset}: no block starts there"),
            )
        })?;
        let (mut start, mut end) = (offset, offset + len);
        if let Some((&p, &plen)) = self.free.range(..start).next_back() {
            if p + plen == start {
                self.free.remove(&p);
                start = p;
            }
        }
        if let Some(&nlen) = self.free.get(&end) {
            self.free.remove(&end);
            end += nlen;
        }
        self.free.insert(start, end - start);
        Ok(())
    }

    /// Length of the live block at `offset`.
    pub fn block_bytes(&self, offset: usize) -> Option<usize> {
        self.live.get(&offset).copied()
    }

    /// Resizes the block at `offset`: in place when it shrinks or the following range is
    /// free, otherwise a new block (the caller copies the data). Returns the new offset.
    pub fn realloc(&mut self, offset: usize, bytes: usize) -> Result<usize> {
        let old = self.block_bytes(offset).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("symmetric realloc of offset {offset}: no block starts there"),
            )
        })?;
        let len = bytes.max(1).next_multiple_of(MIN_ALIGN);
        if len <= old {
            self.live.insert(offset, len);
            if len < old {
                // Give the tail back through free() so it coalesces with its neighbours.
                self.live.insert(offset + len, old - len);
                self.free(offset + len)?;
            }
            return Ok(offset);
        }
        let end = offset + old;
        if let Some(&nlen) = self.free.get(&end) {
            if old + nlen >= len {
                self.free.remove(&end);
                if old + nlen > len {
                    self.free.insert(offset + len, old + nlen - len);
                }
                self.live.insert(offset, len);
                return Ok(offset);
            }
        }
        let new = self.alloc(bytes, MIN_ALIGN)?;
        self.free(offset)?;
        Ok(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_calls_same_offsets_and_reuse() {
        let mut a = Allocator::new(1 << 20);
        let x = a.alloc(100, 8).unwrap();
        let y = a.alloc(5000, 4096).unwrap();
        assert_eq!(x, 0);
        assert_eq!(y % 4096, 0);
        let z = a.alloc(1, 1).unwrap();
        assert_eq!(z, 112, "fills the gap before the aligned block");
        a.free(x).unwrap();
        assert_eq!(a.alloc(50, 16).unwrap(), 0);
        let mut b = Allocator::new(1 << 20);
        let ys: Vec<usize> = [100, 5000, 1]
            .iter()
            .map(|&n| b.alloc(n, 8).unwrap())
            .collect();
        let mut c = Allocator::new(1 << 20);
        let zs: Vec<usize> = [100, 5000, 1]
            .iter()
            .map(|&n| c.alloc(n, 8).unwrap())
            .collect();
        assert_eq!(ys, zs);
    }

    #[test]
    fn exhaustion_and_bad_free_are_errors() {
        let mut a = Allocator::new(4096);
        let x = a.alloc(4000, 16).unwrap();
        let e = a.alloc(200, 16).unwrap_err();
        assert!(e.message().contains("exhausted"), "{e}");
        assert!(a.free(x + 16).is_err());
        a.free(x).unwrap();
        assert!(a.free(x).is_err(), "double free");
        assert_eq!(a.alloc(4096, 16).unwrap(), 0, "free ranges coalesced");
        assert!(a.alloc(1, 3).is_err());
    }

    #[test]
    fn realloc_grows_in_place_or_moves() {
        let mut a = Allocator::new(1 << 16);
        let x = a.alloc(64, 16).unwrap();
        assert_eq!(a.realloc(x, 128).unwrap(), x, "room after it");
        let y = a.alloc(64, 16).unwrap();
        let x2 = a.realloc(x, 4096).unwrap();
        assert_ne!(x2, x, "blocked by y: moved");
        assert_eq!(a.block_bytes(x2), Some(4096));
        assert_eq!(a.realloc(x2, 16).unwrap(), x2);
        assert_eq!(a.block_bytes(x2), Some(16));
        a.free(y).unwrap();
        a.free(x2).unwrap();
        assert_eq!(a.used_bytes(), 0);
        assert_eq!(a.alloc(1 << 16, 16).unwrap(), 0);
    }
}
