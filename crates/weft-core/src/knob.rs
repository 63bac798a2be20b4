//! The knob registry: every `WEFT_*` setting is declared once (name, type, default, help) in a
//! crate's `knobs.rs` table, read once from the environment into [`KnobValues`], and listed by
//! `weft info --knobs`. Variables that start with `WEFT_` but match no declared knob produce a
//! warning instead of being silently ignored.

use crate::units::parse_bytes;
use crate::{Error, ErrorKind, Result};
use std::collections::BTreeMap;

/// The type of a knob's value, used to validate it when read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobKind {
    /// `0`/`1`, `true`/`false`, `yes`/`no`, `on`/`off`.
    Bool,
    /// A non-negative integer.
    Uint,
    /// A byte size with optional K/M/G suffix.
    Bytes,
    /// A floating-point number.
    Float,
    /// Free text (a path, a name, a list).
    Text,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
}

impl KnobKind {
    /// Human-readable name of the type for `weft info --knobs`.
    pub fn describe(self) -> String {
        match self {
            KnobKind::Bool => "bool".into(),
            KnobKind::Uint => "uint".into(),
            KnobKind::Bytes => "bytes".into(),
            KnobKind::Float => "float".into(),
            KnobKind::Text => "text".into(),
            KnobKind::Choice(c) => c.join("|"),
        }
    }
}

/// One declared knob.
#[derive(Clone, Copy, Debug)]
pub struct Knob {
    /// Full environment variable name, `WEFT_...`.
    pub name: &'static str,
    /// Value type.
    pub kind: KnobKind,
    /// Default value as text (empty for "unset").
    pub default: &'static str,
    /// One-line help.
    pub help: &'static str,
}

/// Variables the launcher sets for every rank; they are not tunable knobs but are known names.
pub const LAUNCH_VARS: &[Knob] = &[
    Knob {
        name: "WEFT_RANK",
        kind: KnobKind::Uint,
        default: "",
        help: "rank of this process in the job (set by weft run)",
    },
    Knob {
        name: "WEFT_SIZE",
        kind: KnobKind::Uint,
        default: "",
        help: "number of ranks in the job (set by weft run)",
    },
    Knob {
        name: "WEFT_LOCAL_RANK",
        kind: KnobKind::Uint,
        default: "",
        help: "rank among the job's ranks on this node (set by weft run)",
    },
    Knob {
        name: "WEFT_LOCAL_SIZE",
        kind: KnobKind::Uint,
        default: "",
        help: "number of the job's ranks on this node (set by weft run)",
    },
    Knob {
        name: "WEFT_BOOT_ADDR",
        kind: KnobKind::Text,
        default: "",
        help: "address of the job's bootstrap key-value store (set by weft run)",
    },
    Knob {
        name: "WEFT_JOB_ID",
        kind: KnobKind::Text,
        default: "",
        help: "job identifier, names the job's shared-memory segments (set by weft run; under srun, mpiexec.hydra or mpirun an optional tag put before the id weft derives from the launcher's)",
    },
    Knob {
        name: "WEFT_JOB_SECRET",
        kind: KnobKind::Text,
        default: "",
        help: "per-job secret proven to the bootstrap store (set by weft run)",
    },
    Knob {
        name: "WEFT_SPAWN_PARENT",
        kind: KnobKind::Text,
        default: "",
        help: "how a job started by MPI_Comm_spawn reaches its parents (set by the spawning process; carries a secret and leaves the environment at init)",
    },
    Knob {
        name: "WEFT_RUN_PROGRAM",
        kind: KnobKind::Text,
        default: "",
        help: "the weft binary that started this job (set by weft run; MPI_Comm_spawn starts child jobs with it)",
    },
    Knob {
        name: "WEFT_APPNUM",
        kind: KnobKind::Uint,
        default: "",
        help: "index of this rank's program in a job of several (weft run A : B, MPI_Comm_spawn_multiple; MPI_APPNUM)",
    },
    Knob {
        name: "WEFT_NODE_ID",
        kind: KnobKind::Text,
        default: "",
        help: "node identity; defaults to the hostname",
    },
    Knob {
        name: TORUS_DIMS,
        kind: KnobKind::Text,
        default: "",
        help: "the job's virtual torus, XxYxZ (set by weft run --map torus:XxYxZ; ranks follow it in row-major order, ppn ranks per host)",
    },
    Knob {
        name: TORUS_COORDS,
        kind: KnobKind::Text,
        default: "",
        help: "this rank's host's coordinates x,y,z in WEFT_TORUS_DIMS (set by weft run --map; the same as MPI_Cart_coords of a grid of those dims over one rank per host)",
    },
];

