//! The data-moving calls of a window (MPI-4.1 §12.3): put, get, accumulate, get-accumulate,
//! fetch-and-op and compare-and-swap, on any datatypes.
//!
//! A call checks its target (member, epoch, range), then moves the target type's pieces
//! (its contiguous byte runs, `TypeMap::for_each_piece`) the way the target's path allows:
//! a copy into or out of mapped memory, one CMA call per piece, or one lane request per
//! piece (consecutive puts coalesce into one frame). The origin side is packed first unless
//! it is one contiguous run. Accumulates work on the target's elements in their memory
//! form (runs of consecutive elements) with the origin gathered into the same form; when
//! the target is mapped and every buffer already is its elements in one run, they are
//! applied from and into the caller's buffers in place (no staging).
//!
//! The direct calls (`put_direct`, `get_direct`, `accumulate_direct`) are the hot path of
//! the MPI layer for contiguous bytes to a mapped target: a few checks, then one copy or
//! CPU atomic, no allocation. Each either does the whole call or nothing and says so, and
//! the caller then runs the general call, which reports what is wrong.

use super::acc::{self, AccGuard, AccOp};
use super::control::Control;
use super::{Flavor, Member, Path, Window};
use crate::coll::TypeKind;
use crate::dtype::TypeMap;
use crate::rma::net::{self, wire};
use std::borrow::Cow;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::shm::cma;

/// The origin side of a call that reads it: `count` items of `map` in `data`, the buffer
/// address at index `origin`.
#[derive(Clone, Copy)]
pub struct Origin<'a> {
    /// The bytes the items touch.
    pub data: &'a [u8],
    /// Index of the buffer address in `data`.
    pub origin: usize,
    /// The datatype.
    pub map: &'a TypeMap,
    /// Items of it.
    pub count: u64,
}

/// The origin side of a call that writes it (the result buffer of a get).
pub struct OriginMut<'a> {
    /// The bytes the items touch.
    pub data: &'a mut [u8],
    /// Index of the buffer address in `data`.
    pub origin: usize,
    /// The datatype.
    pub map: &'a TypeMap,
    /// Items of it.
    pub count: u64,
}

/// The target side: window rank, displacement (in the target's displacement units, an
/// address for a dynamic window), datatype and count.
#[derive(Clone, Copy)]
pub struct TargetSpec<'a> {
    /// Window rank of the target.
    pub rank: u32,
    /// Displacement.
    pub disp: i64,
    /// The datatype at the target.
    pub map: &'a TypeMap,
    /// Items of it.
    pub count: u64,
}

/// A checked target: the member and where its items start (byte offset in its window
/// memory, or address for a dynamic window).
struct Resolved<'w> {
    member: &'w Member,
    at: i64,
}

/// Largest accumulate frame: whole elements of at most this many bytes.
const ACC_FRAME_BYTES: usize = wire::MAX_PAYLOAD_BYTES;
/// Bytes of the target a CMA accumulate reads, combines and writes back at a time (whole
/// elements): the copy stays in cache.
const CMA_ACC_CHUNK_BYTES: usize = 64 << 10;

