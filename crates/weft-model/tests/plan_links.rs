//! Type I trees placed on fabrics: inter-group packets, radius and busiest link on small
//! fat trees where the numbers can be checked by hand.

use weft_model::fabric::Fabric;
use weft_model::plan::{analyse_links, PlaceMethod, Placement, TreeShape};

fn report(spec: &str, procs: u64, shape: &str, place: PlaceMethod) -> weft_model::plan::LinkReport {
    let f = Fabric::generate(spec, &[]).unwrap();
    let p = Placement::new(&f, procs, place).unwrap();
    let t = TreeShape::parse(shape).unwrap().build(&f, &p).unwrap();
    t.validate().unwrap();
    analyse_links(&f, &p, &t).unwrap()
}

const FT: &str = "fat-tree:leaves=4,spines=2,endpoints-per-leaf=4";

#[test]
fn inter_switch_packets_by_shape() {
    // 16 ranks, 4 per leaf. Binary k-ary: parent (r-1)/2 crosses leaves for r = 4..15
    // (12 edges). Hierarchical: one edge per extra group.
    let kary = report(FT, 16, "kary:2", PlaceMethod::Contiguous);
    assert_eq!(kary.level_names, vec!["node", "switch"]);
    assert_eq!(kary.inter_group_packets, vec![15, 12]);
    let hier = report(FT, 16, "hier:2", PlaceMethod::Contiguous);
    assert_eq!(hier.inter_group_packets, vec![15, 3]);
    // Binomial on aligned blocks of 4: only 0-4, 0-8 and 8-12 cross.
    let knomial = report(FT, 16, "knomial:2", PlaceMethod::Contiguous);
    assert_eq!(knomial.inter_group_packets, vec![15, 3]);
    // Hierarchical never crosses more than k-ary here.
    assert!(hier.max_link_packets <= kary.max_link_packets);
}

#[test]
fn radius_and_busiest_link() {
    // kary:2, 16 ranks: the path 15 -> 7 -> 3 -> 1 -> 0 crosses leaf3->leaf1 (4 links) then
    // stays on leaf 0/1 boundaries: 7 -> 3 (leaf1 -> leaf0, 4 links), 3 -> 1 and 1 -> 0 on
    // leaf 0 (2 links each): 12 links.
    let kary = report(FT, 16, "kary:2", PlaceMethod::Contiguous);
    assert_eq!(kary.height, 4);
    assert_eq!(kary.radius, 12);
    // Every packet leaves its NIC on the ep->leaf link, so at least one packet per link; the
    // busiest is a switch link carrying several inter-leaf packets.
    assert!(kary.max_link_packets >= 2, "{kary:?}");
    assert!(kary.max_link.contains("->"));
    // Total = 4 links per inter-leaf edge + 2 per intra-leaf edge.
    assert_eq!(kary.total_link_packets, 12 * 4 + 3 * 2);
}

#[test]
fn ports_of_one_node_use_no_link() {
    let r = report(
        "fat-tree:leaves=2,spines=1,endpoints-per-leaf=2,ports-per-node=2",
        2,
        "kary:2",
        PlaceMethod::Contiguous,
    );
    assert_eq!(r.radius, 0);
    assert_eq!(r.max_link_packets, 0);
    assert_eq!(r.max_link, "");
    assert_eq!(r.inter_group_packets, vec![0, 0]);
}

#[test]
fn round_robin_placement_crosses_more() {
    let c = report(FT, 8, "hier:2", PlaceMethod::Contiguous);
    let rr = report(FT, 8, "hier:2", PlaceMethod::RoundRobin);
    // Contiguous: 8 ranks on 2 leaves -> 1 crossing; round-robin: 4 leaves -> 3.
    assert_eq!(c.inter_group_packets[1], 1);
    assert_eq!(rr.inter_group_packets[1], 3);
}

#[test]
fn bad_shapes() {
    for (text, word) in [
        ("kary:1", "below 2"),
        ("tri:3", "kary:K"),
        ("kary", "kary:K"),
        ("hier:x", "hier:x"),
    ] {
        let err = TreeShape::parse(text).unwrap_err();
        assert!(err.message().contains(word), "{text}: {err}");
    }
}
