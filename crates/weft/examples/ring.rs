//! Passes a token around all ranks, each adding its rank, then every rank sends a 1 MiB block
//! to its right neighbour and checks what it got from the left.
//!
//! Run: `weft run -n 4 target/release/examples/ring`

fn main() -> weft::Result<()> {
    let weft = weft::init()?;
    let world = weft.world();
    let (me, n) = (world.rank(), world.size());
    let right = (me + 1) % n;
    let left = ((me + n - 1) % n) as i32;

    // The token: rank 0 starts it, everyone adds its rank, rank 0 checks the total.
    let mut token = [0u64];
    if me == 0 {
        world.send(&[0u64], right, 0)?;
        world.recv(&mut token, left, 0)?;
        let expected: u64 = (0..n as u64).sum();
        println!(
            "rank 0: token came back around {n} ranks with sum {} (expected {expected})",
            token[0]
        );
        assert_eq!(token[0], expected);
    } else {
        world.recv(&mut token, left, 0)?;
        token[0] += me as u64;
        world.send(&token, right, 0)?;
    }

    // A large shift: 1 MiB to the right, checked byte for byte.
    let out: Vec<u8> = (0..1 << 20).map(|i: u32| (i as u8) ^ me as u8).collect();
    let mut inp = vec![0u8; 1 << 20];
    let t = std::time::Instant::now();
    world.sendrecv(&out, right, 1, &mut inp, left, 1)?;
    let us = t.elapsed().as_secs_f64() * 1e6;
    let ok = inp
        .iter()
        .enumerate()
        .all(|(i, &b)| b == (i as u8) ^ left as u8);
    println!(
        "rank {me} of {n} on {} (local {} of {}): got 1 MiB from rank {left} in {us:.0} us, data {}",
        weft.node_id(),
        weft.local().0,
        weft.local().1,
        if ok { "correct" } else { "WRONG" }
    );
    weft.finalize()?;
    if ok {
        Ok(())
    } else {
        Err(weft::Error::new(
            weft::ErrorKind::Internal,
            "ring data mismatch",
        ))
    }
}
