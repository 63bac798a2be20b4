//! File views (MPI-4.1 §14.3): a displacement, an elementary type and a filetype tiled from
//! the displacement on. A rank sees the file as the stream of bytes its filetype's data
//! covers, in type-map order; offsets count etypes of that stream. Both types are given in
//! the file's data representation (the MPI layer rebuilds them for "external32" or a
//! registered representation), so their sizes and extents are those of the file.

use super::segs::SegList;
use crate::dtype::TypeMap;
use weft_core::{Error, ErrorKind, Result};

/// A file view.
#[derive(Clone, Debug)]
pub struct View {
    disp: u64,
    etype: TypeMap,
    filetype: TypeMap,
}

impl View {
    /// The view every file starts with: displacement 0, bytes as etype and filetype.
    pub fn bytes() -> View {
        let b = TypeMap::basic(crate::dtype::BasicKind::Byte);
        View {
            disp: 0,
            etype: b.clone(),
            filetype: b,
        }
    }

    /// A view at byte `disp` of `etype` elements through `filetype`. Checks what MPI-4.1
    /// §14.3 asks of them: data in both, a filetype made of whole etypes, and filetype data
    /// at non-negative, non-decreasing displacements (`overlap_ok`: ranges may overlap,
    /// which only a file opened read-only may have). Displacements that break those rules
    /// are an `Io` error (MPI_ERR_IO, as ROMIO reports them in MPICH and Open MPI; MPI-4.1
    /// §14.7 names no class of its own for them), the other checks `InvalidArgument`.
    pub fn new(disp: u64, etype: TypeMap, filetype: TypeMap, overlap_ok: bool) -> Result<View> {
        let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
        let bad_displacements = |m: String| Err(Error::new(ErrorKind::Io, m));
        if etype.size_bytes() == 0 {
            return bad("set_view: the etype has no data".into());
        }
        if filetype.size_bytes() == 0 {
            return bad("set_view: the filetype has no data".into());
        }
        if etype.true_lb() < 0 || etype.lb() < 0 {
            return bad_displacements(format!(
                "set_view: the etype reaches below its start (lb {}, true lb {})",
                etype.lb(),
                etype.true_lb()
            ));
        }
        if !filetype.size_bytes().is_multiple_of(etype.size_bytes()) {
            return bad(format!(
                "set_view: the filetype's {} bytes of data are not whole etypes of {} bytes",
                filetype.size_bytes(),
                etype.size_bytes()
            ));
        }
        if filetype.extent() <= 0 {
            return bad(format!(
                "set_view: the filetype's extent {} is not positive",
                filetype.extent()
            ));
        }
        // Displacements of one tile, then of the next tile's start.
        let mut prev_start: i64 = i64::MIN;
        let mut prev_end: i64 = i64::MIN;
        let mut first_bad: Option<String> = None;
        filetype.visit_runs(0, filetype.size_bytes() + 1, |at, len, stride, reps| {
            if first_bad.is_some() {
                return;
            }
            for j in 0..reps {
                let a = at + j as i64 * stride;
                if a < 0 {
                    first_bad = Some(format!("a displacement {a} is negative"));
                    return;
                }
                if a < prev_start || (!overlap_ok && a < prev_end) {
                    first_bad = Some(format!(
                        "displacement {a} comes after data at {prev_start}..{prev_end}: \
                         displacements must not decrease{}",
                        if overlap_ok {
                            ""
                        } else {
                            " and, for a file opened for writing, not overlap"
                        }
                    ));
                    return;
                }
                prev_start = a;
                prev_end = prev_end.max(a + len as i64);
            }
        });
        if let Some(m) = first_bad {
            return bad_displacements(format!("set_view: filetype {m}"));
        }
        Ok(View {
            disp,
            etype,
            filetype,
        })
    }

    /// Displacement in bytes.
    pub fn disp(&self) -> u64 {
        self.disp
    }

    /// The elementary type.
    pub fn etype(&self) -> &TypeMap {
        &self.etype
    }

    /// The filetype.
    pub fn filetype(&self) -> &TypeMap {
        &self.filetype
    }

