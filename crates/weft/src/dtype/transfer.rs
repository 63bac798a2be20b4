//! Moving typed data (MPI-4.1 §5.2 pack/unpack, §3.2.5 and §5.1.11 counting what arrived):
//! between a typed buffer and MPI's packed format (the typed bytes in type-map order), by byte
//! windows for pipelined transfers, and typed buffer to typed buffer. Safe slices only; every
//! buffer is checked against the type's footprint before any byte moves.

use super::map::Visit;
use super::{BasicKind, TypeMap};
use weft_core::{Error, ErrorKind, Result};

/// Bytes staged at a time by [`copy`] when neither side is contiguous.
const COPY_CHUNK_BYTES: usize = 64 * 1024;

impl TypeMap {
    /// Packed bytes of `count` items (MPI_Pack_size, MPI-4.1 §5.2; weft's packed format has
    /// no header, so this is exact).
    pub fn packed_bytes(&self, count: u64) -> Result<u64> {
        let bytes = count as u128 * self.body.size as u128;
        if bytes > i64::MAX as u128 {
            return Err(Error::new(
                ErrorKind::InvalidCount,
                format!(
                    "count {count} of a {}-byte type overflows the address range",
                    self.body.size
                ),
            ));
        }
        Ok(bytes as u64)
    }

    /// The bytes `[lo, hi)` relative to the buffer address that `count` items read or write
    /// (their data, not their bounds: MPI-4.1 §5.1.8's true extent, stretched by `count - 1`
    /// extents). `None` when they touch nothing (no data or `count` 0).
    pub fn footprint(&self, count: u64) -> Result<Option<(i64, i64)>> {
        let Some((lo, hi)) = self.body.true_bounds else {
            return Ok(None);
        };
        if count == 0 {
            return Ok(None);
        }
        let span = (count as i128 - 1) * self.extent() as i128;
        let (lo, hi) = (lo as i128 + span.min(0), hi as i128 + span.max(0));
        let range = i64::MIN as i128..=i64::MAX as i128;
        if !range.contains(&lo) || !range.contains(&hi) {
            return Err(Error::new(
                ErrorKind::InvalidCount,
                format!("count {count} of this type spans [{lo}, {hi}): beyond the address range"),
            ));
        }
        Ok(Some((lo as i64, hi as i64)))
    }

