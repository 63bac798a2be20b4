//! The shared-memory transport: one segment per node holding a header (each local rank's
//! pid and CMA probe word) and one single-producer ring for every ordered pair of local ranks.
//!
//! Setup is two-phase because the creator and the others must be ordered by the bootstrap
//! store (which this crate does not know): local rank 0 calls [`ShmNode::create`], publishes
//! that fact, the others call [`ShmNode::attach`]; once everybody is attached the creator
//! calls [`ShmNode::unlink`] so nothing is left in `/dev/shm` even if the job dies later.

pub mod cma;
pub mod coll;
pub mod heap;
pub mod ring;
pub mod segment;

use ring::{Consumer, Producer};
use segment::Segment;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use weft_core::{Error, ErrorKind, Result};

pub use ring::{Header, INLINE_BYTES};

const MAGIC: u64 = 0x7765_6674_7368_6d31; // "weftshm1"
const SLOTS_OFFSET: usize = 256;
const SLOT_BYTES: usize = 64;
const PAGE_BYTES: usize = 4096;

#[repr(C)]
struct SegmentHeader {
    magic: AtomicU64,
    local_size: AtomicU32,
    _pad: u32,
    ring_bytes: AtomicU64,
    attached: AtomicU32,
    _pad2: u32,
    coll_bytes: AtomicU64,
}

#[repr(C)]
struct RankSlot {
    pid: AtomicI32,
    _pad: u32,
    probe_addr: AtomicU64,
    probe_value: AtomicU64,
}

/// Geometry of a node segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Number of local ranks.
    pub local_size: u32,
    /// Bytes of cells per ring (power of two).
    pub ring_bytes: usize,
    /// Bytes of the node-wide area for shared-memory collectives (multiple of 4096; may be 0).
    pub coll_bytes: usize,
}

impl Layout {
    fn rings_offset(&self) -> usize {
        (SLOTS_OFFSET + self.local_size as usize * SLOT_BYTES).next_multiple_of(PAGE_BYTES)
    }

    fn ring_offset(&self, src: u32, dst: u32) -> usize {
        self.rings_offset()
            + (src as usize * self.local_size as usize + dst as usize)
                * ring::ring_footprint(self.ring_bytes)
    }

    fn coll_offset(&self) -> usize {
        self.ring_offset(self.local_size, 0)
            .next_multiple_of(PAGE_BYTES)
    }

    /// Total segment size in bytes (rings, then the collective area).
    pub fn segment_bytes(&self) -> usize {
        self.coll_offset() + self.coll_bytes.next_multiple_of(PAGE_BYTES)
    }

