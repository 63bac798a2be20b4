//! An access list: the file byte ranges one rank's access touches, in the order of its data
//! stream, compressed into strided segments (`count` ranges of `len` bytes, `stride` apart),
//! so a vector-like view of a gigabyte is a handful of segments. File views keep their
//! displacements non-decreasing (MPI-4.1 §14.3), so a list is sorted by start; ranges of a
//! read may overlap ([`SegList::overlaps`]), those of a write may not.
//!
//! Pure data: building (merging as it goes), clipping to a window of the file with the
//! stream position of each piece, counting what lies below the end of a file, and the
//! wire form two-phase I/O sends aggregators.

use std::ops::Range;

/// `count` ranges of `len` bytes, the `j`-th at file offset `off + j * stride`
/// (`stride > len` when `count > 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seg {
    pub off: u64,
    pub len: u64,
    pub stride: u64,
    pub count: u64,
}

impl Seg {
    /// Data bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.len * self.count
    }

    /// One past the last byte.
    pub(crate) fn end(&self) -> u64 {
        self.off + (self.count - 1) * self.stride + self.len
    }

    /// Start of range `j`.
    fn at(&self, j: u64) -> u64 {
        self.off + j * self.stride
    }
}

/// Bytes of one segment on the wire.
pub(crate) const SEG_WIRE_BYTES: usize = 32;

/// A rank's access list in stream order, with the stream position where each segment
/// starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SegList {
    segs: Vec<Seg>,
    /// Stream bytes before each segment.
    starts: Vec<u64>,
    bytes: u64,
    /// Some range starts before the previous one ends.
    overlaps: bool,
    /// Largest end so far (a later, shorter range may end before it).
    max_end: u64,
}

impl SegList {
    pub(crate) fn new() -> SegList {
        SegList::default()
    }

    /// Appends `reps` ranges of `len` bytes, `stride` apart, from `off`, merging with the
    /// last segment where they continue it.
    pub(crate) fn push(&mut self, off: u64, len: u64, stride: u64, reps: u64) {
        if len == 0 || reps == 0 {
            return;
        }
        if reps > 1 && stride == len {
            // Touching ranges are one range.
            return self.push(off, len * reps, 0, 1);
        }
        let (mut off, mut reps) = (off, reps);
        // Fold as many leading ranges as continue the last segment.
        while reps > 0 {
            if !self.extend(off, len) {
                break;
            }
            off += stride;
            reps -= 1;
        }
        if reps == 0 {
            return;
        }
        if reps == 1 || stride < len {
            // Overlapping strided ranges (a read view may have them) stay one per range.
            for j in 0..reps {
                self.append(Seg {
                    off: off + j * stride,
                    len,
                    stride: 0,
                    count: 1,
                });
            }
        } else {
            self.append(Seg {
                off,
                len,
                stride,
                count: reps,
            });
        }
    }

    /// Merges one range into the last segment if it continues it; true if it did.
    fn extend(&mut self, off: u64, len: u64) -> bool {
        let Some(last) = self.segs.last_mut() else {
            return false;
        };
        let merged = if last.count == 1 && off == last.off + last.len {
            last.len += len;
            true
        } else if last.count == 1 && len == last.len && off > last.off + last.len {
            last.stride = off - last.off;
            last.count = 2;
            true
        } else if last.count > 1 && len == last.len && off == last.at(last.count) {
            last.count += 1;
            true
        } else {
            false
        };
        if merged {
            self.bytes += len;
            self.max_end = self.max_end.max(off + len);
        }
        merged
    }

    fn append(&mut self, s: Seg) {
        if s.off < self.max_end {
            self.overlaps = true;
        }
        self.starts.push(self.bytes);
        self.bytes += s.bytes();
        self.max_end = self.max_end.max(s.end());
        self.segs.push(s);
    }

    pub(crate) fn segs(&self) -> &[Seg] {
        &self.segs
    }

    /// Data bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether some range starts before an earlier one ends.
    pub(crate) fn overlaps(&self) -> bool {
        self.overlaps
    }

    /// `[lo, hi)` of the bytes touched (None without data).
    pub(crate) fn extent(&self) -> Option<(u64, u64)> {
        Some((self.segs.first()?.off, self.max_end))
    }