/// Name of the variable `weft run --map` gives every rank: the job's virtual torus.
pub const TORUS_DIMS: &str = "WEFT_TORUS_DIMS";
/// Name of the variable `weft run --map` gives every rank: its host's virtual coordinates.
pub const TORUS_COORDS: &str = "WEFT_TORUS_COORDS";

/// Name of the knob that chooses what weft logs on stderr ([`crate::logging`]).
pub const LOG: &str = "WEFT_LOG";

/// Knobs every weft process reads, whatever it is (a rank, the launcher, a tool).
pub const PROCESS_KNOBS: &[Knob] = &[Knob {
    name: LOG,
    kind: KnobKind::Text,
    default: "",
    help: "what weft logs on stderr, in env_logger's filter syntax: a level (error, warn, info, debug, trace) or target=level pairs (weft::lanes=debug,weft::coll=debug); debug shows each peer's lane and why, the collectives' algorithm choice per new call shape and connection events; unset: warnings and errors only; a word that is neither a level nor a weft target is an error",
}];

/// Variables read by the `weft` command's own tools, the wrappers (`mpicc`, `mpiexec`,
/// `oshcc`) and the test scripts (not by ranks), declared so that a rank or a job that
/// inherits them does not warn.
pub const TOOL_VARS: &[Knob] = &[
    Knob {
        name: "WEFT_PLOT_FONT",
        kind: KnobKind::Text,
        default: "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        help: "TrueType font for PNG plots of weft plan and weft bench",
    },
    Knob {
        name: "WEFT_BIN",
        kind: KnobKind::Text,
        default: "",
        help: "the weft binary mpiexec/mpirun and oshrun run (default: the weft next to the script, else weft on PATH)",
    },
    Knob {
        name: "WEFT_MPICC_CC",
        kind: KnobKind::Text,
        default: "",
        help: "C compiler of mpicc (default: $MPICH_CC, $OMPI_CC, else cc)",
    },
    Knob {
        name: "WEFT_MPICXX_CXX",
        kind: KnobKind::Text,
        default: "",
        help: "C++ compiler of mpicxx (default: $MPICH_CXX, $OMPI_CXX, else c++)",
    },
    Knob {
        name: "WEFT_SHMEM_PREFIX",
        kind: KnobKind::Text,
        default: "",
        help: "where oshcc finds include/ and lib/ (default: the repository the script is in)",
    },
    Knob {
        name: "WEFT_SHMEM_INCLUDE",
        kind: KnobKind::Text,
        default: "",
        help: "folder of shmem.h for oshcc",
    },
    Knob {
        name: "WEFT_SHMEM_LIB",
        kind: KnobKind::Text,
        default: "",
        help: "folder of libshmem.so for oshcc (default: the repository's target/release)",
    },
    Knob {
        name: "WEFT_FUZZ_CASES",
        kind: KnobKind::Uint,
        default: "",
        help: "test suite: proptest cases of the TCP frame fuzz test",
    },
    Knob {
        name: "WEFT_MPICH_SRC",
        kind: KnobKind::Text,
        default: "",
        help: "scripts/mpich-testsuite.sh: MPICH source cache",
    },
    Knob {
        name: "WEFT_MPICH_WORK",
        kind: KnobKind::Text,
        default: "",
        help: "scripts/mpich-testsuite.sh: build and run folder",
    },
    Knob {
        name: "WEFT_MPICH_NO_CARGO",
        kind: KnobKind::Bool,
        default: "",
        help: "scripts/mpich-testsuite.sh: do not run cargo build",
    },
    Knob {
        name: "WEFT_SKIP_MPICH_SUITE",
        kind: KnobKind::Bool,
        default: "",
        help: "test suite: skip MPICH's test suite (where apt and network are missing)",
    },
    Knob {
        name: "WEFT_TEST_SKIP_MULTINODE",
        kind: KnobKind::Bool,
        default: "",
        help: "test suite: skip the OpenSHMEM tests across namespace hosts",
    },
];

