//! The bootstrap interface the runtime starts on, whichever launcher started the rank.
//!
//! A [`Boot`] tells a rank who it is ([`JobInfo`]: rank, size, the launcher's job name and,
//! when the launcher knows, the node of every rank) and lets the ranks exchange small
//! records the way every process manager allows: each rank [`put`](Boot::put)s its values,
//! all ranks [`fence`](Boot::fence), then any rank [`get`](Boot::get)s any other's. A fence
//! is collective over the whole job and also serves as a barrier. Back ends:
//!
//! - [`StoreBoot`]: weft's own key-value store (`weft run`), or the in-memory store of
//!   in-process tests;
//! - PMIx ([`crate::pmix`]): Slurm's `--mpi=pmix`, Open MPI's `mpirun`, through `libpmix`
//!   loaded at run time;
//! - PMI-2 and PMI-1 ([`crate::pmi`]): the text protocols of Slurm's `--mpi=pmi2` and
//!   MPICH's Hydra, spoken directly on `PMI_FD` or `PMI_PORT`.
//!
//! [`crate::select`] picks one from the environment. Depends only on weft-core.

use crate::Store;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weft_core::{Error, ErrorKind, Result};

/// The bootstrap back ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// weft's own authenticated key-value store (`weft run`).
    Weft,
    /// A PMIx server (Slurm `--mpi=pmix`, Open MPI's `mpirun`), through `libpmix`.
    Pmix,
    /// The PMI-2 wire protocol (Slurm `--mpi=pmi2`, Hydra).
    Pmi2,
    /// The PMI-1 wire protocol (Hydra, Slurm `--mpi=pmi2`, other PMI-1 servers).
    Pmi1,
    /// No launcher: a job of one rank.
    Single,
}

impl Backend {
    /// Every back end, in the order `WEFT_BOOT` lists them.
    pub const ALL: [Backend; 5] = [
        Backend::Weft,
        Backend::Pmix,
        Backend::Pmi2,
        Backend::Pmi1,
        Backend::Single,
    ];

    /// The back end's name, as `WEFT_BOOT` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Weft => "weft",
            Backend::Pmix => "pmix",
            Backend::Pmi2 => "pmi2",
            Backend::Pmi1 => "pmi1",
            Backend::Single => "single",
        }
    }

    /// The back end named `name` (`WEFT_BOOT`'s words).
    pub fn parse(name: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == name.trim())
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the launcher says about the job and this rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobInfo {
    /// This rank.
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// The launcher's name for the job: weft's job id, the PMIx namespace, the PMI job id
    /// or key-value space. Ranks of one job agree on it; it may be long and contain any
    /// character.
    pub launcher_job: String,
    /// The node index of every rank, when the launcher says (PMIx node ids, PMI's
    /// `PMI_process_mapping`); `None` when the ranks must exchange their node names.
    pub node_of: Option<Vec<u32>>,
}

impl JobInfo {
    /// Checks rank and size: a size of at least 1, a rank below it, a node list as long as
    /// the job. `source` names where they came from.
    pub fn checked(self, source: &str) -> Result<JobInfo> {
        if self.size == 0 || self.rank >= self.size {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "{source}: rank {} of size {}: the rank must be below the size",
                    self.rank, self.size
                ),
            ));
        }
        if let Some(n) = &self.node_of {
            if n.len() != self.size as usize {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "{source}: the node map covers {} ranks, the job has {}",
                        n.len(),
                        self.size
                    ),
                ));
            }
        }
        Ok(self)
    }
}

/// A rank's connection to its launcher's bootstrap service.
pub trait Boot: Send + Sync {
    /// Which back end this is.
    fn backend(&self) -> Backend;

    /// The job and this rank, as the launcher says.
    fn job(&self) -> &JobInfo;

    /// Publishes this rank's `value` under `key` (visible to the others after the next
    /// [`fence`](Boot::fence)). A key is put at most once per rank.
    fn put(&self, key: &str, value: &[u8]) -> Result<()>;

    /// Waits until every rank of the job has called `fence` as often as this one (or
    /// `timeout`); every value put before it is then visible to every rank.
    fn fence(&self, timeout: Duration) -> Result<()>;

    /// The value `rank` put under `key` before the last fence.
    fn get(&self, rank: u32, key: &str, timeout: Duration) -> Result<Vec<u8>>;

    /// The values `ranks` put under `key`, in their order. Back ends that can fetch them at
    /// once override this (weft's store answers in one round trip).
    fn get_all(&self, ranks: &[u32], key: &str, timeout: Duration) -> Result<Vec<Vec<u8>>> {
        ranks.iter().map(|&r| self.get(r, key, timeout)).collect()
    }

    /// Asks the launcher to end the whole job with `code` (MPI_Abort). May be called from
    /// any thread, also while another waits in a fence.
    fn abort(&self, code: i32, message: &str) -> Result<()>;

    /// The last call: waits for every rank to finalize (or `timeout`), then closes the
    /// connection.
    fn finalize(&self, timeout: Duration) -> Result<()>;

    /// The job's store for names every rank may read at any time, outside the per-rank
    /// records and fences (MPI's published service names): weft's store only. PMIx and PMI
    /// have no such store here (None).
    fn shared_store(&self) -> Option<Arc<dyn Store>> {
        None
    }
}

/// [`Boot`] over a weft [`Store`]: the launcher's TCP store or an in-memory one. `put(key)`
/// by rank r stores `<prefix><key>/<r>`; each fence is a barrier of the whole job.
pub struct StoreBoot {
    store: Arc<dyn Store>,
    job: JobInfo,
    prefix: String,
    fences: AtomicU64,
}

