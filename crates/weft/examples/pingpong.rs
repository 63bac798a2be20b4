//! Ping-pong between ranks 0 and 1 at a few sizes; prints the median one-way latency.
//! (`weft bench p2p` is the full benchmark; this is the smallest program that measures.)
//!
//! Run: `weft run -n 2 target/release/examples/pingpong`

fn main() -> weft::Result<()> {
    let weft = weft::init()?;
    let world = weft.world();
    if world.size() < 2 {
        eprintln!("pingpong needs 2 ranks: weft run -n 2 ...");
        std::process::exit(2);
    }
    let me = world.rank();
    for bytes in [0usize, 8, 1024, 65536, 1 << 20] {
        let mut buf = vec![7u8; bytes];
        let iters = if bytes < 65536 { 10_000 } else { 200 };
        let mut one_way_us = Vec::with_capacity(iters);
        for i in 0..iters + iters / 10 {
            let t = std::time::Instant::now();
            match me {
                0 => {
                    world.send(&buf, 1, 0)?;
                    world.recv(&mut buf, 1, 0)?;
                }
                1 => {
                    world.recv(&mut buf, 0, 0)?;
                    world.send(&buf, 0, 0)?;
                }
                _ => {}
            }
            if i >= iters / 10 {
                one_way_us.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
            }
        }
        if me == 0 {
            one_way_us.sort_by(|a, b| a.total_cmp(b));
            println!(
                "{bytes:>8} bytes: {:.3} us one way (median of {iters})",
                one_way_us[iters / 2]
            );
        }
    }
    weft.finalize()
}
