//! What the MPI layer adds over weft's Rust API on the short-message path: in one process,
//! 8-byte send + receive to self through `Comm::send`/`Comm::recv` and through
//! `MPI_Send`/`MPI_Recv` on MPI_COMM_SELF, same engine, interleaved batches; prints the
//! median per pair of calls of each and the difference.
//!
//!     cargo run --release -p weft-mpi --example layer_overhead

use mpi_abi::consts::{Handle, MPI_COMM_SELF};
use mpi_abi::p2p::{MPI_Recv, MPI_Send, MpiStatus};
use std::os::raw::c_void;
use std::time::Instant;

const MPI_BYTE: Handle = 0x247;

fn main() {
    // SAFETY: null argc/argv are allowed.
    let rc = unsafe { mpi_abi::env::MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) };
    assert_eq!(rc, 0);
    let me = mpi_abi::state::state_opt().unwrap().weft.self_comm();
    let out = [7u8; 8];
    let mut inb = [0u8; 8];
    let iters = 200_000;
    let (mut rust, mut mpi) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        let t = Instant::now();
        for _ in 0..iters {
            me.send(&out, 0, 1).unwrap();
            me.recv(&mut inb, 0, 1).unwrap();
        }
        rust.push(t.elapsed().as_nanos() as f64 / iters as f64);
        let t = Instant::now();
        let mut st = MpiStatus::default();
        for _ in 0..iters {
            // SAFETY: both buffers hold 8 bytes; the status is writable.
            unsafe {
                MPI_Send(
                    out.as_ptr() as *const c_void,
                    8,
                    MPI_BYTE,
                    0,
                    1,
                    MPI_COMM_SELF,
                );
                MPI_Recv(
                    inb.as_mut_ptr() as *mut c_void,
                    8,
                    MPI_BYTE,
                    0,
                    1,
                    MPI_COMM_SELF,
                    &mut st,
                );
            }
        }
        mpi.push(t.elapsed().as_nanos() as f64 / iters as f64);
    }
    rust.sort_by(f64::total_cmp);
    mpi.sort_by(f64::total_cmp);
    let (r, m) = (rust[rust.len() / 2], mpi[mpi.len() / 2]);
    println!("send+recv to self, 8 B, median of 15 batches of {iters}:");
    println!("  weft Rust API  {r:8.1} ns");
    println!("  MPI C ABI      {m:8.1} ns");
    println!(
        "  MPI layer adds {:8.1} ns per pair of calls ({:.1} ns per call)",
        m - r,
        (m - r) / 2.0
    );
    // SAFETY: every request is complete.
    assert_eq!(unsafe { mpi_abi::env::MPI_Finalize() }, 0);
}