impl StoreBoot {
    /// A rank of `job` on `store`, every key and barrier under `prefix` (a process that inits
    /// again uses a new prefix, so it does not read what an earlier init left).
    pub fn new(store: Arc<dyn Store>, job: JobInfo, prefix: &str) -> Result<StoreBoot> {
        Ok(StoreBoot {
            store,
            job: job.checked("weft store")?,
            prefix: prefix.to_owned(),
            fences: AtomicU64::new(0),
        })
    }

    fn key(&self, rank: u32, key: &str) -> String {
        format!("{}{key}/{rank}", self.prefix)
    }
}

impl Boot for StoreBoot {
    fn backend(&self) -> Backend {
        Backend::Weft
    }

    fn job(&self) -> &JobInfo {
        &self.job
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        self.store.put(&self.key(self.job.rank, key), value)
    }

    fn fence(&self, timeout: Duration) -> Result<()> {
        let n = self.fences.fetch_add(1, Ordering::Relaxed);
        self.store
            .barrier(&format!("{}fence/{n}", self.prefix), self.job.size, timeout)
    }

    fn get(&self, rank: u32, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        self.store.get(&self.key(rank, key), timeout)
    }

    fn get_all(&self, ranks: &[u32], key: &str, timeout: Duration) -> Result<Vec<Vec<u8>>> {
        let keys: Vec<String> = ranks.iter().map(|&r| self.key(r, key)).collect();
        self.store.get_many(&keys, timeout)
    }

    fn abort(&self, code: i32, message: &str) -> Result<()> {
        self.store.abort(code, message)
    }

    fn finalize(&self, timeout: Duration) -> Result<()> {
        self.store
            .barrier(&format!("{}finalize", self.prefix), self.job.size, timeout)
    }

    fn shared_store(&self) -> Option<Arc<dyn Store>> {
        Some(Arc::clone(&self.store))
    }
}

/// A launcher's bootstrap with every key under `prefix`: the records of one weft instance
/// of a process that holds two (OpenSHMEM beside MPI, see [`crate::select::connect`]).
/// Fences, abort and finalize are the launcher's own.
pub(crate) struct Prefixed {
    inner: Arc<dyn Boot>,
    prefix: String,
}

impl Prefixed {
    pub(crate) fn new(inner: Arc<dyn Boot>, prefix: &str) -> Prefixed {
        Prefixed {
            inner,
            prefix: prefix.to_owned(),
        }
    }
}

impl Boot for Prefixed {
    fn backend(&self) -> Backend {
        self.inner.backend()
    }

    fn job(&self) -> &JobInfo {
        self.inner.job()
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        self.inner.put(&format!("{}{key}", self.prefix), value)
    }

    fn fence(&self, timeout: Duration) -> Result<()> {
        self.inner.fence(timeout)
    }

    fn get(&self, rank: u32, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        self.inner
            .get(rank, &format!("{}{key}", self.prefix), timeout)
    }

    fn get_all(&self, ranks: &[u32], key: &str, timeout: Duration) -> Result<Vec<Vec<u8>>> {
        self.inner
            .get_all(ranks, &format!("{}{key}", self.prefix), timeout)
    }

    fn abort(&self, code: i32, message: &str) -> Result<()> {
        self.inner.abort(code, message)
    }

    fn finalize(&self, timeout: Duration) -> Result<()> {
        self.inner.finalize(timeout)
    }

    fn shared_store(&self) -> Option<Arc<dyn Store>> {
        self.inner.shared_store()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemStore;

    #[test]
    fn store_boot_exchanges_through_fences_and_names_keys_per_rank() {
        let store = MemStore::new();
        let n = 4u32;
        let threads: Vec<_> = (0..n)
            .map(|rank| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    let job = JobInfo {
                        rank,
                        size: n,
                        launcher_job: "j".into(),
                        node_of: None,
                    };
                    let b = StoreBoot::new(store, job, "p/").unwrap();
                    b.put("addr", format!("r{rank}").as_bytes()).unwrap();
                    b.fence(Duration::from_secs(10)).unwrap();
                    let all = b
                        .get_all(&[3, 0, 2], "addr", Duration::from_secs(1))
                        .unwrap();
                    assert_eq!(all, [b"r3".to_vec(), b"r0".to_vec(), b"r2".to_vec()]);
                    assert_eq!(b.get(1, "addr", Duration::ZERO).unwrap(), b"r1");
                    b.fence(Duration::from_secs(10)).unwrap();
                    b.finalize(Duration::from_secs(10)).unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(store.get("p/addr/2", Duration::ZERO).unwrap(), b"r2");
    }

    #[test]
    fn job_info_is_checked() {
        let j = |rank, size, node_of| JobInfo {
            rank,
            size,
            launcher_job: String::new(),
            node_of,
        };
        assert!(j(0, 1, None).checked("t").is_ok());
        let e = j(4, 4, None).checked("PMI-2 fullinit").unwrap_err();
        assert!(
            e.message().contains("PMI-2 fullinit: rank 4 of size 4"),
            "{e}"
        );
        assert!(j(0, 0, None).checked("t").is_err());
        let e = j(0, 2, Some(vec![0])).checked("t").unwrap_err();
        assert!(e.message().contains("covers 1 ranks, the job has 2"), "{e}");
        for b in Backend::ALL {
            assert_eq!(Backend::parse(b.name()), Some(b));
        }
        assert_eq!(Backend::parse("slurm"), None);
    }
}
