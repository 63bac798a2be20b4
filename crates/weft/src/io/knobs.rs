//! Knobs of file I/O (MPI-IO), declared once; read through [`crate::Config`]'s values when a
//! file is opened ([`super::Settings`]). Info hints given to `MPI_File_open`/`set_view`/
//! `set_info` override them per file. Depends on nothing but the knob registry.

use weft_core::knob::{Knob, KnobKind};

/// Every knob of `weft::io`.
pub static KNOBS: &[Knob] = &[
    Knob {
        name: "WEFT_IO_CB",
        kind: KnobKind::Choice(&["auto", "enable", "disable"]),
        default: "auto",
        help: "collective buffering (two-phase I/O) for collective reads and writes: auto = when the ranks' file ranges interleave (otherwise each rank accesses its own range), enable = always, disable = never (each rank accesses its own pieces); the hints romio_cb_read/romio_cb_write override it per file",
    },
    Knob {
        name: "WEFT_IO_CB_BUFFER_BYTES",
        kind: KnobKind::Bytes,
        default: "512K",
        help: "bytes an aggregator reads or writes at a time in two-phase I/O (two such buffers, so communication of the next window overlaps the file access of this one); small enough that both stay in a core's cache (16M took 2-4x longer in bench/io_compare.sh's strided cells); on a parallel file system give at least its stripe size; the hint cb_buffer_size overrides it per file",
    },
    Knob {
        name: "WEFT_IO_AGGREGATORS_PER_NODE",
        kind: KnobKind::Uint,
        default: "4",
        help: "ranks of each node that aggregate in two-phase I/O (the lowest local ranks of the file's communicator; fewer if the node has fewer); the hint cb_nodes caps the total",
    },
    Knob {
        name: "WEFT_IO_SIEVE_BYTES",
        kind: KnobKind::Bytes,
        default: "4M",
        help: "data sieving: a noncontiguous independent access whose pieces lie within this many bytes and fill at least half of them reads (and for writes, under a byte-range lock, rewrites) the whole span at once instead of one system call per piece; 0 turns it off; the hints ind_rd_buffer_size and ind_wr_buffer_size override it per file",
    },
];
