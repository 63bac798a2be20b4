//! Staging of user buffers for data movement: a contiguous datatype moves straight from
//! and into the user's memory; any other is packed into a temporary buffer before sending
//! and unpacked from one after receiving (weft's type maps do the packing). Depends on the
//! datatype layer only.

use crate::consts::*;
use crate::dtype::{count_overflow, layout, reduction_layout, user_view, Layout};
use crate::error::{err, R};
use std::os::raw::c_void;
use weft::coll::TypeKind;
use weft::dtype::{ReductionBuf, TypeMap};

/// Outgoing data: where the bytes are, how many, their reduction kind, and the packed copy
/// that must live as long as the operation when the type has holes.
pub struct Outgoing {
    pub ptr: *const u8,
    pub bytes: usize,
    pub kind: Option<TypeKind>,
    pub keep: Option<Vec<u8>>,
}

/// Incoming data: where the bytes go, and for a type with holes the temporary buffer and
/// what to unpack it into once the data has arrived.
pub struct Incoming {
    pub ptr: *mut u8,
    pub bytes: usize,
    pub kind: Option<TypeKind>,
    pub unpack: Option<Unpack>,
}

/// A pending unpack of a temporary buffer into the user's typed buffer.
pub struct Unpack {
    map: std::rc::Rc<TypeMap>,
    user: usize,
    count: u64,
    tmp: Vec<u8>,
    /// A reduction result in the kernels' pair structs, scattered back instead of `tmp`.
    reduced: Option<ReductionBuf>,
    /// Unpacks that run after this one (the blocks of a collective with one datatype per
    /// peer).
    more: Vec<Unpack>,
    /// Packed bytes kept elsewhere (address, length: a block of a staging buffer the
    /// request owns), unpacked instead of `tmp`.
    src: Option<(usize, usize)>,
}

fn check_count(count: i64) -> R<u64> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    Ok(count as u64)
}

/// Stages `count` items of `dt` at `buf` for sending.
pub(crate) fn outgoing(buf: *const c_void, count: i64, dt: Handle) -> R<Outgoing> {
    outgoing_as(buf, count, layout(dt)?)
}

/// Stages `count` items of `dt` at `buf` as the input of a reduction (pairs in their C
/// memory form, see [`reduction_layout`]). A derived type of padded pairs (whose packed
/// form the kernels cannot read) is gathered into an array of the kernels' pair structs.
pub(crate) fn outgoing_for_reduction(buf: *const c_void, count: i64, dt: Handle) -> R<Outgoing> {
    match reduction_layout(dt)? {
        Layout::Map(map) if padded_pairs(&map) => {
            let n = check_count(count)?;
            let rb = gather(&map, buf, n)?;
            let keep = rb.bytes().to_vec();
            Ok(Outgoing {
                ptr: keep.as_ptr(),
                bytes: keep.len(),
                kind: Some(rb.kind()),
                keep: Some(keep),
            })
        }
        lay => outgoing_as(buf, count, lay),
    }
}

/// A derived type built from padded value-index pairs only: it reduces (the kernels know
/// its pair kind) but its packed bytes are not an array of pair structs.
fn padded_pairs(map: &TypeMap) -> bool {
    map.reduction().is_none() && map.reduction_kind().is_some()
}

/// `n` items of `map` at `buf` gathered into the reduction kernels' aligned pair array.
fn gather(map: &TypeMap, buf: *const c_void, n: u64) -> R<ReductionBuf> {
    if n == 0 {
        let empty: &[u8] = &[];
        return Ok(map.gather_for_reduction(empty, 0, n)?);
    }
    // SAFETY: MPI requires `buf` to cover `count` items of its type (MPI_BOTTOM: the
    // absolute addresses the type names).
    let (src, origin, shifted) = unsafe { user_view(map, buf, n)? };
    let m = shifted.as_ref().unwrap_or(map);
    Ok(m.gather_for_reduction(src, origin, n)?)
}

/// `size * n` in bytes, or MPI_ERR_COUNT when it does not fit in the address space.
fn contig_bytes(size: usize, n: u64) -> R<usize> {
    usize::try_from(n)
        .ok()
        .and_then(|n| size.checked_mul(n))
        .ok_or_else(|| count_overflow(n, size))
}

fn outgoing_as(buf: *const c_void, count: i64, lay: Layout) -> R<Outgoing> {
    let n = check_count(count)?;
    match lay {
        Layout::Contig { size, kind } => {
            let bytes = contig_bytes(size, n)?;
            if buf.is_null() && bytes > 0 {
                return Err(err(
                    MPI_ERR_BUFFER,
                    format!("buffer is NULL for {bytes} bytes"),
                ));
            }
            Ok(Outgoing {
                ptr: buf as *const u8,
                bytes,
                kind,
                keep: None,
            })
        }
        Layout::Map(map) => {
            let bytes = map.packed_bytes(n)? as usize;
            let mut tmp = vec![0u8; bytes];
            if bytes > 0 {
                // SAFETY: MPI requires `buf` to cover `count` items of its type (MPI_BOTTOM:
                // the absolute addresses the type names).
                let (src, origin, shifted) = unsafe { user_view(&map, buf, n)? };
                let m = shifted.as_ref().unwrap_or(&map);
                m.pack(src, origin, n, &mut tmp)?;
            }
            let kind = map.reduction().map(|(k, _)| k);
            Ok(Outgoing {
                ptr: tmp.as_ptr(),
                bytes,
                kind,
                keep: Some(tmp),
            })
        }
    }
}

/// Stages `count` items of `dt` at `buf` for receiving; with `keep_contents` the temporary
/// buffer starts with the current contents (in-place collectives read them first).
pub(crate) fn incoming(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    keep_contents: bool,
) -> R<Incoming> {
    incoming_as(buf, count, keep_contents, layout(dt)?)
}