impl Window {
    /// Checks `t` for `what` and finds where its data lies.
    fn resolve(&self, t: &TargetSpec<'_>, what: &str) -> Result<Resolved<'_>> {
        let member = self.member(t.rank, what)?;
        self.check_access(t.rank, what)?;
        let me = self.weft_rank;
        let range_error = |why: String| {
            Error::new(
                ErrorKind::RmaRange,
                format!("rank {me}: {what} to window rank {}: {why}", t.rank),
            )
        };
        if t.disp < 0 {
            return Err(range_error(format!("displacement {} is negative", t.disp)));
        }
        let at = if self.flavor == Flavor::Dynamic {
            t.disp
        } else {
            t.disp
                .checked_mul(member.disp_unit as i64)
                .ok_or_else(|| range_error(format!("displacement {} overflows", t.disp)))?
        };
        let Some((lo, hi)) = t.map.footprint(t.count)? else {
            return Ok(Resolved { member, at });
        };
        let (start, end) = (at as i128 + lo as i128, at as i128 + hi as i128);
        if self.flavor == Flavor::Dynamic {
            let (addr, len) = (start as u64, (end - start) as u64);
            let attached = match member.path {
                _ if start < 0 => Some(false),
                Path::Me => Some(self.my_control().covers(addr, len)),
                Path::Cma { pid, .. } => {
                    // SAFETY: same-node members' control blocks lie in the mapped region.
                    let c = unsafe { Control::at(member.control) };
                    Some(
                        c.covers_in(pid, addr, len)
                            .map_err(|e| self.cma_error(what, member, e))?,
                    )
                }
                // The target's service checks.
                _ => None,
            };
            if attached == Some(false) {
                return Err(range_error(format!(
                    "bytes [{start:#x}, {end:#x}) are not in memory attached to the window"
                )));
            }
        } else if start < 0 || end > member.bytes as i128 {
            return Err(range_error(format!(
                "bytes [{start}, {end}) of its window memory, which has {} bytes",
                member.bytes
            )));
        }
        if start >= 1 << wire::WINDOW_SLOT_SHIFT || end > 1 << wire::WINDOW_SLOT_SHIFT {
            return Err(range_error(format!(
                "bytes [{start:#x}, {end:#x}) are beyond the 2^48 bytes a window addresses"
            )));
        }
        Ok(Resolved { member, at })
    }

    /// The address in this process of byte `off` of a mapped (or own) member's memory.
    fn local_ptr(&self, m: &Member, off: i64) -> *mut u8 {
        match m.path {
            Path::Me if self.flavor == Flavor::Dynamic => off as usize as *mut u8,
            Path::Me => self.base.wrapping_add(off as usize),
            Path::Mapped { mem } => mem.wrapping_add(off as usize),
            _ => std::ptr::null_mut(),
        }
    }

    /// Where `len` bytes (at least 1) at displacement `disp` of window rank `rank` lie in
    /// this process, when the target's memory is mapped here (or is this process's, on a
    /// window that is not dynamic), the bytes lie inside it and an epoch allows the access:
    /// the direct calls' check. `None` leaves the call to the general path, which reports
    /// what is wrong.
    #[inline]
    fn direct_target(&self, rank: u32, disp: i64, len: usize) -> Option<*mut u8> {
        let m = self.members.get(rank as usize)?;
        if self.flavor == Flavor::Dynamic
            || !matches!(m.path, Path::Me | Path::Mapped { .. })
            || disp < 0
            || len == 0
            || !self.may_access(rank)
        {
            return None;
        }
        let at = u64::try_from(disp).ok()?.checked_mul(m.disp_unit as u64)?;
        if at.checked_add(len as u64)? > m.bytes {
            return None;
        }
        Some(self.local_ptr(m, at as i64))
    }

    /// MPI_Put of the contiguous bytes `data` to displacement `disp` of window rank `rank`
    /// when the target's memory is mapped here: one copy, nothing checked twice, nothing
    /// allocated. Whether it was done; `false` (nothing done) sends the call to
    /// [`Window::put`].
    #[inline]
    pub fn put_direct(&self, data: &[u8], rank: u32, disp: i64) -> bool {
        let Some(p) = self.direct_target(rank, disp, data.len()) else {
            return false;
        };
        // SAFETY: the range lies in the member's mapped memory (direct_target); `copy`
        // allows an origin inside the same window (a put to self from the window's memory).
        unsafe { std::ptr::copy(data.as_ptr(), p, data.len()) };
        true
    }

    /// MPI_Get into the contiguous bytes `out` from displacement `disp` of window rank
    /// `rank`, as [`Window::put_direct`]; `false` sends the call to [`Window::get`].
    #[inline]
    pub fn get_direct(&self, out: &mut [u8], rank: u32, disp: i64) -> bool {
        let Some(p) = self.direct_target(rank, disp, out.len()) else {
            return false;
        };
        // SAFETY: as for put_direct, the other way.
        unsafe { std::ptr::copy(p, out.as_mut_ptr(), out.len()) };
        true
    }

    /// MPI_Accumulate (`result` `None`) or MPI_Get_accumulate / MPI_Fetch_and_op of the
    /// elements of `kind` in `origin` (its bytes are the elements) at displacement `disp` of
    /// window rank `rank`, when the target's memory is mapped here, the operation is
    /// defined on the kind and no buffer overlaps the target's elements: applied in place
    /// with the atomicity of `acc::apply` (as the general path). Whether it was done;
    /// `false` (nothing done) sends the call to the general path.
    #[inline]
    pub fn accumulate_direct(
        &self,
        kind: TypeKind,
        op: &AccOp,
        origin: &[u8],
        result: Option<&mut [u8]>,
        rank: u32,
        disp: i64,
    ) -> bool {
        let bytes = origin.len();
        if !bytes.is_multiple_of(kind.size_bytes())
            || result.as_ref().is_some_and(|r| r.len() != bytes)
        {
            return false;
        }
        if let AccOp::Op(f) = op {
            if f.check(kind).is_err() {
                return false;
            }
        }
        let Some(p) = self.direct_target(rank, disp, bytes) else {
            return false;
        };
        let apart = |b: *const u8| {
            let (b, t) = (b as usize, p as usize);
            b + bytes <= t || t + bytes <= b
        };
        if !apart(origin.as_ptr()) || result.as_ref().is_some_and(|r| !apart(r.as_ptr())) {
            return false;
        }
        let m = &self.members[rank as usize];
        let control = match m.path {
            Path::Me => self.my_control(),
            // SAFETY: mapped members' control blocks lie in the region.
            _ => unsafe { Control::at(m.control) },
        };
        // SAFETY: direct_target checked the range; the buffers are apart from it; the
        // acc.rs rule with the window's hardware-atomics setting and the target's lock.
        unsafe { acc::apply(kind, op, p, origin, result, self.hw_atomics, &control.acc) };
        true
    }

    /// A service request's target for byte `off` of member `m`'s memory.
    fn remote(&self, pe: u32, slot: u16, off: i64) -> Result<net::Remote> {
        let offset = wire::window_offset(slot, off as u64).ok_or_else(|| {
            Error::new(
                ErrorKind::RmaRange,
                format!(
                    "rank {}: window offset {off:#x} is beyond 2^48",
                    self.weft_rank
                ),
            )
        })?;
        Ok(net::Remote {
            pe,
            space: wire::SPACE_WINDOW,
            offset,
        })
    }

    fn cma_error(&self, what: &str, m: &Member, e: std::io::Error) -> Error {
        Error::io(
            format!(
                "rank {}: {what} to world rank {} through CMA",
                self.weft_rank, m.world
            ),
            e,
        )
    }

    /// MPI_Put: copies the origin items into the target's.
    pub fn put(&self, o: Origin<'_>, t: TargetSpec<'_>) -> Result<()> {
        let r = self.resolve(&t, "MPI_Put")?;
        let packed = packed_origin(&o, t.map, t.count, "MPI_Put")?;
        if packed.is_empty() {
            return Ok(());
        }
        let m = r.member;
        match m.path {
            Path::Me | Path::Mapped { .. } => pieces(t.map, t.count, |at, len, from| {
                let p = self.local_ptr(m, r.at + at);
                // SAFETY: the range was checked against the member's memory (resolve); the
                // origin is the caller's separate buffer.
                unsafe { std::ptr::copy_nonoverlapping(packed[from..].as_ptr(), p, len) };
                Ok(())
            }),
            Path::Cma { pid, base } => pieces(t.map, t.count, |at, len, from| {
                let addr = (base as i64 + r.at + at) as u64;
                cma::write(pid, addr, &packed[from..from + len])
                    .map_err(|e| self.cma_error("MPI_Put", m, e))
            }),
            Path::Service { pe, slot } => {
                let net = self.net()?;
                pieces(t.map, t.count, |at, len, from| {
                    net.put(
                        0,
                        self.remote(pe, slot, r.at + at)?,
                        &packed[from..from + len],
                    )
                })
            }
        }
    }

    /// MPI_Get: copies the target items into the origin's.
    pub fn get(&self, o: OriginMut<'_>, t: TargetSpec<'_>) -> Result<()> {
        let r = self.resolve(&t, "MPI_Get")?;
        let n = same_bytes(o.map, o.count, t.map, t.count, "MPI_Get")?;
        if n == 0 {
            return Ok(());
        }
        // The origin's bytes themselves when its items are one run (no staging), else a
        // packed copy unpacked at the end.
        let direct = o.map.contiguous_span(o.count).and_then(|(at, len)| {
            let start = usize::try_from(o.origin as i64 + at).ok()?;
            (start + len as usize <= o.data.len()).then_some(start)
        });
        let mut staged = Vec::new();
        let packed: &mut [u8] = match direct {
            Some(start) => &mut o.data[start..start + n],
            None => {
                staged.resize(n, 0u8);
                &mut staged
            }
        };
        let m = r.member;
        match m.path {
            Path::Me | Path::Mapped { .. } => pieces(t.map, t.count, |at, len, to| {
                let p = self.local_ptr(m, r.at + at);
                // SAFETY: as for put, the other way.
                unsafe { std::ptr::copy_nonoverlapping(p, packed[to..].as_mut_ptr(), len) };
                Ok(())
            })?,
            Path::Cma { pid, base } => pieces(t.map, t.count, |at, len, to| {
                let addr = (base as i64 + r.at + at) as u64;
                cma::read(pid, addr, &mut packed[to..to + len])
                    .map_err(|e| self.cma_error("MPI_Get", m, e))
            })?,
            Path::Service { pe, slot } => {
                let net = self.net()?;
                pieces(t.map, t.count, |at, len, to| {
                    net.get(
                        0,
                        self.remote(pe, slot, r.at + at)?,
                        &mut packed[to..to + len],
                    )
                })?
            }
        }
        if direct.is_some() {
            return Ok(());
        }
        o.map.unpack(&staged, o.data, o.origin, o.count)
    }

    /// MPI_Accumulate: combines the origin items into the target's with `op`.
    pub fn accumulate(&self, o: Origin<'_>, t: TargetSpec<'_>, op: &AccOp) -> Result<()> {
        self.accumulate_any(Some(o), None, t, op, "MPI_Accumulate")
    }

    /// MPI_Get_accumulate (and MPI_Fetch_and_op): stores the target items as they were in
    /// `result`, then combines the origin items into them (`origin` may be `None` for
    /// MPI_NO_OP).
    pub fn get_accumulate(
        &self,
        o: Option<Origin<'_>>,
        result: OriginMut<'_>,
        t: TargetSpec<'_>,
        op: &AccOp,
    ) -> Result<()> {
        self.accumulate_any(o, Some(result), t, op, "MPI_Get_accumulate")
    }

    fn accumulate_any(
        &self,
        o: Option<Origin<'_>>,
        result: Option<OriginMut<'_>>,
        t: TargetSpec<'_>,
        op: &AccOp,
        what: &str,
    ) -> Result<()> {
        let r = self.resolve(&t, what)?;
        if t.map.packed_bytes(t.count)? == 0 {
            // Nothing to combine: no element kind to agree on (MPICH accepts any predefined
            // operation then, even one not defined on the type).
            return Ok(());
        }
        let (kind, per_item) = element_kind(t.map, op, what)?;
        let elements = per_item.checked_mul(t.count).ok_or_else(|| {
            Error::new(ErrorKind::InvalidCount, format!("{what}: count overflows"))
        })? as usize;
        if let AccOp::Op(f) = op {
            f.check(kind).map_err(|e| e.context(what.to_string()))?;
        }
        let esize = kind.size_bytes();
        let mut result = result;
        if self.accumulate_in_place(&r, o.as_ref(), result.as_mut(), &t, kind, elements, op)? {
            return Ok(());
        }
        // The origin's elements in memory form (zeros for MPI_NO_OP, which reads none).
        let origin: Cow<'_, [u8]> = match (o, op) {
            (_, AccOp::NoOp) => Cow::Owned(vec![0u8; elements * esize]),
            (None, _) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("rank {}: {what} without origin data", self.weft_rank),
                ))
            }
            (Some(o), _) => {
                let (ok, n) = element_kind(o.map, op, what)?;
                if ok != kind || n * o.count != elements as u64 {
                    return Err(Error::new(
                        ErrorKind::InvalidType,
                        format!(
                            "rank {}: {what}: the origin has {} elements of {}, the target {elements} of {}",
                            self.weft_rank,
                            n * o.count,
                            ok.name(),
                            kind.name()
                        ),
                    ));
                }
                memory_form(o.map, o.data, o.origin, o.count, kind)?
            }
        };
        let mut old = result.as_ref().map(|_| vec![0u8; origin.len()]);
        if let Some(res) = &result {
            let (rk, n) = element_kind(res.map, &AccOp::Replace, what)?;
            if rk.size_bytes() != esize || n * res.count != elements as u64 {
                return Err(Error::new(
                    ErrorKind::InvalidType,
                    format!(
                        "rank {}: {what}: the result buffer has {} elements of {}, the target {elements} of {}",
                        self.weft_rank,
                        n * res.count,
                        rk.name(),
                        kind.name()
                    ),
                ));
            }
        }
        if elements > 0 {
            let runs = element_runs(t.map, t.count, kind, per_item)?;
            self.apply_runs(&r, &runs, kind, op, &origin, old.as_deref_mut(), what)?;
        }
        if let (Some(res), Some(old)) = (result, old) {
            from_memory_form(res.map, res.data, res.origin, res.count, kind, &old)?;
        }
        Ok(())
    }

    /// The accumulate of `elements` elements of `kind` applied straight from the caller's
    /// buffers, when the target is mapped (or this process) and the target, origin and
    /// result items are each one run of bytes that already are the elements (predefined
    /// types and contiguous arrays of them): no staging copy, no allocation. Whether it
    /// applied; `false` leaves everything to the general path (which checks the arguments
    /// and reports what is wrong). Atomicity is [`acc::apply`]'s, as on the general path.
    #[allow(clippy::too_many_arguments)]
    fn accumulate_in_place(
        &self,
        r: &Resolved<'_>,
        o: Option<&Origin<'_>>,
        result: Option<&mut OriginMut<'_>>,
        t: &TargetSpec<'_>,
        kind: TypeKind,
        elements: usize,
        op: &AccOp,
    ) -> Result<bool> {
        let m = r.member;
        if !matches!(m.path, Path::Me | Path::Mapped { .. }) || elements == 0 {
            return Ok(false);
        }
        let esize = kind.size_bytes();
        let bytes = elements * esize;
        // The items' bytes are the elements when the type's packed form is an array of the
        // kind (or single bytes for MPI_REPLACE and MPI_NO_OP) and they are one run.
        let dense = |map: &TypeMap| match map.reduction() {
            Some((k, _)) => k.size_bytes() == esize,
            None => map.reduction_kind().is_none() && kind == TypeKind::U8,
        };
        let run = |map: &TypeMap, count: u64, origin: usize, len: usize| {
            let (at, n) = map.contiguous_span(count)?;
            let start = usize::try_from(origin as i64 + at).ok()?;
            (n as usize == bytes && start + bytes <= len).then_some(start)
        };
        let tat = match t.map.contiguous_span(t.count) {
            Some((at, n)) if n as usize == bytes && dense(t.map) => at,
            _ => return Ok(false),
        };
        // MPI_NO_OP reads no origin: any bytes of the right length do.
        let zeros = [0u8; 64];
        let origin: &[u8] = match (o, op) {
            (_, AccOp::NoOp) if bytes <= zeros.len() => &zeros[..bytes],
            (Some(o), _) if !op.is_no_op() => {
                if !dense(o.map)
                    || o.map.reduction_kind().map(|k| k.0).unwrap_or(TypeKind::U8) != kind
                {
                    return Ok(false);
                }
                match run(o.map, o.count, o.origin, o.data.len()) {
                    Some(start) => &o.data[start..start + bytes],
                    None => return Ok(false),
                }
            }
            _ => return Ok(false),
        };
        let old: Option<&mut [u8]> = match result {
            None => None,
            Some(res) => {
                let same = match res.map.reduction() {
                    Some((k, _)) => k.size_bytes() == esize,
                    None => res.map.reduction_kind().is_none() && kind == TypeKind::U8,
                };
                match run(res.map, res.count, res.origin, res.data.len()) {
                    Some(start) if same => Some(&mut res.data[start..start + bytes]),
                    _ => return Ok(false),
                }
            }
        };
        let control = match m.path {
            Path::Me => self.my_control(),
            // SAFETY: mapped members' control blocks lie in the region.
            _ => unsafe { Control::at(m.control) },
        };
        let p = self.local_ptr(m, r.at + tat);
        // A buffer overlapping the target's elements (possible only when the target is this
        // process) goes the general path, which stages it.
        let apart = |b: *const u8| {
            let (b, t) = (b as usize, p as usize);
            b + bytes <= t || t + bytes <= b
        };
        if !apart(origin.as_ptr()) || old.as_ref().is_some_and(|x| !apart(x.as_ptr())) {
            return Ok(false);
        }
        // SAFETY: resolve checked the target range; the origin and result buffers are apart
        // from it (checked above); accumulates follow acc.rs's rule with the window's
        // hardware-atomics setting and the target's lock, as on the general path.
        unsafe { acc::apply(kind, op, p, origin, old, self.hw_atomics, &control.acc) };
        Ok(true)
    }

    /// Applies `op` over `runs` (byte offset from the target's start, elements) of the
    /// resolved target; `origin` and `old` hold the elements in run order.
    #[allow(clippy::too_many_arguments)]
    fn apply_runs(
        &self,
        r: &Resolved<'_>,
        runs: &[(i64, usize)],
        kind: TypeKind,
        op: &AccOp,
        origin: &[u8],
        mut old: Option<&mut [u8]>,
        what: &str,
    ) -> Result<()> {
        let esize = kind.size_bytes();
        let m = r.member;
        let mut k = 0usize;
        match m.path {
            Path::Me | Path::Mapped { .. } => {
                let control = match m.path {
                    Path::Me => self.my_control(),
                    // SAFETY: mapped members' control blocks lie in the region.
                    _ => unsafe { Control::at(m.control) },
                };
                for &(at, n) in runs {
                    let bytes = n * esize;
                    let p = self.local_ptr(m, r.at + at);
                    let out = old.as_deref_mut().map(|o| &mut o[k..k + bytes]);
                    // SAFETY: resolve checked the range; accumulates follow acc.rs's rule
                    // with the window's hardware-atomics setting and the target's lock.
                    unsafe {
                        acc::apply(
                            kind,
                            op,
                            p,
                            &origin[k..k + bytes],
                            out,
                            self.hw_atomics,
                            &control.acc,
                        )
                    };
                    k += bytes;
                }
            }
            Path::Cma { pid, base } => {
                // SAFETY: same-node members' control blocks lie in the mapped region.
                let control = unsafe { Control::at(m.control) };
                let _g = AccGuard::take(&control.acc);
                // Whole elements at a time through a buffer that stays in cache.
                let per_chunk = (CMA_ACC_CHUNK_BYTES / esize).max(1);
                let total: usize = runs.iter().map(|&(_, n)| n).sum();
                let mut tmp = vec![0u8; per_chunk.min(total) * esize];
                for &(at, n) in runs {
                    let mut done = 0;
                    while done < n {
                        let take = (n - done).min(per_chunk);
                        let bytes = take * esize;
                        let addr = (base as i64 + r.at + at) as u64 + (done * esize) as u64;
                        let tmp = &mut tmp[..bytes];
                        cma::read(pid, addr, tmp).map_err(|e| self.cma_error(what, m, e))?;
                        let out = old.as_deref_mut().map(|o| &mut o[k..k + bytes]);
                        // SAFETY: `tmp` is this process's copy, held under the target's lock.
                        unsafe {
                            acc::apply_locked(
                                kind,
                                op,
                                tmp.as_mut_ptr(),
                                &origin[k..k + bytes],
                                out,
                            )
                        };
                        if !op.is_no_op() {
                            cma::write(pid, addr, tmp).map_err(|e| self.cma_error(what, m, e))?;
                        }
                        k += bytes;
                        done += take;
                    }
                }
            }
            Path::Service { pe, slot } => {
                let net = self.net()?;
                let per_frame = (ACC_FRAME_BYTES / esize).max(1);
                for &(at, n) in runs {
                    let mut done = 0;
                    while done < n {
                        let take = (n - done).min(per_frame);
                        let bytes = take * esize;
                        let off = r.at + at + (done * esize) as i64;
                        let out = old.as_deref_mut().map(|o| &mut o[k..k + bytes]);
                        net.acc(
                            self.remote(pe, slot, off)?,
                            kind.code(),
                            op.code(),
                            &origin[k..k + bytes],
                            out,
                        )?;
                        k += bytes;
                        done += take;
                    }
                }
            }
        }
        Ok(())
    }

    /// MPI_Fetch_and_op: one element of `map` (a predefined type): `result` gets the target
    /// element, then `origin` (ignored for MPI_NO_OP) is combined into it.
    pub fn fetch_and_op(
        &self,
        origin: &[u8],
        result: &mut [u8],
        map: &TypeMap,
        rank: u32,
        disp: i64,
        op: &AccOp,
    ) -> Result<()> {
        // The bytes the element spans (a padded pair's data is fewer).
        let n = map.footprint(1)?.map_or(0, |(_, hi)| hi.max(0) as usize);
        if result.len() < n || (!op.is_no_op() && origin.len() < n) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "rank {}: MPI_Fetch_and_op: buffers of {} and {} bytes for a {n}-byte element",
                    self.weft_rank,
                    origin.len(),
                    result.len()
                ),
            ));
        }
        let o = Origin {
            data: origin,
            origin: 0,
            map,
            count: 1,
        };
        let res = OriginMut {
            data: result,
            origin: 0,
            map,
            count: 1,
        };
        let t = TargetSpec {
            rank,
            disp,
            map,
            count: 1,
        };
        self.accumulate_any(
            (!op.is_no_op()).then_some(o),
            Some(res),
            t,
            op,
            "MPI_Fetch_and_op",
        )
    }

    /// MPI_Compare_and_swap: the target element (of `map`, a predefined type) goes to
    /// `result`; it becomes `origin` when it equals `compare`.
    #[allow(clippy::too_many_arguments)]
    pub fn compare_and_swap(
        &self,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        map: &TypeMap,
        rank: u32,
        disp: i64,
    ) -> Result<()> {
        let what = "MPI_Compare_and_swap";
        let n = map.size_bytes() as usize;
        if n == 0 || n > wire::MAX_CAS_BYTES as usize {
            return Err(Error::new(
                ErrorKind::InvalidType,
                format!(
                    "rank {}: {what} on a {n}-byte element: 1 to {} bytes",
                    self.weft_rank,
                    wire::MAX_CAS_BYTES
                ),
            ));
        }
        if origin.len() < n || compare.len() < n || result.len() < n {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "rank {}: {what}: buffers shorter than the {n}-byte element",
                    self.weft_rank
                ),
            ));
        }
        let (origin, compare, result) = (&origin[..n], &compare[..n], &mut result[..n]);
        let t = TargetSpec {
            rank,
            disp,
            map,
            count: 1,
        };
        let r = self.resolve(&t, what)?;
        let m = r.member;
        match m.path {
            Path::Me | Path::Mapped { .. } => {
                let control = match m.path {
                    Path::Me => self.my_control(),
                    // SAFETY: mapped members' control blocks lie in the region.
                    _ => unsafe { Control::at(m.control) },
                };
                let p = self.local_ptr(m, r.at);
                // SAFETY: resolve checked the element's range; the acc.rs rule.
                unsafe {
                    acc::compare_swap(p, compare, origin, result, self.hw_atomics, &control.acc)
                };
                Ok(())
            }
            Path::Cma { pid, base } => {
                // SAFETY: same-node members' control blocks lie in the mapped region.
                let control = unsafe { Control::at(m.control) };
                let _g = AccGuard::take(&control.acc);
                let addr = (base as i64 + r.at) as u64;
                cma::read(pid, addr, result).map_err(|e| self.cma_error(what, m, e))?;
                if result == compare {
                    cma::write(pid, addr, origin).map_err(|e| self.cma_error(what, m, e))?;
                }
                Ok(())
            }
            Path::Service { pe, slot } => {
                self.net()?
                    .cas(self.remote(pe, slot, r.at)?, compare, origin, result)
            }
        }
    }
}

