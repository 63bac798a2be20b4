//! Staging of user buffers for data movement: a contiguous datatype moves straight from
//! and into the user's memory; any other is packed into a temporary buffer before sending
//! and unpacked from one after receiving (weft's type maps do the packing). Depends on the
//! datatype layer only.

use crate::consts::*;
use crate::dtype::{layout, user_span, Layout};
use crate::error::{err, R};
use std::os::raw::c_void;
use weft::coll::TypeKind;
use weft::dtype::TypeMap;

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
    map: TypeMap,
    user: usize,
    count: u64,
    tmp: Vec<u8>,
}

fn check_count(count: i64) -> R<u64> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    Ok(count as u64)
}

/// Stages `count` items of `dt` at `buf` for sending.
pub(crate) fn outgoing(buf: *const c_void, count: i64, dt: Handle) -> R<Outgoing> {
    let n = check_count(count)?;
    match layout(dt)? {
        Layout::Contig { size, kind } => {
            let bytes = size * n as usize;
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
                // SAFETY: MPI requires `buf` to cover `count` items of its type.
                let (src, origin) = unsafe { user_span(&map, buf, n)? };
                map.pack(src, origin, n, &mut tmp)?;
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
    let n = check_count(count)?;
    match layout(dt)? {
        Layout::Contig { size, kind } => {
            let bytes = size * n as usize;
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
                // SAFETY: MPI requires `buf` to cover `count` items of its type.
                let (src, origin) = unsafe { user_span(&map, buf, n)? };
                map.pack(src, origin, n, &mut tmp)?;
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
}

impl Unpack {
    /// Unpacks the temporary buffer into the user's buffer.
    pub fn run(self) -> R<()> {
        if self.tmp.is_empty() {
            return Ok(());
        }
        // SAFETY: MPI requires the user buffer to cover `count` items until completion.
        let (dst, origin) =
            unsafe { user_span(&self.map, self.user as *const c_void, self.count)? };
        self.map.unpack(&self.tmp, dst, origin, self.count)?;
        Ok(())
    }
}
