//! The windows this process exposes to its one-sided service: by slot (the number origins
//! put in the top bits of a request's offset, `wire::window_offset`), the window's memory
//! and control block. The service thread looks a slot up for every window request and
//! checks the request's range against the memory before touching it; the window's owner
//! registers at creation and unregisters at free, after the collective that ends every
//! access.

use super::acc::{self, AccOp};
use super::control::{AttachTable, Control, CONTROL_STRIDE};
use crate::coll::TypeKind;
use crate::rma::net::wire;
use std::sync::{Arc, RwLock};
use weft_core::{Error, ErrorKind, Result};

/// What one window exposes.
pub(crate) struct Exposed {
    /// Start of the window's memory in this process (0 for a dynamic window, whose offsets
    /// are addresses).
    pub(crate) base: usize,
    /// Bytes of it (unused for a dynamic window: its attach table decides).
    pub(crate) bytes: usize,
    /// This process's control block (in the window's node region).
    pub(crate) control: *const u8,
    pub(crate) dynamic: bool,
    /// Whether accumulates use CPU atomics where they can ([`acc::atomic_element`]).
    pub(crate) hw: bool,
    /// A dynamic window's attach table: the arrays its control block points at stay
    /// allocated while the service may read them.
    pub(crate) _attached: Arc<AttachTable>,
}

// SAFETY: the pointers stay valid while the entry is registered (the window unregisters
// before unmapping), and every access through them is bounds-checked and atomic or a copy
// under the rules of the window's synchronisation.
unsafe impl Send for Exposed {}
// SAFETY: as above.
unsafe impl Sync for Exposed {}

impl Exposed {
    fn control(&self) -> &Control {
        // SAFETY: registered entries point at a live control block.
        unsafe { Control::at(self.control) }
    }

    /// The address of `[at, at + len)` of the window's memory, or why not.
    fn locate(&self, at: u64, len: u64) -> std::result::Result<*mut u8, String> {
        if self.dynamic {
            if len == 0 || self.control().covers(at, len) {
                return Ok(at as usize as *mut u8);
            }
            return Err(format!(
                "{len} bytes at address {at:#x} are not in memory attached to the dynamic window"
            ));
        }
        match at.checked_add(len) {
            Some(end) if end <= self.bytes as u64 => Ok((self.base + at as usize) as *mut u8),
            _ => Err(format!(
                "{len} bytes at displacement {at} run past the window's {} bytes",
                self.bytes
            )),
        }
    }
}

/// The registry (one per process, shared with the service thread).
#[derive(Default)]
pub(crate) struct Registry {
    slots: RwLock<Vec<Option<Arc<Exposed>>>>,
}

impl Registry {
    /// Registers a window; returns its slot.
    pub(crate) fn register(&self, e: Exposed) -> Result<u16> {
        let mut s = self.slots.write().unwrap_or_else(|p| p.into_inner());
        let e = Some(Arc::new(e));
        if let Some(i) = s.iter().position(Option::is_none) {
            s[i] = e;
            return Ok(i as u16);
        }
        if s.len() > u16::MAX as usize {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{} windows are alive in this process: the most weft keeps",
                    s.len()
                ),
            ));
        }
        s.push(e);
        Ok((s.len() - 1) as u16)
    }

    /// Forgets slot `slot` (the window is being freed).
    pub(crate) fn unregister(&self, slot: u16) {
        let mut s = self.slots.write().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = s.get_mut(slot as usize) {
            *e = None;
        }
    }

    fn find(&self, offset: u64) -> std::result::Result<(Arc<Exposed>, u64), String> {
        let (slot, at) = wire::window_parts(offset);
        let s = self.slots.read().unwrap_or_else(|p| p.into_inner());
        match s.get(slot as usize).and_then(Option::as_ref) {
            Some(e) => Ok((e.clone(), at)),
            None => Err(format!(
                "window slot {slot} is not a window of this process"
            )),
        }
    }

    /// The address of `[offset, offset + len)` of a window space, or why not (the service's
    /// check before a put, get or atomic).
    pub(crate) fn locate(
        &self,
        space: u8,
        offset: u64,
        len: u64,
    ) -> std::result::Result<*mut u8, String> {
        let (e, at) = self.find(offset)?;
        if space == wire::SPACE_WINDOW_CONTROL {
            return match at.checked_add(len) {
                Some(end) if end <= 8 => Ok(e.control.wrapping_add(at as usize) as *mut u8),
                _ => Err(format!(
                    "{len} bytes at offset {at} of a window's control block: only its lock word (8 bytes at 0) is reachable"
                )),
            };
        }
        const { assert!(CONTROL_STRIDE >= 8) };
        e.locate(at, len)
    }

    /// Applies an accumulate request: `data` holds elements of kind `kind`; with `old`, the
    /// elements as they were are appended to it.
    pub(crate) fn accumulate(
        &self,
        offset: u64,
        kind: u8,
        op: u8,
        data: &[u8],
        old: Option<&mut Vec<u8>>,
    ) -> std::result::Result<(), String> {
        let (e, at) = self.find(offset)?;
        let kind =
            TypeKind::from_code(kind).ok_or_else(|| format!("element kind {kind} is unknown"))?;
        let op = AccOp::from_code(op).ok_or_else(|| format!("operation {op} is unknown"))?;
        if let AccOp::Op(o) = &op {
            o.check(kind).map_err(|x| x.to_string())?;
        }
        if !data.len().is_multiple_of(kind.size_bytes()) {
            return Err(format!(
                "{} bytes are not whole elements of {}",
                data.len(),
                kind.name()
            ));
        }
        let p = e.locate(at, data.len() as u64)?;
        let out = old.map(|o| {
            let start = o.len();
            o.resize(start + data.len(), 0);
            &mut o[start..]
        });
        // SAFETY: locate checked the range; accumulates follow the window's rule (acc.rs).
        unsafe { acc::apply(kind, &op, p, data, out, e.hw, &e.control().acc) };
        Ok(())
    }

    /// Applies a compare-and-swap request (`data`: comparand then new value); appends the
    /// old element to `old`.
    pub(crate) fn compare_swap(
        &self,
        offset: u64,
        data: &[u8],
        old: &mut Vec<u8>,
    ) -> std::result::Result<(), String> {
        let (e, at) = self.find(offset)?;
        let n = data.len() / 2;
        let p = e.locate(at, n as u64)?;
        let start = old.len();
        old.resize(start + n, 0);
        // SAFETY: as for accumulate.
        unsafe {
            acc::compare_swap(
                p,
                &data[..n],
                &data[n..],
                &mut old[start..],
                e.hw,
                &e.control().acc,
            )
        };
        Ok(())
    }
}
