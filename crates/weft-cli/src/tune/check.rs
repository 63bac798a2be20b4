//! `weft tune --check FILE`: every measured cell of a tuning file (`[[point]]`) beside the
//! cost model's prediction for it (the algorithm's cost formula, `weft::coll::algo`, fed
//! with the file's lane figures as the runtime loads them), the error, and per collective
//! the mean absolute percentage error over all sizes and over sizes of 64 KiB and more.

use std::path::Path;
use weft::coll::select::{algorithms, parse_tuning_file, Coll, TuningFile};
use weft_model::cost::CollShape;

/// One compared cell.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Row {
    pub coll: String,
    pub algo: String,
    pub radix: Option<u32>,
    pub procs: u32,
    pub ppn: u32,
    pub bytes: u64,
    pub predicted_us: Option<f64>,
    pub measured_us: f64,
    /// (predicted - measured) / measured, percent.
    pub error_pct: Option<f64>,
}

/// Per collective: cells, mean absolute percentage error over all and from 64 KiB.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Summary {
    pub coll: String,
    pub cells: usize,
    pub mape_pct: Option<f64>,
    pub cells_from_64k: usize,
    pub mape_from_64k_pct: Option<f64>,
}

/// The rows and summaries of `file`.
pub(crate) fn compare(file: &TuningFile) -> (Vec<Row>, Vec<Summary>) {
    let lanes = &file.coll_lanes;
    let rows: Vec<Row> = file
        .points
        .iter()
        .map(|p| {
            let predicted_us = Coll::from_name(&p.coll)
                .ok()
                .and_then(|c| algorithms(c).iter().find(|a| a.name == p.algo))
                .and_then(|a| {
                    let shape = CollShape {
                        procs: p.procs,
                        ppn: p.ppn,
                        bytes: p.bytes,
                    };
                    a.cost_ns(&shape, p.radix.unwrap_or(2), lanes)
                })
                .map(|ns| ns / 1e3);
            let error_pct = predicted_us
                .filter(|_| p.measured_us > 0.0)
                .map(|q| (q - p.measured_us) / p.measured_us * 100.0);
            Row {
                coll: p.coll.clone(),
                algo: p.algo.clone(),
                radix: p.radix,
                procs: p.procs,
                ppn: p.ppn,
                bytes: p.bytes,
                predicted_us,
                measured_us: p.measured_us,
                error_pct,
            }
        })
        .collect();
    let mut colls: Vec<&str> = Vec::new();
    for r in &rows {
        if !colls.contains(&r.coll.as_str()) {
            colls.push(&r.coll);
        }
    }
    let summaries = colls
        .iter()
        .map(|c| {
            let (cells, mape_pct) = mape(rows.iter().filter(|r| r.coll == *c));
            let (cells_from_64k, mape_from_64k_pct) =
                mape(rows.iter().filter(|r| r.coll == *c && r.bytes >= 65536));
            Summary {
                coll: c.to_string(),
                cells,
                mape_pct,
                cells_from_64k,
                mape_from_64k_pct,
            }
        })
        .collect();
    (rows, summaries)
}

/// Cells with an error, and the mean of their absolute errors in percent.
fn mape<'a>(rows: impl Iterator<Item = &'a Row>) -> (usize, Option<f64>) {
    let errs: Vec<f64> = rows.filter_map(|r| r.error_pct.map(f64::abs)).collect();
    let n = errs.len();
    (n, (n > 0).then(|| errs.iter().sum::<f64>() / n as f64))
}

/// Runs `weft tune --check FILE`.
pub(crate) fn run(path: &Path, json: bool) -> i32 {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("weft tune --check: {}: {e}", path.display());
            return 2;
        }
    };
    let file = match parse_tuning_file(&text, &path.display().to_string()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("weft tune --check: {e}");
            return 2;
        }
    };
    if file.points.is_empty() {
        eprintln!(
            "weft tune --check: {}: no [[point]] measurements to compare (write one with weft tune)",
            path.display()
        );
        return 2;
    }
    let (rows, summaries) = compare(&file);
    if json {
        for r in &rows {
            println!("{}", serde_json::to_string(r).expect("row serialises"));
        }
        for s in &summaries {
            println!("{}", serde_json::to_string(s).expect("summary serialises"));
        }
        return 0;
    }
    let l = &file.coll_lanes;
    println!(
        "# model lanes from {}: intra {:.3} us + {:.4} ns/B, inter {:.3} us + {:.4} ns/B, reduction {:.4} ns/B",
        path.display(),
        l.intra.latency_ns / 1e3,
        l.intra.ns_per_byte,
        l.inter.latency_ns / 1e3,
        l.inter.ns_per_byte,
        l.reduce_ns_per_byte
    );
    println!(
        "{:<22} {:<20} {:>5} {:>4} {:>4} {:>10} {:>14} {:>13} {:>9}",
        "coll", "algo", "radix", "np", "ppn", "bytes", "predicted_us", "measured_us", "error"
    );
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:+.0}%"));
    for r in &rows {
        println!(
            "{:<22} {:<20} {:>5} {:>4} {:>4} {:>10} {:>14} {:>13.3} {:>9}",
            r.coll,
            r.algo,
            r.radix.map_or("-".to_string(), |k| k.to_string()),
            r.procs,
            r.ppn,
            r.bytes,
            r.predicted_us
                .map_or("not modelled".to_string(), |x| format!("{x:.3}")),
            r.measured_us,
            pct(r.error_pct)
        );
    }
    println!("# mean absolute percentage error per collective");
    println!(
        "{:<22} {:>6} {:>9} {:>13} {:>15}",
        "coll", "cells", "mape", "cells>=64KiB", "mape>=64KiB"
    );
    let abs = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}%"));
    for s in &summaries {
        println!(
            "{:<22} {:>6} {:>9} {:>13} {:>15}",
            s.coll,
            s.cells,
            abs(s.mape_pct),
            s.cells_from_64k,
            abs(s.mape_from_64k_pct)
        );
    }
    0
}
