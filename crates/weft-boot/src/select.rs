//! Which bootstrap back end a rank uses, decided from its environment, and the connection
//! to it.
//!
//! `WEFT_BOOT` names one (`weft`, `pmix`, `pmi2`, `pmi1`, `single`); unset or `auto`, the
//! innermost launcher's variables decide: `WEFT_BOOT_ADDR` (weft run, which may itself run
//! inside srun or mpirun), then `PMIX_NAMESPACE` (PMIx), then `PMI_FD`/`PMI_PORT`: PMI-2
//! when `PMI_JOBID` names the job (Slurm's `--mpi=pmi2`; PMI-1 should the server decline
//! version 2), else PMI-1 (Hydra). Nothing set is a job of one
//! rank, except a step srun started with several tasks and no PMI, which would otherwise
//! run as that many separate jobs. [`choose`] explains itself (`weft info` prints it);
//! [`connect`] opens the chosen back end.

use crate::boot::{Backend, Boot, JobInfo, StoreBoot};
use crate::knobs;
use crate::pmi::{Pmi1, Pmi2};
use crate::pmix::Pmix;
use std::sync::Arc;
use std::time::Duration;
use weft_core::{Error, ErrorKind, Result};

/// The back end a rank would use and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The back end.
    pub backend: Backend,
    /// One line saying which variables decided it.
    pub why: String,
    /// Named by `WEFT_BOOT` (no fallback from PMI-2 to PMI-1 then).
    pub forced: bool,
}

/// Decides the back end from the variables `var` looks up; a `WEFT_BOOT` that names none,
/// or an srun step without PMI, is an error.
pub fn choose(var: &dyn Fn(&str) -> Option<String>) -> Result<Choice> {
    let set = |n: &str| var(n).filter(|v| !v.trim().is_empty());
    if let Some(name) = set(knobs::BOOT).filter(|v| v.trim() != "auto") {
        let backend = Backend::parse(&name).ok_or_else(|| {
            let all: Vec<&str> = Backend::ALL.iter().map(|b| b.name()).collect();
            Error::new(
                ErrorKind::Config,
                format!(
                    "{}={name:?}: expected auto or one of {}",
                    knobs::BOOT,
                    all.join(", ")
                ),
            )
        })?;
        return Ok(Choice {
            backend,
            why: format!("{}={name} names it", knobs::BOOT),
            forced: true,
        });
    }
    let choice = |backend, why: String| {
        Ok(Choice {
            backend,
            why,
            forced: false,
        })
    };
    if let Some(a) = set("WEFT_BOOT_ADDR") {
        return choice(
            Backend::Weft,
            format!("WEFT_BOOT_ADDR={a} is set: started by weft run"),
        );
    }
    if let Some(ns) = set("PMIX_NAMESPACE") {
        return choice(
            Backend::Pmix,
            format!(
                "PMIX_NAMESPACE={ns} is set: a PMIx launcher (srun --mpi=pmix, Open MPI's mpirun)"
            ),
        );
    }
    for v in ["PMI_FD", "PMI_PORT"] {
        if let Some(x) = set(v) {
            // Slurm's mpi/pmi2 names the job in PMI_JOBID (PMI-2's fullinit needs it);
            // Hydra does not, and serves PMI-1 fully (its PMI-2 lacks abort).
            return match set("PMI_JOBID") {
                Some(j) => choice(
                    Backend::Pmi2,
                    format!("{v}={x} and PMI_JOBID={j} are set: a PMI-2 server (srun --mpi=pmi2); PMI-1 when it declines version 2"),
                ),
                None => choice(
                    Backend::Pmi1,
                    format!("{v}={x} is set without PMI_JOBID: a PMI-1 server (mpiexec.hydra)"),
                ),
            };
        }
    }
    if let Some(n) = set("SLURM_STEP_NUM_TASKS") {
        if n.trim().parse::<u32>().is_ok_and(|n| n > 1) {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "srun started this step with SLURM_STEP_NUM_TASKS={n} but no PMI (no PMIX_NAMESPACE, PMI_FD or PMI_PORT): run it with srun --mpi=pmix or --mpi=pmi2"
                ),
            ));
        }
    }
    choice(
        Backend::Single,
        "no launcher variables (WEFT_BOOT_ADDR, PMIX_NAMESPACE, PMI_FD, PMI_PORT): a job of one rank".into(),
    )
}

