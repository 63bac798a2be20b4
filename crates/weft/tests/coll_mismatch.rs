//! Ranks that disagree about a collective's root, or about which collective they call,
//! exchange no data (the root and the collective are part of the collective tag); a rank
//! left waiting sees its peer's message for the same call number and reports the
//! disagreement as an error naming both roots (or collectives) instead of hanging. One
//! thread per rank; the cases are ones where the protocol lets some rank see it (a rank
//! that waits on a peer which never sends it anything, with no message from that peer in
//! its queue, cannot tell a disagreement from a slow peer).

mod common;

use weft::coll::Tuning;
use weft::{Comm, ErrorKind};

fn force(w: &Comm, var: &str, algo: &str) {
    w.set_collective_tuning(Tuning::from_vars(&[(var, algo)]).unwrap());
}

/// Rank 2 of 3 passes root 1 where ranks 0 and 1 pass root 0: rank 0 sends rank 2 its part
/// (with root 0 in the tag), rank 2 waits for rank 1, which never sends. Messages stay under
/// the eager limit: a larger one waits for its receiver, which never takes it, so rank 0
/// would wait for ever (the error on rank 2 is what ends such a job).
#[test]
fn a_rank_with_another_root_gets_an_error_not_a_hang() {
    for (var, algo) in [
        ("WEFT_BCAST_ALGO", "knomial"),
        ("WEFT_SCATTER_ALGO", "linear"),
        ("WEFT_SCATTER_ALGO", "knomial"),
    ] {
        // `warm`: first one call that all ranks make with root 1, so rank 2's mismatched
        // call repeats it and runs directly (a first call takes the schedule).
        for (n, warm) in [
            (0usize, false),
            (1, false),
            (100, false),
            (2047, false),
            (1, true),
            (100, true),
        ] {
            common::run_ranks(3, &[], move |w| {
                force(&w, var, algo);
                let rank = w.rank();
                let call = |root: u32| {
                    if var == "WEFT_BCAST_ALGO" {
                        let mut buf = vec![rank as u64; n];
                        w.bcast(&mut buf, root)
                    } else {
                        let send = vec![9u64; 3 * n];
                        let mut recv = vec![0u64; n];
                        w.scatter(&send, &mut recv, root)
                    }
                };
                if warm {
                    call(1).unwrap();
                }
                let direct_before = w.coll_direct_runs();
                let r = call(if rank == 2 { 1 } else { 0 });
                if rank == 2 {
                    assert_eq!(
                        w.coll_direct_runs() > direct_before,
                        warm,
                        "{algo} {n}: rank 2 ran directly exactly when it repeated a call"
                    );
                    let e = r.unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::InvalidRoot, "{algo} {n} {warm}: {e}");
                    assert!(
                        e.message().contains("rank 0 passed root 0")
                            && e.message().contains("this rank passed root 1"),
                        "{algo} {n} {warm}: {e}"
                    );
                } else {
                    r.unwrap();
                }
                // Every rank started one collective: the next call is in step again.
                w.set_collective_tuning(Tuning::default());
                w.barrier().unwrap();
            });
        }
    }
}

/// Rank 1 calls bcast where ranks 0 and 2 call scatter (both from root 0).
#[test]
fn a_rank_calling_another_collective_gets_an_error() {
    common::run_ranks(3, &[("WEFT_BCAST_ALGO", "knomial")], |w| {
        let rank = w.rank();
        let mut buf = vec![0u32; 64];
        let r = if rank == 1 {
            w.bcast(&mut buf, 0)
        } else {
            let send = vec![1u32; 3 * 64];
            w.scatter(&send, &mut buf, 0)
        };
        if rank == 1 {
            let e = r.unwrap_err();
            assert!(
                e.message()
                    .contains("rank 0 called scatter where this rank called bcast"),
                "{e}"
            );
        } else {
            r.unwrap();
        }
        w.barrier().unwrap();
    });
}