/// Stages `count` items of `dt` at `buf` as the output of a reduction (pairs in their C
/// memory form, see [`reduction_layout`]).
pub(crate) fn incoming_for_reduction(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    keep_contents: bool,
) -> R<Incoming> {
    match reduction_layout(dt)? {
        Layout::Map(map) if padded_pairs(&map) => {
            let n = check_count(count)?;
            // Gathered even when the contents are not needed: it is how a buffer of the
            // kernels' shape is made, and MPI lets a receive buffer be read.
            let mut rb = gather(&map, buf, n)?;
            let ptr = rb.bytes_mut().as_mut_ptr();
            Ok(Incoming {
                ptr,
                bytes: rb.bytes().len(),
                kind: Some(rb.kind()),
                unpack: Some(Unpack {
                    map,
                    user: buf as usize,
                    count: n,
                    tmp: Vec::new(),
                    reduced: Some(rb),
                    more: Vec::new(),
                    src: None,
                }),
            })
        }
        lay => incoming_as(buf, count, keep_contents, lay),
    }
}

fn incoming_as(buf: *mut c_void, count: i64, keep_contents: bool, lay: Layout) -> R<Incoming> {
    let n = check_count(count)?;
    match lay {
        Layout::Contig { size, kind } => {
            let bytes = contig_bytes(size, n)?;
            if buf.is_null() && bytes > 0 {
                return Err(err(
                    MPI_ERR_BUFFER,
                    format!("buffer is NULL for {bytes} bytes"),
                ));
            }
            Ok(Incoming {
                ptr: buf as *mut u8,
                bytes,
                kind,
                unpack: None,
            })
        }
        Layout::Map(map) => {
            let bytes = map.packed_bytes(n)? as usize;
            let mut tmp = vec![0u8; bytes];
            if keep_contents && bytes > 0 {
                // SAFETY: MPI requires `buf` to cover `count` items of its type (MPI_BOTTOM:
                // the absolute addresses the type names).
                let (src, origin, shifted) = unsafe { user_view(&map, buf, n)? };
                let m = shifted.as_ref().unwrap_or(&map);
                m.pack(src, origin, n, &mut tmp)?;
            }
            let kind = map.reduction().map(|(k, _)| k);
            let ptr = tmp.as_mut_ptr();
            Ok(Incoming {
                ptr,
                bytes,
                kind,
                unpack: Some(Unpack {
                    map,
                    user: buf as usize,
                    count: n,
                    tmp,
                    reduced: None,
                    more: Vec::new(),
                    src: None,
                }),
            })
        }
    }
}

impl Incoming {
    /// Delivers the received bytes into the user's buffer (unpacking when staged).
    pub fn finish(self) -> R<()> {
        match self.unpack {
            None => Ok(()),
            Some(u) => u.run(),
        }
    }

    /// Delivers the first `received` bytes (a message may be shorter than the receive).
    pub fn finish_received(self, received: usize) -> R<()> {
        match self.unpack {
            None => Ok(()),
            Some(u) => u.run_received(received),
        }
    }
}

impl Unpack {
    /// An unpack of `len` packed bytes at `src` (a block of a staging buffer that outlives
    /// the unpack) into `count` items of `map` at `user`.
    pub(crate) fn from_block(
        map: std::rc::Rc<TypeMap>,
        user: usize,
        count: u64,
        src: (usize, usize),
    ) -> Unpack {
        Unpack {
            map,
            user,
            count,
            tmp: Vec::new(),
            reduced: None,
            more: Vec::new(),
            src: Some(src),
        }
    }

    /// Chains `next` to run after this unpack.
    pub(crate) fn then(&mut self, next: Unpack) {
        self.more.push(next);
    }

    /// Unpacks the whole temporary buffer into the user's buffer (collectives, where every
    /// byte arrives), then the chained unpacks.
    pub fn run(mut self) -> R<()> {
        let more = std::mem::take(&mut self.more);
        self.run_one()?;
        for u in more {
            u.run()?;
        }
        Ok(())
    }

    fn run_one(self) -> R<()> {
        if let Some(rb) = &self.reduced {
            if self.count == 0 {
                return Ok(());
            }
            // SAFETY: MPI requires the user buffer to cover `count` items until completion.
            let (dst, origin, shifted) =
                unsafe { user_view(&self.map, self.user as *const c_void, self.count)? };
            let m = shifted.as_ref().unwrap_or(&self.map);
            m.scatter_from_reduction(rb, dst, origin, self.count)?;
            return Ok(());
        }
        let n = self.src.map_or(self.tmp.len(), |(_, len)| len);
        self.run_received(n)
    }

    /// Unpacks only the first `received` bytes of the temporary buffer: a message shorter
    /// than the receive must leave the rest of the user's buffer untouched (MPI-4.1
    /// §3.2.4), so the zeros the temporary buffer starts with never reach it.
    pub fn run_received(self, received: usize) -> R<()> {
        let packed: &[u8] = match self.src {
            // SAFETY: the staging buffer holding the block outlives the unpack (the request
            // keeps it).
            Some((p, len)) if len > 0 => unsafe { std::slice::from_raw_parts(p as *const u8, len) },
            Some(_) => &[],
            None => &self.tmp,
        };
        let received = received.min(packed.len());
        if received == 0 {
            return Ok(());
        }
        // SAFETY: MPI requires the user buffer to cover `count` items until completion.
        let (dst, origin, shifted) =
            unsafe { user_view(&self.map, self.user as *const c_void, self.count)? };
        let m = shifted.as_ref().unwrap_or(&self.map);
        m.unpack_range(&packed[..received], 0, dst, origin, self.count)?;
        Ok(())
    }
}
