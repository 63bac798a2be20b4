//! In-process store for tests that run one thread per rank: the same table the TCP server
//! uses, shared through an `Arc`, with no sockets.
//!
//! Depends only on weft-core.

use crate::table::{AbortRecord, Table};
use crate::Store;
use std::sync::Arc;
use std::time::Duration;
use weft_core::Result;

/// A store living in this process; clone the `Arc` into each rank's thread.
#[derive(Default)]
pub struct MemStore {
    table: Table,
}

impl MemStore {
    /// A new, empty store.
    pub fn new() -> Arc<MemStore> {
        Arc::new(MemStore::default())
    }

    /// Every abort requested so far, oldest first (nothing ends a job in-process).
    pub fn aborts(&self) -> Vec<AbortRecord> {
        self.table.aborts()
    }
}

impl Store for MemStore {
    fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        self.table.put(key, value)
    }

    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        self.table.get(key, timeout)
    }

    fn get_many(&self, keys: &[String], timeout: Duration) -> Result<Vec<Vec<u8>>> {
        self.table.get_many(keys, timeout)
    }

    fn barrier(&self, name: &str, count: u32, timeout: Duration) -> Result<()> {
        self.table.barrier(name, count, timeout)
    }

    fn abort(&self, code: i32, message: &str) -> Result<()> {
        self.table.record_abort(AbortRecord {
            rank: None,
            code,
            message: message.to_owned(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use weft_core::ErrorKind;

    #[test]
    fn get_waits_for_put_from_another_thread() {
        let s = MemStore::new();
        let s2 = Arc::clone(&s);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            s2.put("k", b"v").unwrap();
        });
        // Only the put ends this get: its timeout is a hang catcher.
        assert_eq!(s.get("k", Duration::from_secs(600)).unwrap(), b"v");
        t.join().unwrap();
        s.put("k", b"w").unwrap();
        assert_eq!(s.get("k", Duration::ZERO).unwrap(), b"w");
    }

    #[test]
    fn get_times_out_naming_the_key() {
        let s = MemStore::new();
        let t0 = Instant::now();
        let e = s.get("missing", Duration::from_millis(60)).unwrap_err();
        assert!(t0.elapsed() >= Duration::from_millis(60));
        assert_eq!(e.kind(), ErrorKind::Timeout);
        assert!(e.message().contains("\"missing\""), "{e}");
    }

    #[test]
    fn barrier_releases_all_and_is_reusable() {
        for n in [1u32, 2, 3, 4, 7] {
            let s = MemStore::new();
            let threads: Vec<_> = (0..n)
                .map(|r| {
                    let s = Arc::clone(&s);
                    std::thread::spawn(move || {
                        for round in 0..3 {
                            s.put(&format!("{round}/{r}"), &[r as u8]).unwrap();
                            s.barrier("b", n, Duration::from_secs(600)).unwrap();
                            // After the barrier every rank's key of this round exists.
                            for p in 0..n {
                                let v = s.get(&format!("{round}/{p}"), Duration::ZERO).unwrap();
                                assert_eq!(v, [p as u8]);
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        }
    }

    #[test]
    fn barrier_timeout_withdraws_and_mismatch_is_an_error() {
        let s = MemStore::new();
        let e = s.barrier("b", 2, Duration::from_millis(30)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Timeout);
        assert!(e.message().contains("1 of 2"), "{e}");
        // The timed-out caller withdrew, so two new callers complete it.
        let s2 = Arc::clone(&s);
        let long = Duration::from_secs(600);
        let t = std::thread::spawn(move || s2.barrier("b", 2, long));
        s.barrier("b", 2, long).unwrap();
        t.join().unwrap().unwrap();

        // A caller with another count while one waits is refused and does not count: the
        // waiter still needs exactly two more. The waiter is seen waiting before the other
        // call (no pause that hopes for it); its timeout only catches a hang.
        let s2 = Arc::clone(&s);
        let t = std::thread::spawn(move || s2.barrier("c", 3, long));
        let deadline = Instant::now() + long;
        while s.table.waiting_at("c") == 0 {
            assert!(Instant::now() < deadline, "the first caller never arrived");
            std::thread::yield_now();
        }
        let e = s.barrier("c", 2, Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("count 2 differs"), "{e}");
        assert_eq!(s.table.waiting_at("c"), 1, "the refused caller counted");
        let s3 = Arc::clone(&s);
        let second = std::thread::spawn(move || s3.barrier("c", 3, long));
        while s.table.waiting_at("c") < 2 {
            assert!(Instant::now() < deadline, "the second caller never arrived");
            std::thread::yield_now();
        }
        assert!(!t.is_finished(), "released with two of three callers");
        s.barrier("c", 3, long).unwrap();
        t.join().unwrap().unwrap();
        second.join().unwrap().unwrap();
        assert_eq!(
            s.barrier("d", 0, Duration::ZERO).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn abort_is_recorded() {
        let s = MemStore::new();
        s.abort(3, "rank 1 gave up").unwrap();
        assert_eq!(
            s.aborts(),
            vec![AbortRecord {
                rank: None,
                code: 3,
                message: "rank 1 gave up".into()
            }]
        );
    }
}