    fn validate(&self) -> Result<()> {
        if self.local_size == 0 || self.local_size > 4096 {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "shared-memory segment for {} local ranks: must be 1..=4096",
                    self.local_size
                ),
            ));
        }
        if !self.ring_bytes.is_power_of_two() || self.ring_bytes < 4096 {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "WEFT_SHM_RING_BYTES={}: must be a power of two of at least 4096",
                    self.ring_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// This process's view of the node segment: its producing ends towards every local peer and
/// its consuming ends from every local peer.
pub struct ShmNode {
    seg: Segment,
    layout: Layout,
    me: u32,
    out: Vec<Producer>,
    inbound: Vec<Consumer>,
}

impl ShmNode {
    /// Creates the node segment `name` (mode 0600) for `layout` and attaches as local rank `me`.
    pub fn create(name: &str, layout: Layout, me: u32) -> Result<ShmNode> {
        layout.validate()?;
        let seg = Segment::create(name, layout.segment_bytes())?;
        let header = seg.base() as *const SegmentHeader;
        // SAFETY: the segment is at least one page, zero-filled, and page-aligned.
        unsafe {
            (*header)
                .local_size
                .store(layout.local_size, Ordering::Relaxed);
            (*header)
                .ring_bytes
                .store(layout.ring_bytes as u64, Ordering::Relaxed);
            (*header)
                .coll_bytes
                .store(layout.coll_bytes as u64, Ordering::Relaxed);
            (*header).magic.store(MAGIC, Ordering::Release);
        }
        Self::finish_attach(seg, layout, me)
    }

    /// Attaches to the segment `name` created by another local rank, as local rank `me`.
    pub fn attach(name: &str, me: u32) -> Result<ShmNode> {
        let seg = Segment::open(name)?;
        if seg.len() < PAGE_BYTES {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("segment {name} is only {} bytes", seg.len()),
            ));
        }
        let header = seg.base() as *const SegmentHeader;
        // SAFETY: at least one page is mapped (checked above).
        let (magic, local_size, ring_bytes, coll_bytes) = unsafe {
            (
                (*header).magic.load(Ordering::Acquire),
                (*header).local_size.load(Ordering::Relaxed),
                (*header).ring_bytes.load(Ordering::Relaxed) as usize,
                (*header).coll_bytes.load(Ordering::Relaxed) as usize,
            )
        };
        if magic != MAGIC {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("segment {name} has a bad magic number {magic:#x}"),
            ));
        }
        let layout = Layout {
            local_size,
            ring_bytes,
            coll_bytes,
        };
        layout.validate()?;
        if seg.len() < layout.segment_bytes() {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "segment {name} is {} bytes, layout needs {}",
                    seg.len(),
                    layout.segment_bytes()
                ),
            ));
        }
        Self::finish_attach(seg, layout, me)
    }

    fn finish_attach(seg: Segment, layout: Layout, me: u32) -> Result<ShmNode> {
        if me >= layout.local_size {
            return Err(Error::new(
                ErrorKind::InvalidRank,
                format!(
                    "local rank {me} attaching to a segment for {} ranks",
                    layout.local_size
                ),
            ));
        }
        let base = seg.base();
        let n = layout.local_size;
        let mut out = Vec::with_capacity(n as usize);
        let mut inbound = Vec::with_capacity(n as usize);
        for peer in 0..n {
            // SAFETY: ring offsets lie inside the segment (its size was checked against the
            // layout); each (src, dst) ring has exactly one producer (src) and one consumer (dst).
            unsafe {
                out.push(Producer::new(
                    base.add(layout.ring_offset(me, peer)),
                    layout.ring_bytes,
                ));
                inbound.push(Consumer::new(
                    base.add(layout.ring_offset(peer, me)),
                    layout.ring_bytes,
                ));
            }
        }
        let node = ShmNode {
            seg,
            layout,
            me,
            out,
            inbound,
        };
        let pid = std::process::id() as i32;
        let (probe_addr, probe_value) = cma::probe_target(pid);
        let slot = node.slot(me);
        slot.probe_addr.store(probe_addr, Ordering::Relaxed);
        slot.probe_value.store(probe_value, Ordering::Relaxed);
        slot.pid.store(pid, Ordering::Release);
        node.header().attached.fetch_add(1, Ordering::AcqRel);
        Ok(node)
    }

    fn header(&self) -> &SegmentHeader {
        // SAFETY: the header lies at the start of the live mapping.
        unsafe { &*(self.seg.base() as *const SegmentHeader) }
    }

    fn slot(&self, local: u32) -> &RankSlot {
        assert!(local < self.layout.local_size);
        // SAFETY: slots lie between SLOTS_OFFSET and rings_offset(), inside the mapping.
        unsafe {
            &*(self
                .seg
                .base()
                .add(SLOTS_OFFSET + local as usize * SLOT_BYTES) as *const RankSlot)
        }
    }

    /// Removes the segment's name (call once every local rank has attached).
    pub fn unlink(&self) -> Result<()> {
        Segment::unlink(self.seg.name())
    }

    /// Number of local ranks that have attached so far.
    pub fn attached(&self) -> u32 {
        self.header().attached.load(Ordering::Acquire)
    }

    /// The segment's geometry.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// This process's local rank.
    pub fn me(&self) -> u32 {
        self.me
    }

    /// Process id of local rank `local` (0 until it attached).
    pub fn pid(&self, local: u32) -> i32 {
        self.slot(local).pid.load(Ordering::Acquire)
    }

    /// Whether this process can use CMA to read from local rank `local` (probes it).
    pub fn probe_cma(&self, local: u32) -> bool {
        let slot = self.slot(local);
        let pid = slot.pid.load(Ordering::Acquire);
        pid != 0
            && cma::probe(
                pid,
                slot.probe_addr.load(Ordering::Relaxed),
                slot.probe_value.load(Ordering::Relaxed),
            )
    }

    /// Whether local rank `local`'s process still exists (and is not a zombie). A system call:
    /// use only when a wait has made no progress for a while.
    pub fn peer_alive(&self, local: u32) -> bool {
        process_alive(self.pid(local))
    }

    /// The node-wide area for shared-memory collectives: its base address and length. Every
    /// local rank maps the same bytes; the area is zero-filled at creation. What lives there
    /// and how access is synchronised is the business of the safe wrapper in `shm::coll`.
    pub fn coll_area(&self) -> (*mut u8, usize) {
        // SAFETY: the area lies inside the mapping (its size was checked against the layout).
        (
            unsafe { self.seg.base().add(self.layout.coll_offset()) },
            self.layout.coll_bytes,
        )
    }

    /// Largest payload of one ring message.
    pub fn max_payload(&self) -> usize {
        ring::max_payload(self.layout.ring_bytes)
    }

    /// Sends one message to local rank `peer`; false when its ring is full right now.
    #[inline]
    pub fn try_send(&mut self, peer: u32, header: &Header, parts: &[&[u8]]) -> bool {
        self.out[peer as usize].try_send(header, parts)
    }

    /// True when a message from local rank `peer` is waiting.
    #[inline]
    pub fn ready(&self, peer: u32) -> bool {
        self.inbound[peer as usize].ready()
    }

    /// Takes the next message from local rank `peer`, if any, handing header and payload to `f`.
    #[inline]
    pub fn poll<R>(&mut self, peer: u32, f: impl FnOnce(&Header, &[u8], &[u8]) -> R) -> Option<R> {
        self.inbound[peer as usize].poll(f)
    }
}