    /// Bytes of one etype: the unit of offsets.
    pub fn etype_bytes(&self) -> u64 {
        self.etype.size_bytes()
    }

    /// The file ranges of stream bytes `pos..pos + len`, in stream order.
    pub(crate) fn segs(&self, pos: u64, len: u64) -> Result<SegList> {
        let mut l = SegList::new();
        let mut overflow = false;
        let disp = self.disp as i128;
        self.filetype.visit_runs(pos, len, |at, n, stride, reps| {
            let a = disp + at as i128;
            let last = a + (reps as i128 - 1) * stride as i128 + n as i128;
            if a < 0 || last > i64::MAX as i128 {
                overflow = true;
                return;
            }
            l.push(a as u64, n, stride as u64, reps);
        });
        if overflow {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "stream bytes {pos}..{} of the view lie beyond 2^63 bytes of file",
                    pos as u128 + len as u128
                ),
            ));
        }
        Ok(l)
    }

    /// The absolute file offset of the view's stream byte `pos` (MPI_File_get_byte_offset).
    pub fn byte_offset(&self, pos: u64) -> Result<u64> {
        let l = self.segs(pos, 1)?;
        Ok(l.segs().first().map_or(self.disp, |s| s.off))
    }

    /// Stream bytes of the view below file offset `eof`: where the end of the file is in
    /// the stream (MPI_SEEK_END).
    pub fn stream_bytes_below(&self, eof: u64) -> u64 {
        if eof <= self.disp {
            return 0;
        }
        let rel = eof - self.disp;
        let (size, extent) = (self.filetype.size_bytes(), self.filetype.extent() as u64);
        // Whole tiles below (a tile's data may reach past its extent: back off one).
        let tiles = (rel / extent).saturating_sub(1);
        let mut n = tiles * size;
        loop {
            let l = match self.segs(n, size) {
                Ok(l) => l,
                Err(_) => return n,
            };
            let below = l.bytes_below(eof);
            n += below;
            if below < size {
                return n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::BasicKind;

    fn strided(rank: i64, block: i64, ranks: i64) -> TypeMap {
        let b = TypeMap::basic(BasicKind::Byte);
        let one = TypeMap::hindexed(&[block], &[rank * block], &b).unwrap();
        TypeMap::resized(&one, 0, block * ranks).unwrap()
    }

    #[test]
    fn strided_view_is_one_segment() {
        let b = TypeMap::basic(BasicKind::Byte);
        let v = View::new(100, b, strided(2, 4096, 4), false).unwrap();
        let l = v.segs(0, 4096 * 1000).unwrap();
        assert_eq!(l.segs().len(), 1, "{:?}", l.segs());
        let s = l.segs()[0];
        assert_eq!(
            (s.off, s.len, s.stride, s.count),
            (100 + 8192, 4096, 16384, 1000)
        );
        assert_eq!(v.byte_offset(4096).unwrap(), 100 + 8192 + 16384);
        assert_eq!(v.stream_bytes_below(100 + 8192 + 16384 + 10), 4096 + 10);
        assert_eq!(v.stream_bytes_below(50), 0);
    }

    #[test]
    fn views_are_checked() {
        let int = TypeMap::basic(BasicKind::I32);
        let b = TypeMap::basic(BasicKind::Byte);
        let e = View::new(0, int.clone(), TypeMap::contiguous(3, &b).unwrap(), false);
        assert!(e.unwrap_err().message().contains("whole etypes"));
        // Decreasing displacements.
        let t = TypeMap::hindexed(&[1, 1], &[8, 0], &int).unwrap();
        let e = View::new(0, int.clone(), t, true).unwrap_err();
        assert!(e.message().contains("must not decrease"), "{e}");
        assert_eq!(e.kind(), ErrorKind::Io);
        // Overlap: allowed only for reading.
        let t = TypeMap::hindexed(&[2, 1], &[0, 4], &int).unwrap();
        let e = View::new(0, int.clone(), t.clone(), false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io);
        assert!(View::new(0, int.clone(), t, true).is_ok());
        let e = View::new(0, int.clone(), TypeMap::contiguous(0, &int).unwrap(), true);
        assert!(e.is_err());
    }
}