    /// Each range in stream order with its stream position: `f(file_off, len, stream_off)`.
    pub(crate) fn for_each(&self, mut f: impl FnMut(u64, u64, u64)) {
        for (s, &st) in self.segs.iter().zip(&self.starts) {
            for j in 0..s.count {
                f(s.at(j), s.len, st + j * s.len);
            }
        }
    }

    /// The pieces inside file window `[lo, hi)`, in stream order, with their stream
    /// positions: `f(file_off, len, stream_off)`. Needs a list without overlaps; the pieces
    /// then occupy one stream range, which is returned (empty when none).
    pub(crate) fn clip(&self, lo: u64, hi: u64, mut f: impl FnMut(u64, u64, u64)) -> Range<u64> {
        debug_assert!(!self.overlaps);
        let mut first: Option<u64> = None;
        let mut last = 0;
        // The first segment that may reach into the window: segments are sorted and
        // disjoint, so their ends increase.
        let i0 = self.segs.partition_point(|s| s.end() <= lo);
        for (s, &st) in self.segs[i0..].iter().zip(&self.starts[i0..]) {
            if s.off >= hi {
                break;
            }
            // Ranges j with at(j) + len > lo and at(j) < hi.
            let j0 = if s.count == 1 || s.off + s.len > lo {
                0
            } else {
                (lo - s.off - s.len) / s.stride + 1
            };
            let j1 = if s.count == 1 {
                1
            } else {
                ((hi - 1 - s.off) / s.stride + 1).min(s.count)
            };
            for j in j0..j1 {
                let (a, b) = (s.at(j), s.at(j) + s.len);
                let (ca, cb) = (a.max(lo), b.min(hi));
                if ca >= cb {
                    continue;
                }
                let pos = st + j * s.len + (ca - a);
                first.get_or_insert(pos);
                last = pos + (cb - ca);
                f(ca, cb - ca, pos);
            }
        }
        match first {
            Some(a) => a..last,
            None => 0..0,
        }
    }

    /// Stream bytes that lie below file offset `eof` before the first one that does not:
    /// what a read returns when the file ends at `eof`.
    pub(crate) fn bytes_below(&self, eof: u64) -> u64 {
        let mut n = 0;
        for s in &self.segs {
            if s.end() <= eof {
                n += s.bytes();
                continue;
            }
            for j in 0..s.count {
                let a = s.at(j);
                if a + s.len <= eof {
                    n += s.len;
                } else {
                    return n + eof.saturating_sub(a);
                }
            }
        }
        n
    }

    /// The segments whose ranges meet `[lo, hi)`, cut to it, for an aggregator of that
    /// file domain.
    pub(crate) fn within(&self, lo: u64, hi: u64) -> SegList {
        let mut out = SegList::new();
        let i0 = self.segs.partition_point(|s| s.end() <= lo);
        for s in &self.segs[i0..] {
            if s.off >= hi {
                break;
            }
            if s.off >= lo && s.end() <= hi {
                out.push(s.off, s.len, s.stride, s.count);
                continue;
            }
            // A segment across an edge: whole ranges inside as one strided run, the cut
            // ones alone.
            let j0 = if s.count == 1 || s.off + s.len > lo {
                0
            } else {
                (lo - s.off - s.len) / s.stride + 1
            };
            let j1 = if s.count == 1 {
                1
            } else {
                ((hi - 1 - s.off) / s.stride + 1).min(s.count)
            };
            let whole = |j: u64| s.at(j) >= lo && s.at(j) + s.len <= hi;
            let mut j = j0;
            while j < j1 {
                if whole(j) {
                    let mut k = j + 1;
                    while k < j1 && whole(k) {
                        k += 1;
                    }
                    out.push(s.at(j), s.len, s.stride, k - j);
                    j = k;
                } else {
                    let (a, b) = (s.at(j).max(lo), (s.at(j) + s.len).min(hi));
                    if a < b {
                        out.push(a, b - a, 0, 1);
                    }
                    j += 1;
                }
            }
        }
        out
    }

