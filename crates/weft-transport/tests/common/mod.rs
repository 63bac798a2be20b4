//! Checks shared by the aligned-segment tests.

use weft_transport::shm::heap::Region;
use weft_transport::shm::segment::Segment;

const PAGE: usize = 4096;
const ALIGN: usize = 1 << 27;

fn name(tag: &str) -> String {
    format!("/weft-test-aligned-{tag}-{}", std::process::id())
}

/// Moves a fresh segment to ALIGN at two offsets and checks every step kept its bytes and
/// still shares them with another mapping of the object.
pub(crate) fn moves_keep_the_object(tag: &str) {
    let n = name(tag);
    let len = 3 * PAGE;
    let seg = Segment::create(&n, len).unwrap();
    let other = Segment::open(&n).unwrap();
    Segment::unlink(&n).unwrap();
    let mut seg = seg;
    for (round, at) in [0usize, PAGE].into_iter().enumerate() {
        seg = seg.aligned(ALIGN, at).unwrap();
        assert!(!seg.base().is_null());
        assert_eq!(
            (seg.base() as usize + at) % ALIGN,
            0,
            "{tag}: base {:p} + {at} is not aligned to {ALIGN}",
            seg.base()
        );
        let byte = 0x40 + round as u8;
        // SAFETY: both mappings are `len` bytes of the same live object.
        unsafe {
            seg.base().add(len - 1).write_volatile(byte);
            assert_eq!(other.base().add(len - 1).read_volatile(), byte, "{tag}");
            other.base().write_volatile(byte + 1);
            assert_eq!(seg.base().read_volatile(), byte + 1, "{tag}");
        }
    }
}

/// Regions as the symmetric heap makes them, bodies aligned up to ALIGN: the header is
/// written and read back through the moved mappings.
pub(crate) fn regions_keep_their_header(tag: &str) {
    for (i, align) in [PAGE, 1 << 21, ALIGN].into_iter().enumerate() {
        let n = name(&format!("{tag}-region{i}"));
        let a = Region::create_aligned(&n, 2, 0, 1 << 20, align).unwrap();
        let b = Region::attach_aligned(&n, 1, align).unwrap();
        a.unlink().unwrap();
        assert_eq!(a.body_ptr() as usize % align, 0);
        assert_eq!(b.body_ptr() as usize % align, 0);
        assert_eq!(b.local_size(), 2);
        assert_eq!(a.attached(), 2);
        a.write(10, b"moved").unwrap();
        let mut out = [0u8; 5];
        b.read(10, &mut out).unwrap();
        assert_eq!(&out, b"moved");
    }
}