/// Variables starting with this belong to the test suite (markers its child processes
/// read); they are never knobs and never warned about.
pub const TEST_PREFIX: &str = "WEFT_TEST_";

/// Whether this process is the one of its job that reports unknown `WEFT_*` variables: a
/// rank started by `weft run` is not (the launcher warned once for the whole job, see
/// `weft run`), a rank started by another launcher only when it is rank 0, a process
/// started by hand always. `lookup` reads a variable (the process environment in
/// [`KnobValues::from_env`]).
pub fn warns_for_job(lookup: impl Fn(&str) -> Option<String>) -> bool {
    if lookup("WEFT_JOB_ID").is_some() {
        return false;
    }
    // The rank variables of Slurm, PMIx, Open MPI and PMI-1/2 (Hydra) launchers.
    [
        "SLURM_PROCID",
        "PMIX_RANK",
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
    ]
    .iter()
    .filter_map(|v| lookup(v))
    .all(|r| r.trim() == "0")
}

/// Knob values read once from the environment, validated against their declarations.
#[derive(Clone, Debug, Default)]
pub struct KnobValues {
    values: BTreeMap<&'static str, String>,
    declared: BTreeMap<&'static str, Knob>,
}

impl KnobValues {
    /// Reads `tables` from `vars` (normally `std::env::vars()`), validating each value: every
    /// `WEFT_*` variable and the other names a table declares. Returns the values and one
    /// warning per `WEFT_*` variable that no table declares.
    pub fn read(
        tables: &[&[Knob]],
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(KnobValues, Vec<String>)> {
        let mut out = KnobValues::default();
        for table in tables {
            for k in table.iter() {
                out.declared.insert(k.name, *k);
            }
        }
        let mut warnings = Vec::new();
        for (name, value) in vars {
            // Besides WEFT_*, a table may declare a standard's own name (OpenSHMEM's
            // SHMEM_SYMMETRIC_SIZE); other variables are not weft's business.
            let standard = !name.starts_with("WEFT_") && out.declared.contains_key(name.as_str());
            if !(name.starts_with("WEFT_") || standard) || name.starts_with(TEST_PREFIX) {
                continue;
            }
            match out.declared.get(name.as_str()) {
                Some(k) => {
                    validate(k, &value)?;
                    out.values.insert(k.name, value);
                }
                None => {
                    let hint = closest(&name, out.declared.keys().copied())
                        .map(|c| format!(" (did you mean {c}?)"))
                        .unwrap_or_default();
                    warnings.push(format!(
                        "weft: warning: unknown variable {name} is ignored{hint}"
                    ));
                }
            }
        }
        Ok((out, warnings))
    }

    /// [`KnobValues::read`] of the process environment: the values and the warnings, which
    /// the caller reports or not (a tool reading a table of its own does not speak for a job).
    pub fn read_env(tables: &[&[Knob]]) -> Result<(KnobValues, Vec<String>)> {
        #[allow(
            clippy::disallowed_methods,
            reason = "the knob registry is where the environment is read"
        )]
        let vars = std::env::vars();
        Self::read(tables, vars)
    }

    /// Reads the process environment; prints warnings for unknown variables on stderr when
    /// this process speaks for its job ([`warns_for_job`]: once per job, not per rank).
    pub fn from_env(tables: &[&[Knob]]) -> Result<KnobValues> {
        let (v, warnings) = Self::read_env(tables)?;
        #[allow(
            clippy::disallowed_methods,
            reason = "the knob registry is where the environment is read"
        )]
        let speaks_for_job = warns_for_job(|n| std::env::var(n).ok());
        if speaks_for_job {
            for w in warnings {
                crate::diag!("{w}");
            }
        }
        Ok(v)
    }

    fn raw(&self, name: &str) -> Option<&str> {
        if let Some(v) = self.values.get(name) {
            return Some(v.as_str());
        }
        match self.declared.get(name) {
            Some(k) if !k.default.is_empty() => Some(k.default),
            Some(_) => None,
            None => panic!("knob {name} read but never declared"),
        }
    }

    /// True when the variable was set in the environment (not just defaulted).
    pub fn is_set(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// Text value, or `None` when unset with no default.
    pub fn text(&self, name: &str) -> Option<String> {
        self.raw(name).map(str::to_owned)
    }

    /// Boolean value (false when unset with no default).
    pub fn bool(&self, name: &str) -> bool {
        self.raw(name)
            .map(|v| parse_bool(v).unwrap_or(false))
            .unwrap_or(false)
    }

    /// Unsigned value, or `None` when unset with no default.
    pub fn uint(&self, name: &str) -> Option<u64> {
        self.raw(name).and_then(|v| v.trim().parse().ok())
    }

    /// Byte-size value, or `None` when unset with no default.
    pub fn bytes(&self, name: &str) -> Option<u64> {
        self.raw(name).and_then(|v| parse_bytes(v).ok())
    }

    /// Float value, or `None` when unset with no default.
    pub fn float(&self, name: &str) -> Option<f64> {
        self.raw(name).and_then(|v| v.trim().parse().ok())
    }

    /// Every declared knob with its current value (or default), for `weft info --knobs`.
    pub fn listing(&self) -> Vec<(Knob, Option<String>)> {
        self.declared
            .values()
            .map(|k| (*k, self.values.get(k.name).cloned()))
            .collect()
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

fn validate(k: &Knob, value: &str) -> Result<()> {
    let ok = match k.kind {
        KnobKind::Bool => parse_bool(value).is_some(),
        KnobKind::Uint => value.trim().parse::<u64>().is_ok(),
        KnobKind::Bytes => parse_bytes(value).is_ok(),
        KnobKind::Float => value.trim().parse::<f64>().is_ok(),
        KnobKind::Text => true,
        KnobKind::Choice(c) => c.contains(&value.trim()),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::Config,
            format!("{}={value:?}: expected {}", k.name, k.kind.describe()),
        ))
    }
}