/// The origin's items as packed bytes (the buffer itself when they are one run), checked to
/// be as many bytes as the target's.
fn packed_origin<'a>(
    o: &Origin<'a>,
    t: &TypeMap,
    tcount: u64,
    what: &str,
) -> Result<Cow<'a, [u8]>> {
    let n = same_bytes(o.map, o.count, t, tcount, what)?;
    if n == 0 {
        return Ok(Cow::Borrowed(&[]));
    }
    if let Some((at, len)) = o.map.contiguous_span(o.count) {
        let start = o.origin as i64 + at;
        if start >= 0 && start as usize + len as usize <= o.data.len() {
            return Ok(Cow::Borrowed(
                &o.data[start as usize..start as usize + len as usize],
            ));
        }
    }
    let mut out = vec![0u8; n];
    o.map.pack(o.data, o.origin, o.count, &mut out)?;
    Ok(Cow::Owned(out))
}

/// The packed bytes both sides move, which must agree (MPI: matching type signatures).
fn same_bytes(a: &TypeMap, ac: u64, b: &TypeMap, bc: u64, what: &str) -> Result<usize> {
    let (x, y) = (a.packed_bytes(ac)?, b.packed_bytes(bc)?);
    if x != y {
        return Err(Error::new(
            ErrorKind::InvalidType,
            format!(
                "{what}: the origin's {ac} items hold {x} bytes, the target's {bc} items {y}: the type signatures must match"
            ),
        ));
    }
    usize::try_from(x)
        .map_err(|_| Error::new(ErrorKind::InvalidCount, format!("{what}: {x} bytes")))
}