    /// The wire form: 32 bytes per segment (offset, length, stride, count, little-endian).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.segs.len() * SEG_WIRE_BYTES);
        for s in &self.segs {
            for w in [s.off, s.len, s.stride, s.count] {
                v.extend_from_slice(&w.to_le_bytes());
            }
        }
        v
    }

    /// Reads the wire form back; None when it is not a well-formed, sorted, disjoint list
    /// (a peer's bytes are checked, never trusted).
    pub(crate) fn decode(bytes: &[u8]) -> Option<SegList> {
        if !bytes.len().is_multiple_of(SEG_WIRE_BYTES) {
            return None;
        }
        let mut out = SegList::new();
        for c in bytes.chunks_exact(SEG_WIRE_BYTES) {
            let w = |i: usize| u64::from_le_bytes(c[i * 8..i * 8 + 8].try_into().unwrap());
            let (off, len, stride, count) = (w(0), w(1), w(2), w(3));
            if len == 0 || count == 0 || (count > 1 && stride <= len) {
                return None;
            }
            let span = (count - 1).checked_mul(stride)?.checked_add(len)?;
            off.checked_add(span)?;
            len.checked_mul(count)?;
            out.push(off, len, stride, count);
        }
        (!out.overlaps).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(l: &SegList) -> Vec<(u64, u64, u64)> {
        let mut v = Vec::new();
        l.for_each(|a, n, p| v.push((a, n, p)));
        v
    }

    #[test]
    fn pieces_merge_into_strided_segments() {
        let mut l = SegList::new();
        for k in 0..100 {
            l.push(k * 64 + 16, 16, 0, 1);
        }
        assert_eq!(
            l.segs(),
            [Seg {
                off: 16,
                len: 16,
                stride: 64,
                count: 100
            }]
        );
        assert_eq!(l.bytes(), 1600);
        // Touching ranges become one; a different length starts a new segment.
        let mut l = SegList::new();
        l.push(0, 4, 0, 1);
        l.push(4, 4, 0, 1);
        l.push(8, 4, 8, 3);
        l.push(100, 1, 0, 1);
        assert_eq!(l.segs().len(), 3, "{:?}", l.segs());
        assert_eq!(
            l.segs()[0],
            Seg {
                off: 0,
                len: 12,
                stride: 0,
                count: 1
            }
        );
        assert_eq!(ranges(&l).last(), Some(&(100, 1, 20)));
        assert!(!l.overlaps());
        let mut o = SegList::new();
        o.push(0, 10, 0, 1);
        o.push(5, 2, 0, 1);
        assert!(o.overlaps());
    }

    #[test]
    fn clip_gives_pieces_and_their_stream_range() {
        let mut l = SegList::new();
        l.push(10, 10, 30, 5); // [10,20) [40,50) [70,80) [100,110) [130,140)
        let mut got = Vec::new();
        let r = l.clip(45, 105, |a, n, p| got.push((a, n, p)));
        assert_eq!(got, [(45, 5, 15), (70, 10, 20), (100, 5, 30)]);
        assert_eq!(r, 15..35);
        assert_eq!(l.clip(20, 40, |_, _, _| panic!("nothing there")), 0..0);
        assert_eq!(l.clip(0, 1000, |_, _, _| {}), 0..50);
    }

    #[test]
    fn within_cuts_segments_at_the_domain() {
        let mut l = SegList::new();
        l.push(10, 10, 30, 5);
        let w = l.within(45, 105);
        assert_eq!(ranges(&w), [(45, 5, 0), (70, 10, 5), (100, 5, 15)]);
        assert_eq!(l.within(0, 200), l);
        let back = SegList::decode(&w.encode()).unwrap();
        assert_eq!(back, w);
        assert!(SegList::decode(&[0u8; 31]).is_none());
        let mut bad = l.encode();
        bad[8..16].copy_from_slice(&0u64.to_le_bytes());
        assert!(SegList::decode(&bad).is_none(), "zero length");
    }

    #[test]
    fn bytes_below_the_end_of_the_file() {
        let mut l = SegList::new();
        l.push(10, 10, 30, 5);
        assert_eq!(l.bytes_below(0), 0);
        assert_eq!(l.bytes_below(15), 5);
        assert_eq!(l.bytes_below(40), 10);
        assert_eq!(l.bytes_below(1000), 50);
    }
}