/// The bootstrap of this rank per [`choose`], connected; `None` for a job of one rank.
/// `generation` counts this process's earlier inits: weft's store keeps a later init's
/// records apart (under `init<n>/`); a PMI session cannot be opened twice. `layer` names a
/// programming model that shares the process with another one on its own weft instance
/// (OpenSHMEM beside MPI): its keys are kept under `<layer>/` on every back end, so the two
/// instances of a rank never read each other's records.
pub fn connect(
    var: &dyn Fn(&str) -> Option<String>,
    generation: u32,
    layer: Option<&str>,
) -> Result<Option<Arc<dyn Boot>>> {
    let choice = choose(var)?;
    let timeout = Duration::from_millis(connect_timeout_ms(var)?);
    if generation > 0 && !matches!(choice.backend, Backend::Weft | Backend::Single) {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "init number {} under {}: a PMI launcher's session ends at finalize; a process inits once",
                generation + 1,
                choice.backend
            ),
        ));
    }
    let at = |e: Error| e.context(format!("bootstrap {} ({})", choice.backend, choice.why));
    let prefix = match (layer, generation) {
        (None, 0) => String::new(),
        (None, g) => format!("init{g}/"),
        (Some(l), 0) => format!("{l}/"),
        (Some(l), g) => format!("{l}/init{g}/"),
    };
    let boot: Option<Arc<dyn Boot>> = match choice.backend {
        Backend::Single => None,
        Backend::Weft => Some(Arc::new(weft_store(var, &prefix).map_err(at)?)),
        Backend::Pmix => {
            let lib = var(knobs::PMIX_LIBRARY)
                .filter(|l| !l.trim().is_empty())
                .unwrap_or_else(|| crate::pmix::DEFAULT_LIBRARY.to_owned());
            Some(Arc::new(
                Pmix::connect(var, lib.trim(), timeout).map_err(at)?,
            ))
        }
        Backend::Pmi1 => Some(Arc::new(Pmi1::connect(var, timeout).map_err(at)?)),
        Backend::Pmi2 if choice.forced => Some(Arc::new(Pmi2::connect(var, timeout).map_err(at)?)),
        Backend::Pmi2 => {
            let conn = Pmi2::open(var, timeout).map_err(at)?;
            match Pmi2::offer(conn, var, timeout).map_err(at)? {
                crate::pmi::Offer::Accepted(b) => Some(Arc::new(*b)),
                crate::pmi::Offer::Declined(conn, _) => {
                    Some(Arc::new(Pmi1::start(conn, var, timeout).map_err(at)?))
                }
            }
        }
    };
    if let Some(b) = &boot {
        let j = b.job();
        log::debug!(
            "bootstrap {} connected ({}): rank {} of {}",
            choice.backend,
            choice.why,
            j.rank,
            j.size
        );
    }
    // weft's store took the prefix itself; a launcher's keys get it from a wrapper.
    Ok(match boot {
        Some(b) if !prefix.is_empty() && b.backend() != Backend::Weft => {
            Some(Arc::new(crate::boot::Prefixed::new(b, &prefix)))
        }
        other => other,
    })
}

/// `WEFT_BOOT_CONNECT_TIMEOUT_MS`: how long start-up requests may wait for the launcher.
fn connect_timeout_ms(var: &dyn Fn(&str) -> Option<String>) -> Result<u64> {
    match var(knobs::BOOT_CONNECT_TIMEOUT_MS) {
        Some(v) => v.trim().parse::<u64>().map_err(|_| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "{}={v:?}: expected a number of milliseconds",
                    knobs::BOOT_CONNECT_TIMEOUT_MS
                ),
            )
        }),
        None => Ok(knobs::BOOT_CONNECT_TIMEOUT_MS_DEFAULT),
    }
}

