//! Fabric generators, files, routing and placement: shapes, counts, route lengths, the
//! tie-breaking rule, faulty parts and bad input.

use weft_core::ErrorKind;
use weft_model::fabric::{parse_fabric_json, parse_fabric_toml, DistanceCache, Fabric, Vertex};
use weft_model::plan::{PlaceMethod, Placement};

fn gen(spec: &str) -> Fabric {
    Fabric::generate(spec, &[]).unwrap()
}

#[test]
fn two_level_fat_tree_counts_and_routes() {
    let f = gen("fat-tree:leaves=4,spines=2,endpoints-per-leaf=3");
    assert_eq!(f.switch_count(), 6);
    assert_eq!(f.endpoint_count(), 12);
    assert_eq!(f.switch_link_count(), 8);
    assert!(!f.has_pods());
    let mut cache = DistanceCache::new(&f, 1 << 20);
    // Same leaf: ep -> leaf -> ep.
    assert_eq!(f.route_links(0, 1, &mut cache), 2);
    // Different leaves: ep -> leaf -> spine -> leaf -> ep.
    assert_eq!(f.route_links(0, 5, &mut cache), 4);
    let r = f.route(0, 5, &mut cache);
    assert_eq!(r.len(), 5);
    assert_eq!(r[0], Vertex::Endpoint(0));
    assert_eq!(r[4], Vertex::Endpoint(5));
    // Tie-breaking: two spines (switch ids 4 and 5) at equal distance; destination
    // endpoint index mod 2 picks the spine.
    assert_eq!(r[2], Vertex::Switch(4 + (5 % 2)));
    let r = f.route(0, 4, &mut cache);
    assert_eq!(r[2], Vertex::Switch(4));
    assert_eq!(f.vertex_name(r[2]), "spine0");
}

#[test]
fn pruned_fat_tree_wiring() {
    let f = gen("fat-tree:leaves=4,spines=4,endpoints-per-leaf=2,uplinks-per-leaf=2");
    assert_eq!(f.switch_count(), 8);
    assert_eq!(f.switch_link_count(), 8);
    // Leaf i reaches spines i and i+1 (mod 4).
    let spines: Vec<&str> = f.neighbours(3).iter().map(|&s| f.switch_name(s)).collect();
    assert_eq!(spines, vec!["spine0", "spine3"]);
    // Leaf 0 to leaf 2 needs leaf 1 or 3 in between: 4 switch hops.
    assert_eq!(f.distances_from(0)[2], 4);
}

#[test]
fn pruned_fat_tree_disconnected_is_an_error() {
    let err = Fabric::generate(
        "fat-tree:leaves=4,spines=4,endpoints-per-leaf=2,uplinks-per-leaf=1",
        &[],
    );
    // Leaf i -> spine i only: four islands.
    let err = err.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("disconnected"), "{err}");
}

#[test]
fn three_level_fat_tree() {
    let f = gen("fat-tree:leaves=2,spines=2,endpoints-per-leaf=2,pods=3,cores=4");
    assert_eq!(f.switch_count(), 3 * 4 + 4);
    assert_eq!(f.endpoint_count(), 12);
    assert!(f.has_pods());
    // spine j links to cores c with c mod 2 == j mod 2: 2 cores each.
    let spine0 = f.switch_by_name("pod0.spine0").unwrap();
    let cores: Vec<&str> = f
        .neighbours(spine0)
        .iter()
        .map(|&s| f.switch_name(s))
        .filter(|n| n.starts_with("core"))
        .collect();
    assert_eq!(cores, vec!["core0", "core2"]);
    let mut cache = DistanceCache::new(&f, 1 << 20);
    // Across pods: ep, leaf, spine, core, spine, leaf, ep = 6 links.
    assert_eq!(f.route_links(0, 11, &mut cache), 6);
    assert_eq!(f.route_links(0, 3, &mut cache), 4);
    assert_eq!(f.switch_pod(f.endpoint_switch(11)), 2);
}

