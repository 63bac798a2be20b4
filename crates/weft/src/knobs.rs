//! Knobs of the runtime, declared once; read by [`crate::Config::from_env`].

use weft_core::knob::{Knob, KnobKind};

/// Every knob of the weft runtime crate.
pub(crate) static KNOBS: &[Knob] = &[
    Knob {
        name: "WEFT_YIELD",
        kind: KnobKind::Choice(&["auto", "on", "off"]),
        default: "auto",
        help: "yield the CPU (sched_yield) while waiting with nothing to do: auto = when the node has more ranks than cores, at once in collectives (a pinned rank whose co-located ranks all wait at the node's counter keeps its core up to 50 us) and after a learned spin (0-50 us) in point-to-point waits, else after WEFT_YIELD_AFTER_US of idle polling; on = at once; off = never (spin, keep the core). A rank that yields at once and has network peers spins the learned 0-50 us first in point-to-point waits on a network peer",
    },
    Knob {
        name: "WEFT_BLOCK",
        kind: KnobKind::Choice(&["auto", "on", "off"]),
        default: "auto",
        help: "sleep in the kernel (a futex in the node's segment, woken by the peer that delivers a message or arrives in a collective) while a wait has nothing to do, after its spin: auto = only while programs that are not this job's ranks compete for the cores (runnable tasks in /proc/loadavg beyond this job's awake ranks and the usable cores; see ARCHITECTURE.md), else as off but sleeping after 20 ms with nothing arriving; on = as soon as a wait finds nothing to do; off = never (spin and yield as WEFT_YIELD says). A sleep lasts at most WEFT_BLOCK_SLEEP_MS between liveness checks. Waits on network peers, a full ring, one-sided operations (not a window's node fence) and file operations yield instead",
    },
    Knob {
        name: "WEFT_BLOCK_AFTER_US",
        kind: KnobKind::Uint,
        default: "",
        help: "WEFT_BLOCK=auto: microseconds a wait yields the CPU with nothing arriving, while other programs compete for the cores, before it sleeps until a peer wakes it; a value set applies to every rank; unset = 0 for a rank with a core of its own (it sleeps where it would first yield, after its spin) and 200 for a rank that yields at once (more ranks than cores, or WEFT_YIELD=on; its yields hand the core to its own co-located ranks). A rank with a core of its own learns the time from its sleeps, from the value up to 5 ms (0 stays 0); WEFT_YIELD=off never yields, so never sleeps",
    },
    Knob {
        name: "WEFT_BLOCK_SLEEP_MS",
        kind: KnobKind::Uint,
        default: "10",
        help: "longest sleep of a waiting rank (WEFT_BLOCK) before it checks that its peers are alive and sleeps again: a peer that dies while its partner sleeps is noticed within about this (0 counts as 1)",
    },
    Knob {
        name: "WEFT_BIND",
        kind: KnobKind::Choice(&["auto", "core", "none"]),
        default: "auto",
        help: "pin each rank launched by weft run (or mpiexec) to one core, local rank modulo the CPUs the process may use (threads the program starts later inherit the core, weft's own helper threads do not; the job is assumed to have the node to itself): auto = when the node has more ranks than those CPUs, or two ranks or more while other programs compete for the cores at start-up (runnable tasks in /proc/loadavg beyond the job's ranks and the CPUs), since the kernel's placement then decides whether partners share a core, and the process was not already bound to fewer CPUs than are online, core = always, none = never",
    },
    Knob {
        name: "WEFT_TOPOLOGY",
        kind: KnobKind::Text,
        default: "",
        help: "the node topology the hierarchical collectives group ranks by (docs/topology.md): empty = this machine's, as hwloc reads it, each rank in the L3 / NUMA / package group of the CPU it is bound to; synthetic:DESCRIPTION = an hwloc synthetic topology (e.g. synthetic:package:2 core:4 pu:1), or the path of an hwloc XML file; with a given topology, local rank l is taken to run on PU l modulo the PUs (no rank is bound by it)",
    },
    Knob {
        name: "WEFT_HWLOC_LIB",
        kind: KnobKind::Text,
        default: "libhwloc.so.15",
        help: "the hwloc 2.x library weft loads at run time to read the node topology (a name the dynamic loader searches for, or a path); loaded only on a node of two or more ranks of a job (or to read WEFT_TOPOLOGY); where it does not load, the hierarchical collectives group a node's ranks as one and weft info --explain says why",
    },
    Knob {
        name: "WEFT_REPORT_BINDINGS",
        kind: KnobKind::Bool,
        default: "0",
        help: "each rank prints on stderr, once started, the CPUs it is bound to and why (WEFT_BIND), like mpirun --report-bindings",
    },
    Knob {
        name: "WEFT_YIELD_AFTER_US",
        kind: KnobKind::Uint,
        default: "100",
        help: "WEFT_YIELD=auto on a node with a core per rank: microseconds a waiting rank polls with nothing arriving before it yields the CPU on every idle poll (the clock is read every 1024 idle polls, so the window is this plus about 1024 polls; any progress starts the count again)",
    },
    Knob {
        name: "WEFT_BOOT_TIMEOUT_S",
        kind: KnobKind::Uint,
        default: "60",
        help: "seconds a rank waits for the others during start-up before giving up",
    },
    Knob {
        name: "WEFT_LIVENESS_MS",
        kind: KnobKind::Uint,
        default: "100",
        help: "under a foreign launcher (srun, mpiexec.hydra, mpirun): how often each rank checks that the next rank of its node is alive, in ms; a rank gone before finalize ends the job (under weft run the launcher does this); 0 turns the watch off",
    },
    Knob {
        name: "WEFT_TRANSPORTS",
        kind: KnobKind::Text,
        default: "shm,cma,tcp",
        help: "transports a rank may use, comma-separated (weft info --transports lists them): shm (same node; cma, its single copy, comes with it), tcp, ucx (any node; a weft built with the ucx feature, where libucp loads); the lane choice scores those allowed; leaving out shm sends ranks of one node over the network too",
    },
    Knob {
        name: "WEFT_LANE_FILE",
        kind: KnobKind::Text,
        default: "",
        help: "TOML file of lane figures ([[lane]] transport, optional device, latency_us, overhead_us, dedicated_gbytes_per_s, shared_gbytes_per_s, registration_ns_per_byte) that replace the transports' own (weft info --transports shows where each lane's figures came from)",
    },
    Knob {
        name: "WEFT_MAX_RAILS",
        kind: KnobKind::Uint,
        default: "4",
        help: "most lanes whose bandwidth is at least a quarter of the best that the lane choice stripes large messages over (weft info --transports); the TCP transport drives one lane per peer so far",
    },
    Knob {
        name: "WEFT_MPI_THREAD_MULTIPLE",
        kind: KnobKind::Bool,
        default: "1",
        help: "let MPI_Init_thread and MPI_Session_init provide MPI_THREAD_MULTIPLE when asked (one lock around every MPI call, which the blocking calls give back while they wait); 0 caps the level at MPI_THREAD_SERIALIZED (no lock at all), e.g. to measure what the lock costs",
    },
    Knob {
        name: "WEFT_CHAR_REDUCTIONS",
        kind: KnobKind::Bool,
        default: "1",
        help: "let reductions and accumulates take MPI_CHAR as a signed 8-bit integer, as MPICH and Open MPI do (programs rely on it); 0 refuses it with MPI_ERR_OP, as MPI-4.1 §6.9.2's table does",
    },
    Knob {
        name: "WEFT_STRIPE_BYTES",
        kind: KnobKind::Bytes,
        default: "1M",
        help: "messages of at least this size are striped over the chosen lanes (weft info --transports)",
    },
    Knob {
        name: "WEFT_AGGD",
        kind: KnobKind::Text,
        default: "",
        help: "address (host:port) of the aggregation manager (weft aggd, docs/aggd.md): at start-up rank 0 asks it for a tree for the world communicator over the ranks' host names and broadcasts the answer; a type II tree's switch levels group the hosts of the hierarchical collectives; unreachable or refused, the job runs on type I (host) trees. Every rank must be given the same value",
    },
    Knob {
        name: "WEFT_AGGD_KEY_FILE",
        kind: KnobKind::Text,
        default: "",
        help: "file with the aggregation manager's secret in hex (mode 600), for a manager started on its own; empty = the job's secret (a manager started for the job)",
    },
    Knob {
        name: "WEFT_AGGD_TIMEOUT_MS",
        kind: KnobKind::Uint,
        default: "2000",
        help: "milliseconds rank 0 waits for the aggregation manager (connecting, the handshake, the answer) before the job goes on with type I trees",
    },
];