/// Calls `f(at, len, position)` for each piece of `count` items of `map`: `len` bytes at
/// byte `at` from the items' address, and their place in the packed stream.
fn pieces(
    map: &TypeMap,
    count: u64,
    mut f: impl FnMut(i64, usize, usize) -> Result<()>,
) -> Result<()> {
    if let Some((at, len)) = map.contiguous_span(count) {
        return f(at, len as usize, 0);
    }
    let mut position = 0usize;
    let mut first = Ok(());
    map.for_each_piece(count, |at, len| {
        if first.is_ok() {
            first = f(at, len, position);
        }
        position += len;
    })?;
    first
}

/// The element kind an accumulate with `op` works on for `map`, and elements per item: the
/// type's reduction kind (signed bytes for MPI_CHAR), or for MPI_REPLACE and MPI_NO_OP on
/// other predefined types (bytes, wide characters, booleans) single bytes.
fn element_kind(map: &TypeMap, op: &AccOp, what: &str) -> Result<(TypeKind, u64)> {
    if let Some(k) = map.reduction_kind() {
        return Ok(k);
    }
    // MPI_CHAR combines as a signed 8-bit integer, as in MPICH and Open MPI (the MPI layer
    // refuses it first when its strict table is asked for).
    if map.kinds() == crate::dtype::Kinds::One(crate::dtype::BasicKind::Char) {
        return Ok((TypeKind::I8, map.size_bytes()));
    }
    if matches!(op, AccOp::Replace | AccOp::NoOp)
        && !matches!(map.kinds(), crate::dtype::Kinds::Mixed)
    {
        return Ok((TypeKind::U8, map.size_bytes()));
    }
    Err(Error::new(
        ErrorKind::InvalidType,
        format!(
            "{what}: an accumulate needs a type built from one predefined type{}",
            match op {
                AccOp::Op(f) => format!(" that {} applies to", f.name()),
                _ => String::new(),
            }
        ),
    ))
}

