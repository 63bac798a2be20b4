//! Collective creation of a node-wide shared [`Region`] for the layers built on the runtime
//! (the synchronisation engine, the symmetric heap): local rank 0 creates it, every rank of
//! the job fences through the bootstrap, the others attach, and once the region's attach
//! count says all local ranks have mapped it the name is unlinked. Depends on the
//! runtime's bootstrap and identity, not on what the region holds.

use crate::Weft;
use std::time::Duration;
use weft_core::knob::KnobValues;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::shm::heap::Region;

/// Creates (local rank 0) or attaches (the others) the region `/weft-<job>-<node>-<what>`.
/// Collective over every rank of the job (the bootstrap's fence is); `what` must be the same
/// on all of them and unique within the job.
pub(crate) fn node_region(weft: &Weft, what: &str, body_bytes: usize) -> Result<Region> {
    node_region_aligned(weft, what, body_bytes, 4096)
}

/// [`node_region`] with the body at a multiple of `align` (a power of two) in every process.
pub(crate) fn node_region_aligned(
    weft: &Weft,
    what: &str,
    body_bytes: usize,
    align: usize,
) -> Result<Region> {
    if what.is_empty()
        || what.len() > 40
        || !what
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("shared region name {what:?}: must be 1..=40 letters, digits, '-' or '_'"),
        ));
    }
    let name = format!(
        "/weft-{}-{:08x}-{what}",
        weft.job_id,
        crate::fnv1a(weft.node_id.as_bytes())
    );
    let (me, n) = (weft.local_rank, weft.local_size);
    let rank = weft.world.rank();
    let timeout = Duration::from_secs(weft.config.boot_timeout_s);
    let Some(boot) = &weft.boot else {
        let r = Region::create_aligned(&name, 1, 0, body_bytes, align)?;
        r.unlink()?;
        return Ok(r);
    };
    let mut guard = crate::startup::UnlinkGuard(None);
    let created = if me == 0 {
        if boot.backend() != weft_boot::Backend::Weft {
            // A launcher's job name may come back after a crash left the region.
            weft_transport::shm::segment::Segment::unlink(&name)?;
        }
        let r = Region::create_aligned(&name, n, 0, body_bytes, align)
            .map_err(|e| e.context(format!("rank {rank}: creating {what}")))?;
        guard.0 = Some(name.clone());
        Some(r)
    } else {
        None
    };
    weft.boot_fence(boot.as_ref(), timeout)
        .map_err(|e| e.context(format!("rank {rank}: waiting for {what}")))?;
    let region = match created {
        Some(r) => r,
        None => Region::attach_aligned(&name, me, align)
            .map_err(|e| e.context(format!("rank {rank}: attaching {what}")))?,
    };
    crate::startup::wait_node(rank, what, || region.attached(), n, timeout)?;
    // Whoever sees all attached first removes the name; the others find it gone.
    region.unlink()?;
    guard.0 = None;
    Ok(region)
}

/// The value of knob `name` from `values`, or `default` when the knob's table is not (yet)
/// registered with the runtime's configuration or the variable is unset.
pub(crate) fn knob_text(values: &KnobValues, name: &str, default: &str) -> String {
    values
        .listing()
        .into_iter()
        .find(|(k, _)| k.name == name)
        .map(|(k, v)| v.unwrap_or_else(|| k.default.to_owned()))
        .unwrap_or_else(|| default.to_owned())
}
