//! weft-compare-plot: draws the PNG plots of `bench/compare.sh` from its `summary.tsv`
//! (lines `bench bytes np library p50 repetitions`, tab-separated).
//!
//!     weft-compare-plot SUMMARY.tsv OUT_DIR
//!
//! writes `OUT_DIR/<bench>.png` for every benchmark (grouped bars: one group per size, one bar
//! per library, one panel per process count, logarithmic value axis since oversubscribed
//! peers can be a thousand times slower) and `OUT_DIR/ratio.png` (weft / best peer for every
//! benchmark and size, one panel per process count; bars left of 1.0 are where weft is
//! faster). Bandwidth's ratio is one of times (best peer's MB/s / weft's MB/s), as in the
//! tables. The font is `$WEFT_PLOT_FONT`, else DejaVu Sans (Debian's fonts-dejavu-core).
//!
//! Depends on plotters and weft-core's error type only: it reads the
//! benchmark's text output and never links the runtime.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;
use weft_core::{Error, ErrorKind, Result};

const DEFAULT_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const FAMILY: &str = "sans-serif";
const COLOURS: [RGBColor; 6] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// One line of summary.tsv: a library's P50 for one benchmark, size and process count.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    bench: String,
    bytes: u64,
    np: u32,
    lib: String,
    value: f64,
}

/// Parses summary.tsv; a malformed line is an error naming its number and field.
fn parse(text: &str) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = |what: &str| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("summary line {}: {what} in {line:?}", i + 1),
            )
        };
        if f.len() < 5 {
            return Err(bad("expected bench, bytes, np, library, p50"));
        }
        let value: f64 = f[4].parse().map_err(|_| bad("p50 is not a number"))?;
        // Zero is a real measurement rounded down (a bandwidth of a few kB/s); the log axes
        // leave it out.
        if !value.is_finite() || value < 0.0 {
            return Err(bad("p50 must be a non-negative number"));
        }
        rows.push(Row {
            bench: f[0].to_string(),
            bytes: f[1].parse().map_err(|_| bad("bytes is not a count"))?,
            np: f[2].parse().map_err(|_| bad("np is not a count"))?,
            lib: f[3].to_string(),
            value,
        });
    }
    if rows.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "summary has no rows",
        ));
    }
    Ok(rows)
}

/// Items in first-appearance order, without repeats.
fn unique<T: PartialEq + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = Vec::new();
    for x in items {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

fn is_bandwidth(bench: &str) -> bool {
    bench == "bandwidth"
}

/// weft / best peer as a ratio of times for `bench` at (bytes, np); None without weft or
/// without any peer.
fn ratio(rows: &[Row], bench: &str, bytes: u64, np: u32) -> Option<f64> {
    let cell = rows
        .iter()
        .filter(|r| r.bench == bench && r.bytes == bytes && r.np == np);
    let weft = cell
        .clone()
        .find(|r| r.lib == "weft" && r.value > 0.0)?
        .value;
    let peers = cell
        .filter(|r| r.lib != "weft" && r.value > 0.0)
        .map(|r| r.value);
    if is_bandwidth(bench) {
        let best = peers.fold(f64::NAN, f64::max);
        (!best.is_nan()).then(|| best / weft)
    } else {
        let best = peers.fold(f64::NAN, f64::min);
        (!best.is_nan()).then(|| weft / best)
    }
}

fn size_label(bench: &str, bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    match bytes {
        _ if bench == "barrier" => "-".to_string(),
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} B"),
    }
}

fn register_font() -> Result<()> {
    let path = std::env::var("WEFT_PLOT_FONT").unwrap_or_else(|_| DEFAULT_FONT.to_string());
    let bytes = std::fs::read(&path).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("font {path}: {e} (install fonts-dejavu-core or set WEFT_PLOT_FONT)"),
        )
    })?;
    // plotters keeps a 'static reference for the process lifetime; this runs once.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    for style in [FontStyle::Normal, FontStyle::Bold] {
        plotters::style::register_font(FAMILY, style, bytes).map_err(|_| {
            Error::new(ErrorKind::Io, format!("font {path} is not a TrueType font"))
        })?;
    }
    Ok(())
}

fn draw_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, format!("plot {}: {e}", path.display()))
}

/// Log-axis bounds around the positive values, padded so bars and labels fit.
fn log_bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|&v| v > 0.0)
        .fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return (0.1, 10.0);
    }
    (lo / 2.0, hi * 3.0)
}