/// The target's elements as runs of consecutive elements in memory form: (byte offset of
/// the first from the items' address, elements). A pair's memory form starts at its value
/// and spans the pair's C structure.
fn element_runs(
    map: &TypeMap,
    count: u64,
    kind: TypeKind,
    per_item: u64,
) -> Result<Vec<(i64, usize)>> {
    let dense = kind.size_bytes();
    let Some(packed) = map.size_bytes().checked_div(per_item) else {
        return Ok(Vec::new());
    };
    let packed = packed as usize;
    let mut runs: Vec<(i64, usize)> = Vec::new();
    let mut push = |at: i64, n: usize| match runs.last_mut() {
        Some((s, k)) if *s + (*k * dense) as i64 == at => *k += n,
        _ => runs.push((at, n)),
    };
    let mut position = 0usize;
    let mut piece = |at: i64, len: usize| {
        let first = position.next_multiple_of(packed);
        if packed == dense {
            if first < position + len {
                let n = (position + len - first) / packed;
                push(at + (first - position) as i64, n);
            }
        } else {
            let mut e = first;
            while e < position + len {
                push(at + (e - position) as i64, 1);
                e += packed;
            }
        }
        position += len;
    };
    // One run of bytes (predefined types and contiguous arrays of them): one piece, not a
    // walk over every item.
    match map.contiguous_span(count) {
        Some((at, len)) => piece(at, len as usize),
        None => map.for_each_piece(count, piece)?,
    }
    Ok(runs)
}

