//! A `/dev/shm` too small for a segment is a clear error when the segment is made — naming
//! `/dev/shm`, the bytes needed and the bytes free — never a SIGBUS when a page is touched
//! later. Asks for more than the free space (so nothing is filled on the way) for the
//! transport's segments and the symmetric heap's regions, and checks nothing is left behind.

use weft_transport::shm::heap::Region;
use weft_transport::shm::segment::Segment;

fn free_bytes() -> u64 {
    // SAFETY: statvfs on a NUL-terminated path into a zeroed struct.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(c"/dev/shm".as_ptr(), &mut st), 0);
        st.f_bavail as u64 * st.f_frsize as u64
    }
}

fn check(e: &weft_core::Error, name: &str, needed_at_least: u64) {
    let m = e.message();
    assert!(m.contains("/dev/shm"), "{m}");
    assert!(m.contains(name), "{m}");
    let needed: u64 = m
        .split(": ")
        .nth(1)
        .and_then(|t| t.split(" bytes needed").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no byte count needed in {m:?}"));
    assert!(needed >= needed_at_least, "{m}");
    assert!(m.contains(" bytes free"), "{m}");
    let leftover = std::path::Path::new("/dev/shm").join(name.trim_start_matches('/'));
    assert!(!leftover.exists(), "{} left behind", leftover.display());
}

#[test]
fn a_segment_larger_than_dev_shm_fails_at_creation() {
    let want = free_bytes() + (1 << 30);
    let name = format!("/weft-test-{}-noroom-seg", std::process::id());
    let e = match Segment::create(&name, want as usize) {
        Ok(_) => panic!("a segment of {want} bytes was made in a /dev/shm with less free"),
        Err(e) => e,
    };
    check(&e, &name, want);
}

#[test]
fn a_symmetric_heap_region_larger_than_dev_shm_fails_at_creation() {
    let want = free_bytes() + (1 << 30);
    let name = format!("/weft-test-{}-noroom-heap", std::process::id());
    let e = match Region::create(&name, 2, 0, want as usize) {
        Ok(_) => panic!("a region of {want} bytes was made in a /dev/shm with less free"),
        Err(e) => e,
    };
    check(&e, &name, want);
}