    /// Checks that a buffer of `len` bytes whose address is at index `origin` holds
    /// everything `count` items touch.
    pub(super) fn check_buffer(
        &self,
        op: &str,
        len: usize,
        origin: usize,
        count: u64,
    ) -> Result<()> {
        if let Some((lo, hi)) = self.footprint(count).map_err(|e| e.context(op))? {
            let o = origin as i128;
            if o + (lo as i128) < 0 || o + hi as i128 > len as i128 {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "{op}: {count} items touch bytes [{lo}, {hi}) around the buffer \
                         address, but the buffer spans [{}, {})",
                        -o,
                        len as i128 - o
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Visits the pieces of the packed stream window `skip..skip + take` of items whose
    /// address is at `origin` (item `e` at `origin + e * extent`).
    pub(super) fn walk_items<V: Visit>(&self, origin: i64, skip: u64, take: u64, v: &mut V) {
        let size = self.body.size;
        if take == 0 {
            return;
        }
        let extent = self.extent();
        let mut e = skip / size;
        let mut s = skip % size;
        let mut take = take;
        while take > 0 {
            let n = (size - s).min(take);
            // Wrapping: see `Body::walk`; the footprint check bounds every piece.
            let base = origin.wrapping_add((e as i64).wrapping_mul(extent));
            self.body.walk(base, s, n, v);
            take -= n;
            s = 0;
            e += 1;
        }
    }

    /// `(start, bytes)` relative to the buffer address when `count` items' data is one
    /// gap-free byte range in type-map order, so that a send or receive can use the user's
    /// buffer directly instead of packing. `None` when it is not (or `count * size`
    /// overflows).
    pub fn contiguous_span(&self, count: u64) -> Option<(i64, u64)> {
        let at = self.contiguous_start(count)?;
        let bytes = self.packed_bytes(count).ok()?;
        Some((at, bytes))
    }

    /// Where the packed window starts in memory when `count` items are one byte range.
    #[inline]
    fn contiguous_start(&self, count: u64) -> Option<i64> {
        let at = self.body.contiguous_at?;
        (count <= 1 || self.extent() == self.body.size as i64).then_some(at)
    }

    /// `(start, bytes)` of `count` items in a buffer of `len` bytes with its address at
    /// `origin`, when they are one byte range that fits: the fast path, which needs no
    /// other check. `None` sends the caller to the checked path (which reports errors).
    #[inline]
    pub(super) fn contiguous_slice(
        &self,
        count: u64,
        origin: usize,
        len: usize,
    ) -> Option<(usize, usize)> {
        let at = self.contiguous_start(count)?;
        let bytes = count as u128 * self.body.size as u128;
        let start = origin as i128 + at as i128;
        if start < 0 || start as u128 + bytes > len as u128 {
            return None;
        }
        Some((start as usize, bytes as usize))
    }

    fn check_window(&self, op: &str, count: u64, position: u64, len: usize) -> Result<()> {
        let total = self.packed_bytes(count).map_err(|e| e.context(op))?;
        if position as u128 + len as u128 > total as u128 {
            return Err(Error::new(
                ErrorKind::Truncate,
                format!(
                    "{op}: window [{position}, {}) is past the {total} packed bytes of {count} \
                     items",
                    position as u128 + len as u128
                ),
            ));
        }
        Ok(())
    }

    /// Packs `count` items of `src` (address at index `origin`) into the start of `out`
    /// (MPI_Pack, MPI-4.1 §5.2). Returns the bytes written, `packed_bytes(count)`.
    #[inline]
    pub fn pack(&self, src: &[u8], origin: usize, count: u64, out: &mut [u8]) -> Result<usize> {
        // Contiguous data that fits: one copy, inlined into the caller.
        if let Some((start, bytes)) = self.contiguous_slice(count, origin, src.len()) {
            if bytes <= out.len() {
                copy_small(&mut out[..bytes], &src[start..start + bytes]);
                return Ok(bytes);
            }
        }
        self.pack_checked(src, origin, count, out)
    }

    fn pack_checked(&self, src: &[u8], origin: usize, count: u64, out: &mut [u8]) -> Result<usize> {
        let total = self.packed_bytes(count).map_err(|e| e.context("pack"))?;
        if (out.len() as u64) < total {
            return Err(Error::new(
                ErrorKind::Truncate,
                format!(
                    "pack: {count} items need {total} bytes but the output holds {}",
                    out.len()
                ),
            ));
        }
        let total = total as usize;
        self.pack_range(src, origin, count, 0, &mut out[..total])?;
        Ok(total)
    }

    /// Packs the bytes `position..position + out.len()` of the packed stream of `count`
    /// items of `src` (address at index `origin`): a window of MPI_Pack for pipelined
    /// transfers.
    pub fn pack_range(
        &self,
        src: &[u8],
        origin: usize,
        count: u64,
        position: u64,
        out: &mut [u8],
    ) -> Result<()> {
        if let Some((start, bytes)) = self.contiguous_slice(count, origin, src.len()) {
            if position as u128 + out.len() as u128 <= bytes as u128 {
                let start = start + position as usize;
                copy_small(out, &src[start..start + out.len()]);
                return Ok(());
            }
        }
        self.check_window("pack", count, position, out.len())?;
        self.check_buffer("pack", src.len(), origin, count)?;
        let take = out.len() as u64;
        self.walk_items(
            origin as i64,
            position,
            take,
            &mut Gather { src, out, o: 0 },
        );
        Ok(())
    }

    /// Unpacks `packed` (the start of the packed stream of at most `count` items) into
    /// `dst` (address at index `origin`) (MPI_Unpack, MPI-4.1 §5.2; also a receive). A
    /// stream longer than `count` items is a truncation error.
    #[inline]
    pub fn unpack(&self, packed: &[u8], dst: &mut [u8], origin: usize, count: u64) -> Result<()> {
        if let Some((start, bytes)) = self.contiguous_slice(count, origin, dst.len()) {
            if packed.len() <= bytes {
                copy_small(&mut dst[start..start + packed.len()], packed);
                return Ok(());
            }
        }
        self.unpack_checked(packed, dst, origin, count)
    }

    fn unpack_checked(
        &self,
        packed: &[u8],
        dst: &mut [u8],
        origin: usize,
        count: u64,
    ) -> Result<()> {
        let total = self.packed_bytes(count).map_err(|e| e.context("unpack"))?;
        if packed.len() as u64 > total {
            return Err(Error::new(
                ErrorKind::Truncate,
                format!(
                    "unpack: {} bytes arrived but {count} items of {} bytes hold {total}",
                    packed.len(),
                    self.body.size
                ),
            ));
        }
        self.unpack_range(packed, 0, dst, origin, count)
    }

    /// Unpacks `packed` as the bytes `position..position + packed.len()` of the packed
    /// stream of `count` items into `dst` (address at index `origin`).
    pub fn unpack_range(
        &self,
        packed: &[u8],
        position: u64,
        dst: &mut [u8],
        origin: usize,
        count: u64,
    ) -> Result<()> {
        if let Some((start, bytes)) = self.contiguous_slice(count, origin, dst.len()) {
            if position as u128 + packed.len() as u128 <= bytes as u128 {
                let start = start + position as usize;
                copy_small(&mut dst[start..start + packed.len()], packed);
                return Ok(());
            }
        }
        self.check_window("unpack", count, position, packed.len())?;
        self.check_buffer("unpack", dst.len(), origin, count)?;
        let take = packed.len() as u64;
        self.walk_items(
            origin as i64,
            position,
            take,
            &mut Scatter { packed, dst, o: 0 },
        );
        Ok(())
    }

    /// Whole items in `bytes` received bytes (MPI_Get_count, MPI-4.1 §3.2.5); `None` is
    /// MPI_UNDEFINED (not a whole number of items). A type without data counts 0.
    pub fn count_in(&self, bytes: u64) -> Option<u64> {
        match self.body.size {
            0 => Some(0),
            s => bytes.is_multiple_of(s).then_some(bytes / s),
        }
    }

    /// Basic elements in `bytes` received bytes, counting into a partial last item
    /// (MPI_Get_elements, MPI-4.1 §5.1.11); `None` is MPI_UNDEFINED (the bytes end inside
    /// a basic element, or exceed nothing for a type without data).
    pub fn elements_in(&self, bytes: u64) -> Option<u64> {
        let size = self.body.size;
        if size == 0 {
            return (bytes == 0).then_some(0);
        }
        let full = (bytes / size).checked_mul(self.body.elements)?;
        full.checked_add(self.body.elements_in_prefix(bytes % size)?)
    }
}

/// Copies `src` into `dst` (equal lengths). Pieces of derived types are mostly one or a few
/// basic elements; a fixed-size copy for those sizes avoids a `memcpy` call per piece.
#[inline(always)]
fn copy_small(dst: &mut [u8], src: &[u8]) {
    fn fixed<const N: usize>(dst: &mut [u8], src: &[u8]) {
        let s: [u8; N] = src.try_into().expect("caller matched the length");
        dst.copy_from_slice(&s);
    }
    match src.len() {
        1 => dst[0] = src[0],
        2 => fixed::<2>(dst, src),
        4 => fixed::<4>(dst, src),
        8 => fixed::<8>(dst, src),
        12 => fixed::<12>(dst, src),
        16 => fixed::<16>(dst, src),
        _ => dst.copy_from_slice(src),
    }
}

/// Pack: copies pieces of a typed buffer into consecutive packed bytes.
struct Gather<'a, 'b> {
    src: &'a [u8],
    out: &'b mut [u8],
    o: usize,
}

impl Visit for Gather<'_, '_> {
    #[inline(always)]
    fn piece(&mut self, at: i64, len: usize, _: BasicKind) {
        let d = at as usize;
        copy_small(&mut self.out[self.o..self.o + len], &self.src[d..d + len]);
        self.o += len;
    }

    fn strided(&mut self, at: i64, stride: i64, len: usize, reps: u64, _: BasicKind) {
        let out = &mut self.out[self.o..self.o + len * reps as usize];
        self.o += out.len();
        let src = self.src;
        let addr = |j: usize| at.wrapping_add((j as i64).wrapping_mul(stride)) as usize;
        // Fixed-size element copies compile to plain loads and stores.
        macro_rules! fixed {
            ($n:literal) => {
                for (j, c) in out.chunks_exact_mut($n).enumerate() {
                    let d = addr(j);
                    let e: [u8; $n] = src[d..d + $n].try_into().expect("length matched");
                    c.copy_from_slice(&e);
                }
            };
        }
        match len {
            4 => fixed!(4),
            8 => fixed!(8),
            16 => fixed!(16),
            _ => {
                for (j, c) in out.chunks_exact_mut(len).enumerate() {
                    let d = addr(j);
                    copy_small(c, &src[d..d + len]);
                }
            }
        }
    }
}

/// Unpack: copies consecutive packed bytes into pieces of a typed buffer.
struct Scatter<'a, 'b> {
    packed: &'a [u8],
    dst: &'b mut [u8],
    o: usize,
}

impl Visit for Scatter<'_, '_> {
    #[inline(always)]
    fn piece(&mut self, at: i64, len: usize, _: BasicKind) {
        let d = at as usize;
        copy_small(
            &mut self.dst[d..d + len],
            &self.packed[self.o..self.o + len],
        );
        self.o += len;
    }

    fn strided(&mut self, at: i64, stride: i64, len: usize, reps: u64, _: BasicKind) {
        let packed = &self.packed[self.o..self.o + len * reps as usize];
        self.o += packed.len();
        let dst = &mut *self.dst;
        let addr = |j: usize| at.wrapping_add((j as i64).wrapping_mul(stride)) as usize;
        macro_rules! fixed {
            ($n:literal) => {
                for (j, c) in packed.chunks_exact($n).enumerate() {
                    let d = addr(j);
                    let e: [u8; $n] = c.try_into().expect("length matched");
                    dst[d..d + $n].copy_from_slice(&e);
                }
            };
        }
        match len {
            4 => fixed!(4),
            8 => fixed!(8),
            16 => fixed!(16),
            _ => {
                for (j, c) in packed.chunks_exact(len).enumerate() {
                    let d = addr(j);
                    copy_small(&mut dst[d..d + len], c);
                }
            }
        }
    }
}

/// One side of a typed copy: the type, how many items, and the index of the buffer's
/// address in the byte slice.
#[derive(Clone, Copy, Debug)]
pub struct Typed<'a> {
    /// The datatype.
    pub map: &'a TypeMap,
    /// Items of it.
    pub count: u64,
    /// Index in the slice of the buffer address (displacement 0).
    pub origin: usize,
}

/// Copies the data of `from` in `src` into `to` in `dst` in type-map order, as a send to
/// oneself would (MPI-4.1 §3.3: the type signatures should match; only the byte counts are
/// checked). The source may be shorter than the destination; longer is a truncation error.
/// Returns the bytes moved.
pub fn copy(from: Typed<'_>, src: &[u8], to: Typed<'_>, dst: &mut [u8]) -> Result<u64> {
    let n = from.map.packed_bytes(from.count)?;
    let cap = to.map.packed_bytes(to.count)?;
    if n > cap {
        return Err(Error::new(
            ErrorKind::Truncate,
            format!(
                "copy: {n} bytes of data ({} items) do not fit {cap} bytes ({} items)",
                from.count, to.count
            ),
        ));
    }
    from.map
        .check_buffer("copy source", src.len(), from.origin, from.count)?;
    to.map
        .check_buffer("copy destination", dst.len(), to.origin, to.count)?;
    if n == 0 {
        return Ok(0);
    }
    if let Some(at) = from.map.contiguous_start(from.count) {
        let start = (from.origin as i64 + at) as usize;
        to.map
            .unpack_range(&src[start..start + n as usize], 0, dst, to.origin, to.count)?;
        return Ok(n);
    }
    if let Some(at) = to.map.contiguous_start(to.count) {
        let start = (to.origin as i64 + at) as usize;
        from.map.pack_range(
            src,
            from.origin,
            from.count,
            0,
            &mut dst[start..start + n as usize],
        )?;
        return Ok(n);
    }
    let mut stage = vec![0u8; COPY_CHUNK_BYTES.min(n as usize)];
    let mut position = 0u64;
    while position < n {
        let len = (n - position).min(stage.len() as u64) as usize;
        let chunk = &mut stage[..len];
        from.map
            .pack_range(src, from.origin, from.count, position, chunk)?;
        to.map
            .unpack_range(chunk, position, dst, to.origin, to.count)?;
        position += len as u64;
    }
    Ok(n)
}