/// `count` items of `map` in `data` as elements of `kind` in memory form: the caller's bytes
/// themselves when the items are one run of them that already is the elements.
fn memory_form<'a>(
    map: &TypeMap,
    data: &'a [u8],
    origin: usize,
    count: u64,
    kind: TypeKind,
) -> Result<Cow<'a, [u8]>> {
    if map.reduction().is_some() || kind.size_bytes() == 1 {
        if let Some((at, len)) = map.contiguous_span(count) {
            let start = usize::try_from(origin as i64 + at).ok();
            if let Some(run) = start.and_then(|s| data.get(s..s.checked_add(len as usize)?)) {
                return Ok(Cow::Borrowed(run));
            }
        }
    }
    if map.reduction_kind().is_some() {
        return Ok(Cow::Owned(
            map.gather_for_reduction(data, origin, count)?
                .bytes()
                .to_vec(),
        ));
    }
    // Bytes (MPI_REPLACE, MPI_NO_OP) or MPI_CHAR's signed bytes: packed data as it is.
    debug_assert_eq!(kind.size_bytes(), 1);
    let mut out = vec![0u8; map.packed_bytes(count)? as usize];
    map.pack(data, origin, count, &mut out)?;
    Ok(Cow::Owned(out))
}

/// Stores elements in memory form `elems` into `count` items of `map` in `data`.
fn from_memory_form(
    map: &TypeMap,
    data: &mut [u8],
    origin: usize,
    count: u64,
    kind: TypeKind,
    elems: &[u8],
) -> Result<()> {
    if map.reduction_kind().is_some() {
        let mut rb = map.gather_for_reduction(data, origin, count)?;
        let n = rb.bytes().len();
        rb.bytes_mut().copy_from_slice(&elems[..n]);
        return map.scatter_from_reduction(&rb, data, origin, count);
    }
    // Bytes (MPI_REPLACE, MPI_NO_OP) or MPI_CHAR's signed bytes: packed data as it is.
    debug_assert_eq!(kind.size_bytes(), 1);
    map.unpack(elems, data, origin, count)
}
