//! A send to a network peer completes only once its bytes have left the sender: an eager
//! message that UCX keeps past the call (it wires up a new endpoint first, over UCX's TCP
//! transport as between hosts without RDMA hardware) needs the sender's polls to go out, so
//! its request must not complete before UCX reports it sent. MPI's progress rule (MPI-4.1
//! §3.5) lets a rank whose send is complete stop calling the library (here: sleep outside
//! it until its partner has received), and the matching receive must still complete.
//!
//! One test in this file: it sets `UCX_TLS` for the process before any rank starts.

mod common;

#[cfg(feature = "ucx")]
#[test]
fn an_isend_completed_by_wait_has_left_before_the_sender_stops_polling() {
    use common::run_job as job;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    /// Set by rank 0 once it has the message (or has given up): rank 1 sleeps outside weft
    /// until then.
    static RECEIVED: AtomicBool = AtomicBool::new(false);
    /// How long rank 0 waits for the message while rank 1 does not poll: with the fix it
    /// arrives as soon as rank 0 polls (rank 1's wait returned only once UCX had sent it);
    /// without it, never before rank 1 polls again. A bound, so the test cannot hang.
    const HOLD: Duration = Duration::from_secs(30);

    // UCX over TCP: a new endpoint is connected before its first message goes out, and
    // that takes the sender's progress after the call. Set before any UCX context exists.
    std::env::set_var("UCX_TLS", "tcp");
    let vars = [("WEFT_TRANSPORTS", "shm,ucx")];
    job(
        2,
        &vars,
        |r| r,
        |rank, weft, _| {
            let w = weft.world();
            if rank == 1 {
                // The first message from rank 1 to rank 0: its endpoint is new.
                let data = [7u8; 8];
                w.scope(|s| {
                    let r = w.isend(s, &data, 0, 3).unwrap();
                    r.wait().unwrap();
                });
                // Outside weft: nothing polls this rank's endpoint until rank 0 has received.
                let until = Instant::now() + HOLD + Duration::from_secs(5);
                while !RECEIVED.load(Ordering::Acquire) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
            } else {
                let mut got = [0u8; 8];
                let arrived = w.scope(|s| {
                    let mut r = w.irecv(s, &mut got, 1, 3).unwrap();
                    let until = Instant::now() + HOLD;
                    while Instant::now() < until {
                        if r.test().unwrap().is_some() {
                            return true;
                        }
                    }
                    // Let rank 1 poll again, so the job ends either way.
                    RECEIVED.store(true, Ordering::Release);
                    r.wait().unwrap();
                    false
                });
                RECEIVED.store(true, Ordering::Release);
                assert!(
                    arrived,
                    "rank 1's completed isend reached rank 0 only once rank 1 polled again"
                );
                assert_eq!(got, [7u8; 8]);
            }
            weft.finalize().unwrap();
        },
    );
}