#[test]
fn ports_per_node_groups_endpoints() {
    let f = gen("fat-tree:leaves=2,spines=1,endpoints-per-leaf=4,ports-per-node=2");
    assert_eq!(f.node_count(), 4);
    assert_eq!(f.endpoint_node(0), f.endpoint_node(1));
    assert_ne!(f.endpoint_node(1), f.endpoint_node(2));
    let mut cache = DistanceCache::new(&f, 1 << 20);
    // Two ports of one node talk through memory.
    assert_eq!(f.route_links(0, 1, &mut cache), 0);
    assert_eq!(f.route_links(1, 2, &mut cache), 2);
}

#[test]
fn torus_distances_wrap_around() {
    let f = gen("torus:dims=4x3");
    assert_eq!(f.switch_count(), 12);
    assert_eq!(f.endpoint_count(), 12);
    // 4-ring has 4 links per row, 3 rows; 3-ring has 3 links per column, 4 columns.
    assert_eq!(f.switch_link_count(), 12 + 12);
    let d = f.distances_from(0);
    // Coordinates (x, y) with x fastest: switch 3 = (3,0) is 1 hop away by wrap-around.
    assert_eq!(d[3], 1);
    assert_eq!(d[2], 2);
    assert_eq!(d[2 + 4], 3);
    assert_eq!(f.switch_name(6), "r2x1");
    let small = gen("torus:dims=2x1x1");
    assert_eq!(small.switch_link_count(), 1);
}

#[test]
fn torus_faulty_parts() {
    let f = Fabric::generate("torus:dims=4", &["r0x0".to_string()]).unwrap_err();
    // A 1-D name uses one coordinate.
    assert!(f.message().contains("faulty"), "{f}");
    let f = Fabric::generate("torus:dims=4", &["r1-r2".to_string()]).unwrap();
    // Ring 0-1-2-3-0 without link 1-2: 1 to 2 now goes the long way.
    assert_eq!(f.distances_from(1)[2], 3);
    let f = Fabric::generate("torus:dims=4", &["r1".to_string()]).unwrap();
    assert_eq!(f.switch_count(), 3);
    assert_eq!(f.endpoint_count(), 3);
    let err = Fabric::generate("torus:dims=4", &["r1".to_string(), "r3".to_string()]).unwrap_err();
    assert!(err.message().contains("disconnected"), "{err}");
}

#[test]
fn dragonfly_shape() {
    let f = gen("dragonfly:groups=5,routers=4,endpoints-per-router=2");
    assert_eq!(f.switch_count(), 20);
    assert_eq!(f.endpoint_count(), 40);
    // 5 groups × 6 local links + 10 global links.
    assert_eq!(f.switch_link_count(), 30 + 10);
    // Any two routers: at most local, global, local.
    for s in 0..20 {
        let d = f.distances_from(s);
        assert!(d.iter().all(|&x| x <= 3));
    }
    assert_eq!(f.switch_pod(7), 1);
}

