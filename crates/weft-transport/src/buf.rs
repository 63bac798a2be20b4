//! Raw views of user buffers for operations that outlive a borrow's syntactic scope.
//!
//! The runtime hands a nonblocking operation's buffer to the progress engine as a
//! [`RawBuf`] or [`RawBufMut`]; the runtime's request scopes guarantee that the borrowed
//! memory stays alive and unaliased until the operation completes. Everything that
//! dereferences those pointers is in this module.

use std::marker::PhantomData;

/// A read-only view of a user buffer (send side).
#[derive(Clone, Copy, Debug)]
pub struct RawBuf {
    ptr: *const u8,
    len: usize,
}

/// A writable view of a user buffer (receive side).
#[derive(Clone, Copy, Debug)]
pub struct RawBufMut {
    ptr: *mut u8,
    len: usize,
    _not_send: PhantomData<*mut u8>,
}

impl RawBuf {
    /// Records `data`'s address and length. The caller keeps `data` alive and unmodified until
    /// every use of the returned view is over.
    #[inline]
    pub fn new(data: &[u8]) -> Self {
        RawBuf {
            ptr: data.as_ptr(),
            len: data.len(),
        }
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Address as an integer, for CMA reads by a peer process.
    #[inline]
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// The bytes `[offset, offset + len)`.
    ///
    /// # Safety
    /// The buffer this view was made from must still be alive and not mutated.
    #[inline]
    pub unsafe fn slice(&self, offset: usize, len: usize) -> &[u8] {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len));
        if len == 0 {
            return &[];
        }
        // SAFETY: in bounds (checked above); liveness is the caller's contract.
        unsafe { std::slice::from_raw_parts(self.ptr.add(offset), len) }
    }
}

impl RawBufMut {
    /// Records `data`'s address and length. The caller keeps `data` alive and otherwise
    /// untouched until every use of the returned view is over.
    #[inline]
    pub fn new(data: &mut [u8]) -> Self {
        RawBufMut {
            ptr: data.as_mut_ptr(),
            len: data.len(),
            _not_send: PhantomData,
        }
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Address as an integer, for CMA writes by a peer process.
    #[inline]
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// The bytes `[offset, offset + len)`, writable.
    ///
    /// # Safety
    /// The buffer this view was made from must still be alive and not otherwise accessed, and
    /// no other slice obtained from this view may be live at the same time.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub unsafe fn slice_mut(&self, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len));
        if len == 0 {
            return &mut [];
        }
        // SAFETY: in bounds (checked above); liveness and exclusivity are the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset), len) }
    }
}
