//! Knobs of the collectives, declared once: `WEFT_<COLL>_ALGO` forces an algorithm,
//! `WEFT_<COLL>_RADIX` a tree radix, `WEFT_TUNING_FILE` names a tuning file (rules that
//! replace `tuning/default.toml`, lane figures). Read by [`super::select::Tuning`] and, for
//! the tuning file, [`super::select::read_tuning_file`]; nothing else reads them.

use weft_core::knob::{Knob, KnobKind};

macro_rules! coll_knobs {
    ($($algo:literal, $radix:literal, $what:literal;)*) => {
        /// Every knob of the collectives.
        pub static KNOBS: &[Knob] = &[
            $(
            Knob {
                name: $algo,
                kind: KnobKind::Text,
                default: "",
                help: concat!("force the ", $what, " algorithm (see weft info --explain ", $what,
                    "); an algorithm whose restrictions fail is an error"),
            },
            Knob {
                name: $radix,
                kind: KnobKind::Uint,
                default: "",
                help: concat!("tree radix of the ", $what,
                    " k-nomial algorithms (at least 2; default: the cost model's choice)"),
            },
            )*
            Knob {
                name: "WEFT_TUNING_FILE",
                kind: KnobKind::Text,
                default: "",
                help: "path of a tuning file (weft tune writes one): its rules replace tuning/default.toml's, its lane figures the transports' own (weft info --transports, --explain show them used)",
            },
        ];
    };
}

coll_knobs! {
    "WEFT_BARRIER_ALGO", "WEFT_BARRIER_RADIX", "barrier";
    "WEFT_BCAST_ALGO", "WEFT_BCAST_RADIX", "bcast";
    "WEFT_REDUCE_ALGO", "WEFT_REDUCE_RADIX", "reduce";
    "WEFT_ALLREDUCE_ALGO", "WEFT_ALLREDUCE_RADIX", "allreduce";
    "WEFT_GATHER_ALGO", "WEFT_GATHER_RADIX", "gather";
    "WEFT_GATHERV_ALGO", "WEFT_GATHERV_RADIX", "gatherv";
    "WEFT_SCATTER_ALGO", "WEFT_SCATTER_RADIX", "scatter";
    "WEFT_SCATTERV_ALGO", "WEFT_SCATTERV_RADIX", "scatterv";
    "WEFT_ALLGATHER_ALGO", "WEFT_ALLGATHER_RADIX", "allgather";
    "WEFT_ALLGATHERV_ALGO", "WEFT_ALLGATHERV_RADIX", "allgatherv";
    "WEFT_ALLTOALL_ALGO", "WEFT_ALLTOALL_RADIX", "alltoall";
    "WEFT_ALLTOALLV_ALGO", "WEFT_ALLTOALLV_RADIX", "alltoallv";
    "WEFT_REDUCE_SCATTER_ALGO", "WEFT_REDUCE_SCATTER_RADIX", "reduce_scatter";
    "WEFT_REDUCE_SCATTER_BLOCK_ALGO", "WEFT_REDUCE_SCATTER_BLOCK_RADIX", "reduce_scatter_block";
    "WEFT_SCAN_ALGO", "WEFT_SCAN_RADIX", "scan";
    "WEFT_EXSCAN_ALGO", "WEFT_EXSCAN_RADIX", "exscan";
}