/// One benchmark: a panel per process count, a group of bars per size, a bar per library.
fn draw_bench(path: &Path, bench: &str, rows: &[Row], libs: &[String]) -> Result<()> {
    let mine: Vec<&Row> = rows.iter().filter(|r| r.bench == bench).collect();
    let nps = unique(mine.iter().map(|r| r.np));
    let unit = if is_bandwidth(bench) {
        "MB/s (higher is better)"
    } else {
        "P50 latency (us)"
    };
    let (lo, hi) = log_bounds(mine.iter().map(|r| r.value));
    let root = BitMapBackend::new(path, (560 * nps.len() as u32, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_error(path, e))?;
    for (panel, &np) in root.split_evenly((1, nps.len())).iter().zip(&nps) {
        let sizes: Vec<u64> = unique(mine.iter().filter(|r| r.np == np).map(|r| r.bytes));
        let n = sizes.len();
        // Size i's group spans [i, i + 1); its label sits at the centre.
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{bench}, np={np}"), (FAMILY, 20))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..n as f64, (lo..hi).log_scale())
            .map_err(|e| draw_error(path, e))?;
        let labels: Vec<String> = sizes.iter().map(|&b| size_label(bench, b)).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            // Ask for ticks every half unit and label only the group centres (i + 0.5).
            .x_labels(2 * n + 1)
            .x_label_formatter(&|x| {
                let i = (x - 0.5).round();
                if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(unit)
            .x_desc("bytes")
            .label_style((FAMILY, 14))
            .draw()
            .map_err(|e| draw_error(path, e))?;
        let width = 0.8 / libs.len() as f64;
        for (j, lib) in libs.iter().enumerate() {
            let colour = COLOURS[j % COLOURS.len()];
            let bars = sizes.iter().enumerate().filter_map(|(i, &b)| {
                let v = mine
                    .iter()
                    .find(|r| r.np == np && r.bytes == b && &r.lib == lib && r.value > 0.0)?
                    .value;
                let left = i as f64 + 0.1 + j as f64 * width;
                Some(Rectangle::new(
                    [(left, lo), (left + width * 0.92, v)],
                    colour.filled(),
                ))
            });
            chart
                .draw_series(bars)
                .map_err(|e| draw_error(path, e))?
                .label(lib.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FAMILY, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| draw_error(path, e))?;
    }
    root.present().map_err(|e| draw_error(path, e))?;
    Ok(())
}

/// Every benchmark and size: weft / best peer, a horizontal bar from 1.0 per process count.
fn draw_ratios(path: &Path, rows: &[Row]) -> Result<()> {
    let nps: Vec<u32> = rows
        .iter()
        .map(|r| r.np)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let cells: Vec<(String, u64)> = unique(rows.iter().map(|r| (r.bench.clone(), r.bytes)));
    let ratios: Vec<Vec<Option<f64>>> = nps
        .iter()
        .map(|&np| cells.iter().map(|(b, n)| ratio(rows, b, *n, np)).collect())
        .collect();
    let (lo, hi) = ratios
        .iter()
        .flatten()
        .flatten()
        .fold((1.0f64, 1.0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    let (lo, hi) = (lo / 1.5, hi * 1.5);
    let height = 90 + 16 * cells.len() as u32;
    let root = BitMapBackend::new(path, (520 * nps.len() as u32, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_error(path, e))?;
    let labels: Vec<String> = cells
        .iter()
        .map(|(b, n)| match size_label(b, *n).as_str() {
            "-" => b.clone(),
            size => format!("{b} {size}"),
        })
        .collect();
    for ((panel, &np), values) in root
        .split_evenly((1, nps.len()))
        .iter()
        .zip(&nps)
        .zip(&ratios)
    {
        let n = cells.len();
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("weft / best peer (time), np={np}; < 1 = weft faster"),
                (FAMILY, 16),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(170)
            .build_cartesian_2d((lo..hi).log_scale(), 0f64..n as f64)
            .map_err(|e| draw_error(path, e))?;
        chart
            .configure_mesh()
            .disable_y_axis()
            .disable_y_mesh()
            .label_style((FAMILY, 11))
            .draw()
            .map_err(|e| draw_error(path, e))?;
        // Category i is the band [n - i - 1, n - i], so the first benchmark is at the top;
        // its name goes left of the axis and its ratio at the bar's end, in pixels.
        let name_style = TextStyle::from((FAMILY, 11).into_font())
            .pos(Pos::new(HPos::Right, VPos::Center))
            .color(&BLACK);
        let value_style = TextStyle::from((FAMILY, 10).into_font())
            .pos(Pos::new(HPos::Left, VPos::Center))
            .color(&BLACK);
        for (i, label) in labels.iter().enumerate() {
            let y = (n - i) as f64 - 0.5;
            let (px, py) = chart.backend_coord(&(lo, y));
            root.draw(&Text::new(label.clone(), (px - 6, py), &name_style))
                .map_err(|e| draw_error(path, e))?;
            if let Some(r) = values[i] {
                let (px, py) = chart.backend_coord(&(1.0f64.max(r), y));
                root.draw(&Text::new(format!("{r:.2}"), (px + 3, py), &value_style))
                    .map_err(|e| draw_error(path, e))?;
            }
        }
        chart
            .draw_series(values.iter().enumerate().filter_map(|(i, r)| {
                let r = (*r)?;
                let y = (n - i) as f64;
                let colour = if r <= 1.0 { COLOURS[2] } else { COLOURS[0] };
                Some(Rectangle::new(
                    [(1.0f64.min(r), y - 0.85), (1.0f64.max(r), y - 0.15)],
                    colour.filled(),
                ))
            }))
            .map_err(|e| draw_error(path, e))?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(1.0, 0.0), (1.0, n as f64)],
                BLACK,
            )))
            .map_err(|e| draw_error(path, e))?;
    }
    root.present().map_err(|e| draw_error(path, e))?;
    Ok(())
}

fn run(summary: &Path, out: &Path) -> Result<Vec<std::path::PathBuf>> {
    let text = std::fs::read_to_string(summary)
        .map_err(|e| Error::io(format!("reading {}", summary.display()), e))?;
    let rows = parse(&text)?;
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("creating {}", out.display()), e))?;
    register_font()?;
    // weft first, then the peers in first-appearance order, so colours are stable.
    let mut libs = vec!["weft".to_string()];
    libs.extend(
        unique(rows.iter().map(|r| r.lib.clone()))
            .into_iter()
            .filter(|l| l != "weft"),
    );
    let mut written = Vec::new();
    for bench in unique(rows.iter().map(|r| r.bench.clone())) {
        let path = out.join(format!("{bench}.png"));
        draw_bench(&path, &bench, &rows, &libs)?;
        written.push(path);
    }
    let path = out.join("ratio.png");
    draw_ratios(&path, &rows)?;
    written.push(path);
    Ok(written)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 2 {
        eprintln!("usage: weft-compare-plot SUMMARY.tsv OUT_DIR");
        return ExitCode::from(2);
    }
    match run(Path::new(&args[0]), Path::new(&args[1])) {
        Ok(files) => {
            println!("plots: {} files in {}", files.len(), args[1]);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weft-compare-plot: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str = "pingpong\t8\t2\tweft\t0.2\t3\npingpong\t8\t2\topenmpi\t0.4\t3\n\
        bandwidth\t8\t2\tweft\t50\t3\nbandwidth\t8\t2\topenmpi\t100\t3\n\
        barrier\t0\t4\tweft\t4\t3\nbarrier\t0\t4\tmpich4\t8000\t3\n";

    #[test]
    fn ratios_are_of_times_for_latency_and_bandwidth() {
        let rows = parse(SUMMARY).unwrap();
        assert_eq!(rows.len(), 6);
        assert_eq!(ratio(&rows, "pingpong", 8, 2), Some(0.5));
        // Half the peer's bandwidth is twice its time.
        assert_eq!(ratio(&rows, "bandwidth", 8, 2), Some(2.0));
        assert_eq!(ratio(&rows, "barrier", 0, 4), Some(4.0 / 8000.0));
        assert_eq!(ratio(&rows, "barrier", 0, 2), None);
    }

    #[test]
    fn malformed_lines_name_line_and_field() {
        let e = parse("pingpong\t8\t2\tweft\tfast\t3\n").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(
            e.message().contains("line 1") && e.message().contains("p50"),
            "{e}"
        );
        let e = parse("a\tb\n").unwrap_err();
        assert!(e.message().contains("expected bench"), "{e}");
        let e = parse("pingpong\t8\tx\tweft\t1\t3\n").unwrap_err();
        assert!(e.message().contains("np"), "{e}");
        assert!(parse("pingpong\t8\t2\tweft\t-1\t3\n").is_err());
        // A zero is kept but never makes a ratio.
        let rows = parse("bandwidth\t8\t2\tweft\t0\t1\nbandwidth\t8\t2\tompi\t3\t1\n").unwrap();
        assert_eq!(ratio(&rows, "bandwidth", 8, 2), None);
        assert!(parse("\n").is_err());
    }

    #[test]
    fn writes_one_png_per_benchmark_and_the_ratio_chart() {
        if std::fs::metadata(DEFAULT_FONT).is_err() && std::env::var("WEFT_PLOT_FONT").is_err() {
            assert!(register_font().is_err());
            return;
        }
        let dir = std::env::temp_dir().join(format!("weft-compare-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let summary = dir.join("summary.tsv");
        std::fs::write(&summary, SUMMARY).unwrap();
        let files = run(&summary, &dir.join("plots")).unwrap();
        assert_eq!(files.len(), 4);
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            assert_eq!(&bytes[1..4], b"PNG", "{}", f.display());
            assert!(bytes.len() > 2000);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
