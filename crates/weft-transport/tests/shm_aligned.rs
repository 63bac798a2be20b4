//! `Segment::aligned` moves a segment's mapping to an aligned address and it stays the same
//! shared object, and regions made with aligned bodies keep their header (the symmetric
//! heap's). Each alignment is asked twice, at offsets 0 and one page: the mapping cannot
//! already be aligned for both, so at least one call moves it.

mod common;

#[test]
fn an_aligned_segment_is_the_same_object() {
    common::moves_keep_the_object("plain");
}

#[test]
fn an_aligned_region_has_its_header() {
    common::regions_keep_their_header("plain");
}