#[test]
fn bad_specs_name_the_field() {
    let cases = [
        ("fat-tree:leaves=4,spines=2", "endpoints-per-leaf"),
        ("fat-tree:leaves=x,spines=2,endpoints-per-leaf=1", "leaves"),
        (
            "fat-tree:leaves=4,spines=2,endpoints-per-leaf=1,uplinks-per-leaf=3",
            "uplinks-per-leaf",
        ),
        (
            "fat-tree:leaves=4,spines=2,endpoints-per-leaf=1,pods=2",
            "cores",
        ),
        (
            "fat-tree:leaves=4,spines=2,endpoints-per-leaf=1,colour=red",
            "colour",
        ),
        ("torus:dims=4xx2", "dims"),
        ("torus:dims=0x2", "dims"),
        ("torus:dims=2x2x2x2x2x2x2", "dims"),
        (
            "dragonfly:groups=2,routers=0,endpoints-per-router=1",
            "routers",
        ),
        ("mesh:size=3", "mesh"),
        ("fat-tree", "fat-tree"),
    ];
    for (spec, field) in cases {
        let err = Fabric::generate(spec, &[]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{spec}");
        assert!(err.message().contains(field), "{spec}: {err}");
    }
}

#[test]
fn fabric_files_toml_and_json() {
    let toml_text = r#"
switches = [{ name = "a", pod = 0 }, { name = "b", pod = 1 }, { name = "top" }]
links = [["a", "top"], ["b", "top"]]
endpoints = [
  { name = "n0p0", switch = "a", node = "n0" },
  { name = "n0p1", switch = "a", node = "n0" },
  { name = "n1", switch = "b" },
]
"#;
    let f = parse_fabric_toml(toml_text, "x.toml", &[]).unwrap();
    assert_eq!(f.switch_count(), 3);
    assert_eq!(f.endpoint_count(), 3);
    assert_eq!(f.node_count(), 2);
    assert!(f.has_pods());
    assert_eq!(f.endpoint_name(2), "n1");
    let mut cache = DistanceCache::new(&f, 1 << 20);
    assert_eq!(f.route_links(0, 2, &mut cache), 4);

    let json_text = r#"{"switches":[{"name":"a"},{"name":"b"}],"links":[["a","b"]],
        "endpoints":[{"name":"e0","switch":"a"},{"name":"e1","switch":"b"}]}"#;
    let f = parse_fabric_json(json_text, "x.json", &[]).unwrap();
    assert_eq!(f.switch_link_count(), 1);

    let bad = [
        (
            r#"switches = [{ name = "a" }]
endpoints = [{ name = "e", switch = "zz" }]"#,
            "zz",
        ),
        (
            r#"switches = [{ name = "a" }, { name = "a" }]
endpoints = []"#,
            "duplicate",
        ),
        (
            r#"switches = [{ name = "a" }, { name = "b" }]
endpoints = [{ name = "e", switch = "a" }]"#,
            "disconnected",
        ),
        (
            r#"switches = [{ name = "a" }]
links = [["a", "a"]]
endpoints = [{ name = "e", switch = "a" }]"#,
            "self link",
        ),
        (r#"switches = [{ name = "a", colour = 1 }]"#, "colour"),
        (
            r#"switches = [{ name = "a" }, { name = "b" }]
links = [["a", "b"]]
endpoints = [{ name = "e", switch = "a", node = "n" }, { name = "f", switch = "b", node = "n" }]"#,
            "node",
        ),
    ];
    for (text, word) in bad {
        let err = parse_fabric_toml(text, "bad.toml", &[]).unwrap_err();
        assert!(err.message().contains(word), "{text}: {err}");
        assert!(err.message().contains("bad.toml"), "{err}");
    }
}

#[test]
fn placements() {
    let f = gen("fat-tree:leaves=3,spines=1,endpoints-per-leaf=2");
    let p = Placement::new(&f, 4, PlaceMethod::Contiguous).unwrap();
    assert_eq!(p.endpoints(), &[0, 1, 2, 3]);
    let p = Placement::new(&f, 4, PlaceMethod::RoundRobin).unwrap();
    assert_eq!(p.endpoints(), &[0, 2, 4, 1]);
    let a = Placement::new(&f, 6, PlaceMethod::Random(7)).unwrap();
    let b = Placement::new(&f, 6, PlaceMethod::Random(7)).unwrap();
    assert_eq!(a, b);
    let mut sorted = a.endpoints().to_vec();
    sorted.sort();
    assert_eq!(sorted, vec![0, 1, 2, 3, 4, 5]);
    let levels = Placement::new(&f, 6, PlaceMethod::Contiguous)
        .unwrap()
        .group_levels(&f);
    assert_eq!(levels.len(), 2);
    assert_eq!(levels[1], vec![0, 0, 1, 1, 2, 2]);
    let err = Placement::new(&f, 7, PlaceMethod::Contiguous).unwrap_err();
    assert!(err.message().contains("procs"), "{err}");
    assert!(PlaceMethod::parse("random:x").is_err());
    assert_eq!(
        PlaceMethod::parse("random:3").unwrap(),
        PlaceMethod::Random(3)
    );
    assert!(PlaceMethod::parse("spiral")
        .unwrap_err()
        .message()
        .contains("place"));
}
