//! Type I vs type II choice: small messages go to type II, large to type I, the radix falls
//! as messages grow, and the crossover is where the pick flips.

use weft_model::fabric::Fabric;
use weft_model::plan::{choose, sunway_like_params, PlaceMethod, Placement, SwitchCost};

#[test]
fn small_type2_large_type1_with_one_crossover() {
    let f = Fabric::generate(
        "fat-tree:leaves=32,spines=16,endpoints-per-leaf=16,ports-per-node=2",
        &[],
    )
    .unwrap();
    let p = Placement::new(&f, 512, PlaceMethod::Contiguous).unwrap();
    let sizes: Vec<u64> = (3..=18).map(|s| 1u64 << s).collect();
    let (rows, crossover) = choose(
        &f,
        &p,
        &sunway_like_params(),
        &SwitchCost::default(),
        &sizes,
        0.1,
    )
    .unwrap();
    assert!(rows[0].pick_type2, "{:?}", rows[0]);
    assert!(!rows.last().unwrap().pick_type2);
    let flip = crossover.unwrap();
    // Exactly one flip: type II below the crossover, type I from it on.
    for r in &rows {
        assert_eq!(r.pick_type2, r.bytes < flip, "{r:?}");
        assert!(r.type1_us > 0.0 && r.type2_us > 0.0);
    }
    // The model's radix never grows with the message size.
    assert!(rows.windows(2).all(|w| w[1].k <= w[0].k));
    // The minimum-cost tree on a full supernode keeps the spine and all 32 leaves.
    assert_eq!(rows[0].type2_switches, 33);
}

#[test]
fn slower_switches_move_the_crossover_down() {
    let f = Fabric::generate("fat-tree:leaves=8,spines=2,endpoints-per-leaf=8", &[]).unwrap();
    let p = Placement::new(&f, 64, PlaceMethod::Contiguous).unwrap();
    let sizes: Vec<u64> = (3..=20).map(|s| 1u64 << s).collect();
    let params = sunway_like_params();
    let fast = SwitchCost::default();
    let slow = SwitchCost {
        us_per_byte: fast.us_per_byte * 10.0,
        ..fast
    };
    let (_, c_fast) = choose(&f, &p, &params, &fast, &sizes, 0.1).unwrap();
    let (_, c_slow) = choose(&f, &p, &params, &slow, &sizes, 0.1).unwrap();
    assert!(
        c_slow.unwrap_or(8) < c_fast.unwrap_or(u64::MAX),
        "{c_slow:?} {c_fast:?}"
    );
    assert!(choose(&f, &p, &params, &fast, &[], 0.1).is_err());
}