/// The declared name nearest to `name` by edit distance, when it is close (a likely typo).
fn closest<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    names
        .map(|n| (edit_distance(name, n), n))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &[Knob] = &[
        Knob {
            name: "WEFT_A_BYTES",
            kind: KnobKind::Bytes,
            default: "4K",
            help: "a",
        },
        Knob {
            name: "WEFT_B",
            kind: KnobKind::Choice(&["x", "y"]),
            default: "x",
            help: "b",
        },
        Knob {
            name: "WEFT_C",
            kind: KnobKind::Bool,
            default: "",
            help: "c",
        },
    ];

    fn vars(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn defaults_and_values() {
        let (v, w) = KnobValues::read(&[T], vars(&[("WEFT_B", "y"), ("PATH", "/bin")])).unwrap();
        assert!(w.is_empty());
        assert_eq!(v.bytes("WEFT_A_BYTES"), Some(4096));
        assert_eq!(v.text("WEFT_B").as_deref(), Some("y"));
        assert!(!v.bool("WEFT_C"));
        assert!(v.is_set("WEFT_B"));
        assert!(!v.is_set("WEFT_A_BYTES"));
    }

    #[test]
    fn unknown_variable_warns_with_hint() {
        let (_, w) = KnobValues::read(&[T], vars(&[("WEFT_A_BYTE", "1")])).unwrap();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("WEFT_A_BYTE") && w[0].contains("did you mean WEFT_A_BYTES"),
            "{}",
            w[0]
        );
    }

    #[test]
    fn test_markers_are_not_knobs_and_one_process_per_job_warns() {
        let (_, w) = KnobValues::read(&[T], vars(&[("WEFT_TEST_CHILD", "1")])).unwrap();
        assert!(w.is_empty(), "{w:?}");
        let env = |v: &'static [(&'static str, &'static str)]| {
            move |n: &str| v.iter().find(|(k, _)| *k == n).map(|(_, x)| x.to_string())
        };
        assert!(warns_for_job(env(&[])));
        assert!(!warns_for_job(env(&[("WEFT_JOB_ID", "ab12")])));
        assert!(warns_for_job(env(&[("PMI_RANK", "0")])));
        assert!(!warns_for_job(env(&[("SLURM_PROCID", "3")])));
        assert!(!warns_for_job(env(&[
            ("PMIX_RANK", "0"),
            ("OMPI_COMM_WORLD_RANK", "1")
        ])));
    }

    #[test]
    fn malformed_value_is_an_error_naming_the_knob() {
        let e = KnobValues::read(&[T], vars(&[("WEFT_B", "z")])).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(e.message().contains("WEFT_B"));
        assert!(KnobValues::read(&[T], vars(&[("WEFT_A_BYTES", "lots")])).is_err());
    }
}