/// True when process `pid` exists and is not a zombie.
pub fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // Field 3 (after the parenthesised command name) is the state; Z = zombie, X = dead.
        Ok(stat) => match stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
        {
            Some(state) => state != "Z" && state != "X",
            None => true,
        },
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A segment name unique to this test process; the name is unlinked when the guard
    /// drops, so a failing test leaves nothing in /dev/shm.
    struct Name(String);

    impl std::ops::Deref for Name {
        type Target = str;
        fn deref(&self) -> &str {
            &self.0
        }
    }

    impl Drop for Name {
        fn drop(&mut self) {
            let _ = Segment::unlink(&self.0);
        }
    }

    fn name(tag: &str) -> Name {
        Name(format!("/weft-test-{}-{tag}", std::process::id()))
    }

    #[test]
    fn create_attach_exchange_unlink() {
        let n = name("a");
        let layout = Layout {
            local_size: 3,
            ring_bytes: 8192,
            coll_bytes: 8192,
        };
        let mut a = ShmNode::create(&n, layout, 0).unwrap();
        let mut b = ShmNode::attach(&n, 2).unwrap();
        assert_eq!(a.attached(), 2);
        assert_eq!(b.layout(), layout);
        a.unlink().unwrap();
        assert!(!std::path::Path::new(&format!("/dev/shm{}", &*n)).exists());
        // Mode 0600 was checked while the name existed in the multi-process tests; here: data.
        let h = Header {
            kind: 3,
            src: 0,
            ctx: 9,
            tag: 5,
            len: 3,
            aux: 1,
            ..Header::default()
        };
        assert!(a.try_send(2, &h, &[b"abc"]));
        assert!(!b.ready(1));
        let got = b.poll(0, |h, x, y| (*h, [x, y].concat())).unwrap();
        assert_eq!(got, (h, b"abc".to_vec()));
        assert!(b.probe_cma(0));
        assert!(b.peer_alive(0));
        assert!(!b.peer_alive(1), "rank 1 never attached");
    }

    #[test]
    fn segment_is_private_to_the_user() {
        use std::os::unix::fs::PermissionsExt;
        let n = name("mode");
        let a = ShmNode::create(
            &n,
            Layout {
                local_size: 1,
                ring_bytes: 4096,
                coll_bytes: 8192,
            },
            0,
        )
        .unwrap();
        let mode = std::fs::metadata(format!("/dev/shm{}", &*n))
            .unwrap()
            .permissions()
            .mode();
        a.unlink().unwrap();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn bad_layouts_and_names_are_errors() {
        assert!(ShmNode::create(
            &name("b"),
            Layout {
                local_size: 2,
                ring_bytes: 5000,
                coll_bytes: 8192
            },
            0
        )
        .is_err());
        assert!(ShmNode::create(
            &name("c"),
            Layout {
                local_size: 0,
                ring_bytes: 8192,
                coll_bytes: 8192
            },
            0
        )
        .is_err());
        assert!(ShmNode::create(
            "no-slash",
            Layout {
                local_size: 1,
                ring_bytes: 8192,
                coll_bytes: 8192
            },
            0
        )
        .is_err());
        assert!(ShmNode::attach(&name("missing"), 0).is_err());
        let n = name("d");
        let a = ShmNode::create(
            &n,
            Layout {
                local_size: 2,
                ring_bytes: 8192,
                coll_bytes: 8192,
            },
            0,
        )
        .unwrap();
        assert_eq!(
            ShmNode::attach(&n, 5).err().map(|e| e.kind()),
            Some(ErrorKind::InvalidRank)
        );
        a.unlink().unwrap();
    }

    #[test]
    fn dead_process_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(!process_alive(pid));
        assert!(process_alive(std::process::id() as i32));
    }
}