/// weft's own store: the launcher's address and secret, rank and size from `WEFT_RANK` and
/// `WEFT_SIZE`.
fn weft_store(var: &dyn Fn(&str) -> Option<String>, prefix: &str) -> Result<StoreBoot> {
    let client = crate::client_from_vars(var)?.ok_or_else(|| {
        Error::new(
            ErrorKind::Config,
            "WEFT_BOOT=weft but WEFT_BOOT_ADDR is not set (start ranks with weft run)",
        )
    })?;
    let uint = |name: &str| -> Result<u32> {
        let t = var(name).ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                format!("WEFT_BOOT_ADDR is set but {name} is not"),
            )
        })?;
        t.trim().parse::<u32>().map_err(|_| {
            Error::new(
                ErrorKind::Config,
                format!("{name}={t:?}: expected a non-negative integer"),
            )
        })
    };
    let job = JobInfo {
        rank: uint("WEFT_RANK")?,
        size: uint("WEFT_SIZE")?,
        launcher_job: var("WEFT_JOB_ID").unwrap_or_else(|| "weft".into()),
        node_of: None,
    };
    StoreBoot::new(Arc::new(client), job, prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |n| {
            pairs
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_innermost_launcher_decides_and_says_why() {
        let c = choose(&env(&[])).unwrap();
        assert_eq!(c.backend, Backend::Single);
        assert!(c.why.contains("no launcher variables"), "{}", c.why);
        // weft run inside an srun step: weft's store wins.
        let c = choose(&env(&[
            ("WEFT_BOOT_ADDR", "127.0.0.1:5000"),
            ("PMIX_NAMESPACE", "slurm.pmix.1.0"),
            ("PMI_FD", "5"),
        ]))
        .unwrap();
        assert_eq!(c.backend, Backend::Weft);
        assert!(c.why.contains("weft run"), "{}", c.why);
        let c = choose(&env(&[("PMIX_NAMESPACE", "ns"), ("PMI_FD", "5")])).unwrap();
        assert_eq!(c.backend, Backend::Pmix);
        assert!(c.why.contains("PMIX_NAMESPACE=ns"), "{}", c.why);
        let c = choose(&env(&[("PMI_PORT", "h:1")])).unwrap();
        assert_eq!((c.backend, c.forced), (Backend::Pmi1, false));
        assert!(
            c.why.contains("PMI_PORT=h:1 is set without PMI_JOBID"),
            "{}",
            c.why
        );
        let c = choose(&env(&[("PMI_FD", "5"), ("PMI_JOBID", "7.0")])).unwrap();
        assert_eq!((c.backend, c.forced), (Backend::Pmi2, false));
        assert!(c.why.contains("PMI_JOBID=7.0"), "{}", c.why);
        let c = choose(&env(&[("PMI_FD", "5"), ("WEFT_BOOT", "pmi1")])).unwrap();
        assert_eq!((c.backend, c.forced), (Backend::Pmi1, true));
        assert!(c.why.contains("WEFT_BOOT=pmi1"), "{}", c.why);
        let c = choose(&env(&[("PMI_FD", "5"), ("WEFT_BOOT", "auto")])).unwrap();
        assert_eq!(c.backend, Backend::Pmi1);
    }

    #[test]
    fn bad_choices_and_srun_without_pmi_are_errors() {
        let e = choose(&env(&[("WEFT_BOOT", "slurm")])).unwrap_err();
        assert!(
            e.message().contains(
                "WEFT_BOOT=\"slurm\": expected auto or one of weft, pmix, pmi2, pmi1, single"
            ),
            "{e}"
        );
        let e = choose(&env(&[("SLURM_STEP_NUM_TASKS", "4")])).unwrap_err();
        assert!(e.message().contains("srun --mpi=pmix"), "{e}");
        // One task, or a batch script (no step task count), runs as a job of one.
        assert_eq!(
            choose(&env(&[("SLURM_STEP_NUM_TASKS", "1")]))
                .unwrap()
                .backend,
            Backend::Single
        );
        assert_eq!(
            choose(&env(&[("SLURM_NTASKS", "4")])).unwrap().backend,
            Backend::Single
        );
    }

    #[test]
    fn pmi_without_a_server_is_a_one_line_error() {
        // PMI_FD names a descriptor this process does not have.
        let e = connect(&env(&[("PMI_FD", "987654")]), 0, None)
            .err()
            .expect("no server");
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(
            e.message()
                .contains("PMI_FD=987654: not an open descriptor"),
            "{e}"
        );
        assert!(!e.message().contains('\n'), "{e}");
        let e = connect(&env(&[("PMI_FD", "five")]), 0, None).err().unwrap();
        assert!(e.message().contains("PMI_FD=\"five\""), "{e}");
        // PMI_PORT where nothing listens: refused until the start-up timeout.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let addr: &'static str = Box::leak(format!("127.0.0.1:{port}").into_boxed_str());
        let vars: &'static [(&str, &str)] = Box::leak(Box::new([
            ("PMI_PORT", addr),
            ("WEFT_BOOT_CONNECT_TIMEOUT_MS", "200"),
        ]));
        let t0 = std::time::Instant::now();
        let e = connect(&env(vars), 0, None).err().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert!(
            e.message().contains("cannot connect to the PMI server"),
            "{e}"
        );
        let e = connect(&env(&[("PMI_FD", "5")]), 1, None).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
    }
}
