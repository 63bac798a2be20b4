//! Rank side of `weft tune`'s collective jobs: for each collective, every algorithm (at each
//! radix where it takes one) forced in turn through the process's collective tuning, then
//! the selection the runtime makes without a tuning file (the baseline a rule must beat),
//! each timed at each size with `weft bench coll`'s loop and statistics; rank 0 prints one
//! JSON line per measured cell ([`Cell`]) and one per algorithm the run could not force
//! ([`Skip`]).

use crate::bench::coll::{coll_name, measure, osu_stats, selected_bytes};
use crate::bench::parse_sizes;
use weft::coll::select::{algorithms, Coll, Restriction, Tuning};
use weft::{Error, ErrorKind, Result};

/// Arguments of the hidden `__tune-rank` subcommand (set by the driver).
#[derive(clap::Args)]
pub(crate) struct TuneRankArgs {
    /// Collectives as `weft bench coll --op` names them.
    #[arg(long, value_delimiter = ',')]
    ops: Vec<String>,
    /// Sizes in bytes per rank.
    #[arg(long)]
    sizes: String,
    /// Timed calls below 64 KiB.
    #[arg(long)]
    iters_small: u32,
    /// Timed calls from 64 KiB.
    #[arg(long)]
    iters_large: u32,
    /// Radices tried for the algorithms that take one.
    #[arg(long, value_delimiter = ',')]
    radices: Vec<u32>,
}

impl TuneRankArgs {
    /// The arguments the driver passes.
    pub(crate) fn to_args(
        ops: &[&str],
        sizes: &str,
        iters: (u32, u32),
        radices: &[u32],
    ) -> Vec<String> {
        let list = |v: Vec<String>| v.join(",");
        vec![
            "--ops".into(),
            ops.join(","),
            "--sizes".into(),
            sizes.into(),
            "--iters-small".into(),
            iters.0.to_string(),
            "--iters-large".into(),
            iters.1.to_string(),
            "--radices".into(),
            list(radices.iter().map(u32::to_string).collect()),
        ]
    }
}

/// One measured cell, as rank 0 prints it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Cell {
    /// The selector's collective name.
    pub coll: String,
    pub algo: String,
    pub radix: Option<u32>,
    pub procs: u32,
    pub ppn: u32,
    /// Bytes per rank as the cost model counts them.
    pub bytes: u64,
    /// OSU p50, µs.
    pub p50_us: f64,
    /// Whether this is the baseline: the runtime's own selection without a tuning file
    /// (`algo` and `radix` are then what it chose).
    #[serde(default)]
    pub baseline: bool,
}

/// An algorithm the job could not run (its restriction failed at run time).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Skip {
    pub skip: String,
    pub why: String,
}

/// Runs the rank side.
pub(crate) fn rank_main(a: TuneRankArgs) -> Result<()> {
    let weft = weft::init()?;
    let world = weft.world();
    let sizes = parse_sizes(&a.sizes).map_err(|e| Error::new(ErrorKind::InvalidArgument, e))?;
    let n = world.size();
    let ppn = weft.local().1;
    let me = world.rank();
    // The job runs without a tuning file (the driver clears it): this is the selection a
    // rule has to beat.
    let baseline = Tuning::from_env()?;
    for op in &a.ops {
        let coll = Coll::from_name(coll_name(op))?;
        let knob = coll.name().to_ascii_uppercase();
        let op_sizes: Vec<usize> = if op == "barrier" {
            vec![0]
        } else {
            sizes.clone()
        };
        for algo in algorithms(coll) {
            let impossible = algo.restrictions.iter().any(|r| match r {
                Restriction::PowerOfTwo => !n.is_power_of_two(),
                Restriction::SharedMemory => n < 2,
                _ => false,
            });
            if impossible {
                continue;
            }
            // A radix of at least the rank count is the flat tree, the same at every k.
            let radices: Vec<Option<u32>> = if algo.radix {
                let mut v: Vec<Option<u32>> = a
                    .radices
                    .iter()
                    .copied()
                    .filter(|&k| k >= 2 && (k < n || k == 2))
                    .map(Some)
                    .collect();
                if v.is_empty() {
                    v.push(Some(2));
                }
                v
            } else {
                vec![None]
            };
            for radix in radices {
                let mut vars = vec![(format!("WEFT_{knob}_ALGO"), algo.name.to_string())];
                if let Some(k) = radix {
                    vars.push((format!("WEFT_{knob}_RADIX"), k.to_string()));
                }
                let refs: Vec<(&str, &str)> =
                    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                world.set_collective_tuning(Tuning::from_vars(&refs)?);
                for &bytes in &op_sizes {
                    let iters = iters_at(&a, bytes);
                    let skip = (iters / 10).max(1);
                    // Every rank decides alike (the selection depends only on what all
                    // ranks share), so a refusal is every rank's and all skip together.
                    let times = match measure(&world, op, bytes, iters, skip, true) {
                        Ok(t) => t,
                        Err(e) if e.kind() == ErrorKind::InvalidOp => {
                            if me == 0 {
                                let s = Skip {
                                    skip: format!("{} {}", coll.name(), algo.name),
                                    why: e.message().to_string(),
                                };
                                println!("{}", serde_json::to_string(&s).expect("serialises"));
                            }
                            break;
                        }
                        Err(e) => return Err(e),
                    };
                    if let Some((p50, _, _)) = osu_stats(&world, times)? {
                        print_cell(
                            me,
                            &Cell {
                                coll: coll.name().to_string(),
                                algo: algo.name.to_string(),
                                radix,
                                procs: n,
                                ppn,
                                bytes: selected_bytes(op, bytes, n as usize),
                                p50_us: p50,
                                baseline: false,
                            },
                        );
                    }
                }
            }
        }
        // Last, as warm as the forced cells before it.
        world.set_collective_tuning(baseline.clone());
        for &bytes in &op_sizes {
            let counted = selected_bytes(op, bytes, n as usize);
            let explained = baseline.explain(coll, counted, n, ppn)?;
            let takes_radix = algorithms(coll)
                .iter()
                .any(|x| x.name == explained.choice && x.radix);
            let radix = explained
                .candidates
                .iter()
                .find(|c| takes_radix && c.algo == explained.choice)
                .map(|c| c.radix);
            let iters = iters_at(&a, bytes);
            let times = measure(&world, op, bytes, iters, (iters / 10).max(1), true)?;
            if let Some((p50, _, _)) = osu_stats(&world, times)? {
                print_cell(
                    me,
                    &Cell {
                        coll: coll.name().to_string(),
                        algo: explained.choice.clone(),
                        radix,
                        procs: n,
                        ppn,
                        bytes: counted,
                        p50_us: p50,
                        baseline: true,
                    },
                );
            }
        }
    }
    world.set_collective_tuning(Tuning::default());
    weft.finalize()
}

/// Timed calls of a cell of `bytes`.
fn iters_at(a: &TuneRankArgs, bytes: usize) -> usize {
    if bytes < 65536 {
        a.iters_small as usize
    } else {
        a.iters_large as usize
    }
}

/// Rank 0 prints a cell (the statistics are rank 0's only).
fn print_cell(me: u32, c: &Cell) {
    if me == 0 {
        println!("{}", serde_json::to_string(c).expect("cell serialises"));
    }
}
