//! `WEFT_YIELD=off` keeps the core: a rank waiting for a late message spins and never yields
//! (on a loaded machine each yield can cost a time slice), while `WEFT_YIELD=on` yields.

mod common;

use common::run_job;
use std::time::Duration;

fn yields_while_waiting(mode: &'static str) -> u64 {
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    run_job(
        2,
        &[("WEFT_YIELD", mode)],
        |_| 0,
        move |rank, weft, _| {
            let world = weft.world();
            if rank == 1 {
                std::thread::sleep(Duration::from_millis(30));
                world.send(&[7u8; 8], 0, 5).unwrap();
            } else {
                let mut buf = [0u8; 8];
                world.recv(&mut buf, 1, 5).unwrap();
                assert_eq!(buf, [7u8; 8]);
                tx.lock().unwrap().send(weft.idle_yields()).unwrap();
            }
            weft.finalize().unwrap();
        },
    );
    rx.recv().unwrap()
}

#[test]
fn yield_off_never_gives_the_core_away_and_on_does() {
    assert_eq!(yields_while_waiting("off"), 0);
    assert!(yields_while_waiting("on") > 0);
}
