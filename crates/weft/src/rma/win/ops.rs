//! The data-moving calls of a window (MPI-4.1 §12.3): put, get, accumulate, get-accumulate,
//! fetch-and-op and compare-and-swap, on any datatypes.
//!
//! A call checks its target (member, epoch, range), then moves the target type's pieces
//! (its contiguous byte runs, `TypeMap::for_each_piece`) the way the target's path allows:
//! a copy into or out of mapped memory, one CMA call per piece, or one lane request per
//! piece (consecutive puts coalesce into one frame). The origin side is packed first unless
//! it is one contiguous run. Accumulates work on the target's elements in their memory
//! form (runs of consecutive elements) with the origin gathered into the same form.

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
            let control = match member.path {
                Path::Me => Some(self.my_control()),
                // SAFETY: same-node members' control blocks lie in the mapped region.
                Path::Cma { .. } => Some(unsafe { Control::at(member.control) }),
                _ => None,
            };
            if let Some(c) = control {
                if start < 0 || !c.covers(start as u64, (end - start) as u64) {
                    return Err(range_error(format!(
                        "bytes [{start:#x}, {end:#x}) are not in memory attached to the window"
                    )));
                }
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
        let mut packed = vec![0u8; n];
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
        o.map.unpack(&packed, o.data, o.origin, o.count)
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
        // The origin's elements in memory form (zeros for MPI_NO_OP, which reads none).
        let origin: Vec<u8> = match (o, op) {
            (_, AccOp::NoOp) => vec![0u8; elements * esize],
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
                let mut tmp = Vec::new();
                for &(at, n) in runs {
                    let bytes = n * esize;
                    let addr = (base as i64 + r.at + at) as u64;
                    tmp.resize(bytes, 0);
                    cma::read(pid, addr, &mut tmp).map_err(|e| self.cma_error(what, m, e))?;
                    let out = old.as_deref_mut().map(|o| &mut o[k..k + bytes]);
                    // SAFETY: `tmp` is this process's copy, held under the target's lock.
                    unsafe {
                        acc::apply_locked(kind, op, tmp.as_mut_ptr(), &origin[k..k + bytes], out)
                    };
                    if !op.is_no_op() {
                        cma::write(pid, addr, &tmp).map_err(|e| self.cma_error(what, m, e))?;
                    }
                    k += bytes;
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
        let n = map.size_bytes() as usize;
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
/// type's reduction kind, or for MPI_REPLACE and MPI_NO_OP on other predefined types (bytes,
/// characters, booleans) single bytes.
fn element_kind(map: &TypeMap, op: &AccOp, what: &str) -> Result<(TypeKind, u64)> {
    if let Some(k) = map.reduction_kind() {
        return Ok(k);
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
    map.for_each_piece(count, |at, len| {
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
    })?;
    Ok(runs)
}

/// `count` items of `map` in `data` as elements of `kind` in memory form.
fn memory_form(
    map: &TypeMap,
    data: &[u8],
    origin: usize,
    count: u64,
    kind: TypeKind,
) -> Result<Vec<u8>> {
    if map.reduction_kind().is_some() {
        return Ok(map
            .gather_for_reduction(data, origin, count)?
            .bytes()
            .to_vec());
    }
    debug_assert_eq!(kind, TypeKind::U8);
    let mut out = vec![0u8; map.packed_bytes(count)? as usize];
    map.pack(data, origin, count, &mut out)?;
    Ok(out)
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
    debug_assert_eq!(kind, TypeKind::U8);
    map.unpack(elems, data, origin, count)
}
