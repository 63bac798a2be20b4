//! PNG line charts and grouped bar charts for `weft plan` and `weft bench`, on `plotters`
//! with its bitmap backend.
//!
//! plotters is built without system-font lookup (ab_glyph only), so we register one TTF file
//! ourselves: `$WEFT_PLOT_FONT` if set, else DejaVu Sans from Debian's `fonts-dejavu-core`.
//! A missing or unreadable font is an error naming the path and the package, never a panic.
//! Depends on nothing of weft but `weft-core`'s error type.

use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;
use weft_core::{Error, ErrorKind, Result};

/// Where the default font lives on Debian/Ubuntu (package `fonts-dejavu-core`).
pub(crate) const DEFAULT_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

const FAMILY: &str = "sans-serif";

/// One named curve of a line chart.
#[derive(Clone, Debug)]
pub(crate) struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) points in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// Axes and title of a chart.
#[derive(Clone, Debug)]
pub(crate) struct Labels<'a> {
    /// Caption above the chart.
    pub title: &'a str,
    /// X axis description.
    pub x: &'a str,
    /// Y axis description.
    pub y: &'a str,
}

fn font_path() -> String {
    weft_core::knob::KnobValues::read_env(&[weft_core::knob::TOOL_VARS])
        .ok()
        .and_then(|(v, _)| v.text("WEFT_PLOT_FONT"))
        .unwrap_or_else(|| DEFAULT_FONT.to_string())
}

/// Registers the font once per process; later calls return the first outcome.
fn ensure_font() -> Result<()> {
    static OUTCOME: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    OUTCOME
        .get_or_init(|| {
            let path = font_path();
            let bytes = std::fs::read(&path).map_err(|e| {
                format!(
                    "plot: cannot read font {path}: {e} (install the Debian package fonts-dejavu-core or set WEFT_PLOT_FONT to a .ttf file)"
                )
            })?;
            // plotters keeps a 'static reference to the font for the process lifetime.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            for style in [FontStyle::Normal, FontStyle::Bold] {
                plotters::style::register_font(FAMILY, style, bytes)
                    .map_err(|_| format!("plot: font {path} is not a valid TrueType font"))?;
            }
            Ok(())
        })
        .clone()
        .map_err(|m| Error::new(ErrorKind::Io, m))
}

fn draw_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, format!("plot {}: {e}", path.display()))
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        return (lo - 0.5, hi + 0.5);
    }
    (lo, hi)
}

/// How a line chart's axes are drawn, and what it marks besides its curves.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChartOpts {
    /// A logarithmic x axis (every x must be > 0).
    pub log_x: bool,
    /// The x values are byte counts: powers of two apart on the axis, labelled 8, 1K, 64K,
    /// 1M (implies a logarithmic axis).
    pub x_bytes: bool,
    /// Vertical marks: a line at `x` named `label`, with a shaded band over `band` when given
    /// (k* and [k_min, k_max] on an F(k) plot).
    pub marks: Vec<Mark>,
}

/// A vertical mark of a line chart.
#[derive(Clone, Debug)]
pub(crate) struct Mark {
    /// Where the line goes.
    pub x: f64,
    /// Its legend text.
    pub label: String,
    /// A band shaded behind it, `(from, to)`.
    pub band: Option<(f64, f64)>,
}

/// `bytes` as the sizes are written on the command line: 8, 1K, 64K, 1M (binary units, a
/// fraction when not a whole unit).
pub(crate) fn bytes_label(bytes: f64) -> String {
    let b = bytes.round();
    for (unit, size) in [("G", 1u64 << 30), ("M", 1 << 20), ("K", 1 << 10)] {
        let size = size as f64;
        if b >= size {
            let v = b / size;
            return if (v - v.round()).abs() < 1e-9 {
                format!("{}{unit}", v.round())
            } else {
                format!("{v:.1}{unit}")
            };
        }
    }
    format!("{b}")
}

/// Whether `values` (all > 0) span a decade or more: a logarithmic axis shows them better.
fn spans_decades(values: impl Iterator<Item = f64>) -> bool {
    let (lo, hi) = bounds(values);
    lo > 0.0 && hi / lo >= 10.0
}

/// The legend, drawn in its own area beside the plot so it never covers data.
fn draw_legend(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    entries: &[(String, RGBColor, bool)],
    path: &Path,
) -> Result<()> {
    for (i, (name, colour, band)) in entries.iter().enumerate() {
        let y = 60 + i as i32 * 24;
        let style = colour.stroke_width(2);
        if *band {
            area.draw(&Rectangle::new(
                [(6, y - 6), (30, y + 6)],
                colour.mix(0.2).filled(),
            ))
            .map_err(|e| draw_error(path, e))?;
        }
        area.draw(&PathElement::new(vec![(6, y), (30, y)], style))
            .map_err(|e| draw_error(path, e))?;
        area.draw(&Text::new(name.clone(), (36, y - 8), (FAMILY, 14)))
            .map_err(|e| draw_error(path, e))?;
    }
    Ok(())
}

/// Draws `series` as lines (with point markers) into a PNG at `path`; `log_x` uses a
/// logarithmic x axis (all x must be > 0). The y axis is logarithmic when the values span a
/// decade or more; the legend sits beside the plot. See [`line_chart_with`].
pub(crate) fn line_chart(
    path: &Path,
    labels: &Labels,
    series: &[Series],
    log_x: bool,
) -> Result<()> {
    line_chart_with(
        path,
        labels,
        series,
        &ChartOpts {
            log_x,
            ..ChartOpts::default()
        },
    )
}

/// [`line_chart`] with byte-count x labels and vertical marks ([`ChartOpts`]).
pub(crate) fn line_chart_with(
    path: &Path,
    labels: &Labels,
    series: &[Series],
    opts: &ChartOpts,
) -> Result<()> {
    ensure_font()?;
    if series.iter().all(|s| s.points.is_empty()) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("plot {}: nothing to draw", path.display()),
        ));
    }
    // The file first: a bad path is one readable line, not the bitmap encoder's error.
    std::fs::File::create(path).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("plot {}: cannot write it: {e}", path.display()),
        )
    })?;
    let log_x = opts.log_x || opts.x_bytes;
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    if log_x && xs().any(|x| x <= 0.0) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("plot {}: log x axis needs x > 0", path.display()),
        ));
    }
    // Byte counts go on a linear axis of log2(x), labelled back in bytes.
    let to_x = |x: f64| if opts.x_bytes { x.log2() } else { x };
    let (mut x0, mut x1) = bounds(xs().map(to_x));
    for m in &opts.marks {
        let (lo, hi) = m.band.unwrap_or((m.x, m.x));
        x0 = x0.min(to_x(lo));
        x1 = x1.max(to_x(hi));
    }
    let ys = || series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let log_y = ys().all(|y| y > 0.0) && spans_decades(ys());
    let (y0, y1) = bounds(ys());
    let (y0, y1) = if log_y {
        (y0 / 1.2, y1 * 1.2)
    } else {
        let pad = (y1 - y0) * 0.05;
        (y0 - pad, y1 + pad)
    };
    let root = BitMapBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_error(path, e))?;
    let (plot_area, legend_area) = root.split_horizontally(760);
    let mut builder = ChartBuilder::on(&plot_area);
    builder
        .caption(labels.title, (FAMILY, 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70);
    let mut legend: Vec<(String, RGBColor, bool)> = Vec::new();
    let x_bytes = opts.x_bytes;
    let bytes_fmt = move |v: &f64| {
        if x_bytes {
            bytes_label(v.exp2())
        } else {
            format!("{v}")
        }
    };
    macro_rules! finish {
        ($chart:ident) => {{
            let mut mesh = $chart.configure_mesh();
            mesh.x_desc(labels.x)
                .y_desc(labels.y)
                .label_style((FAMILY, 14));
            if x_bytes {
                mesh.x_label_formatter(&bytes_fmt);
            }
            mesh.draw().map_err(|e| draw_error(path, e))?;
            for (i, m) in opts.marks.iter().enumerate() {
                let colour = RGBColor(90, 90, 90);
                if let Some((lo, hi)) = m.band {
                    $chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(to_x(lo), y0), (to_x(hi), y1)],
                            colour.mix(0.12 + 0.04 * i as f64).filled(),
                        )))
                        .map_err(|e| draw_error(path, e))?;
                }
                $chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(to_x(m.x), y0), (to_x(m.x), y1)],
                        colour.stroke_width(2),
                    )))
                    .map_err(|e| draw_error(path, e))?;
                legend.push((m.label.clone(), colour, m.band.is_some()));
            }
            for (i, s) in series.iter().enumerate() {
                let colour = COLOURS[i % COLOURS.len()];
                let pts: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (to_x(x), y)).collect();
                $chart
                    .draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(2)))
                    .map_err(|e| draw_error(path, e))?;
                $chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .map_err(|e| draw_error(path, e))?;
                legend.push((s.name.clone(), colour, false));
            }
        }};
    }
    match (log_x && !x_bytes, log_y) {
        (false, false) => {
            let mut chart = builder
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(|e| draw_error(path, e))?;
            finish!(chart);
        }
        (false, true) => {
            let mut chart = builder
                .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                .map_err(|e| draw_error(path, e))?;
            finish!(chart);
        }
        (true, false) => {
            let mut chart = builder
                .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                .map_err(|e| draw_error(path, e))?;
            finish!(chart);
        }
        (true, true) => {
            let mut chart = builder
                .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
                .map_err(|e| draw_error(path, e))?;
            finish!(chart);
        }
    }
    draw_legend(&legend_area, &legend, path)?;
    root.present().map_err(|e| draw_error(path, e))?;
    Ok(())
}

/// Draws grouped bars into a PNG at `path`: one group per category, one bar per named
/// series (`series[j].1[i]` is series j's value for category i).
pub(crate) fn bar_chart(
    path: &Path,
    labels: &Labels,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<()> {
    ensure_font()?;
    if categories.is_empty() || series.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("plot {}: nothing to draw", path.display()),
        ));
    }
    if let Some((name, _)) = series.iter().find(|(_, v)| v.len() != categories.len()) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "plot {}: series {name:?} does not have one value per category",
                path.display()
            ),
        ));
    }
    std::fs::File::create(path).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("plot {}: cannot write it: {e}", path.display()),
        )
    })?;
    let (_, y1) = bounds(series.iter().flat_map(|(_, v)| v.iter().copied()));
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_error(path, e))?;
    let n = categories.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(labels.title, (FAMILY, 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.1f64..n as f64 + 0.1, 0f64..y1)
        .map_err(|e| draw_error(path, e))?;
    let cats = categories.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&move |x: &f64| {
            // Label only bar-group centres (i + 0.5).
            let i = (x - 0.5).round();
            if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < cats.len() {
                cats[i as usize].clone()
            } else {
                String::new()
            }
        })
        .x_desc(labels.x)
        .y_desc(labels.y)
        .label_style((FAMILY, 14))
        .draw()
        .map_err(|e| draw_error(path, e))?;
    let width = 0.8 / series.len() as f64;
    for (j, (name, values)) in series.iter().enumerate() {
        let colour = COLOURS[j % COLOURS.len()];
        chart
            .draw_series(values.iter().enumerate().map(|(i, &v)| {
                let left = i as f64 + 0.1 + j as f64 * width;
                Rectangle::new([(left, 0.0), (left + width * 0.95, v)], colour.filled())
            }))
            .map_err(|e| draw_error(path, e))?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .label_font((FAMILY, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| draw_error(path, e))?;
    root.present().map_err(|e| draw_error(path, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_labelled_as_on_the_command_line() {
        let got: Vec<String> = [8.0, 1024.0, 65536.0, 1048576.0, 1536.0, 3.0 * 1073741824.0]
            .iter()
            .map(|&b| bytes_label(b))
            .collect();
        assert_eq!(got, ["8", "1K", "64K", "1M", "1.5K", "3G"]);
        assert!(spans_decades([0.5, 6.0].into_iter()));
        assert!(!spans_decades([1.0, 9.0].into_iter()));
    }

    #[test]
    fn line_and_bar_charts_write_png_files() {
        if std::fs::metadata(font_path()).is_err() {
            // Without the font the error path is what we can check.
            let err = line_chart(
                Path::new("/tmp/none.png"),
                &Labels {
                    title: "t",
                    x: "x",
                    y: "y",
                },
                &[Series {
                    name: "a".into(),
                    points: vec![(1.0, 1.0)],
                }],
                false,
            )
            .unwrap_err();
            assert!(err.message().contains("fonts-dejavu-core"));
            return;
        }
        let dir = std::env::temp_dir().join(format!("weft-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = dir.join("line.png");
        line_chart(
            &line,
            &Labels {
                title: "F(k)",
                x: "k",
                y: "us",
            },
            &[Series {
                name: "F".into(),
                points: (2..50)
                    .map(|k| (k as f64, 1.0 / k as f64 + k as f64 * 0.01))
                    .collect(),
            }],
            true,
        )
        .unwrap();
        let bar = dir.join("bar.png");
        bar_chart(
            &bar,
            &Labels {
                title: "bars",
                x: "c",
                y: "v",
            },
            &["a".to_string(), "b".to_string()],
            &[
                ("s".to_string(), vec![1.0, 2.0]),
                ("t".to_string(), vec![3.0, 0.5]),
            ],
        )
        .unwrap();
        let sizes = dir.join("sizes.png");
        line_chart_with(
            &sizes,
            &Labels {
                title: "latency",
                x: "bytes",
                y: "us",
            },
            &[Series {
                name: "default choice".into(),
                points: vec![
                    (8.0, 0.5),
                    (1024.0, 1.5),
                    (65536.0, 20.0),
                    (1048576.0, 300.0),
                ],
            }],
            &ChartOpts {
                x_bytes: true,
                marks: vec![Mark {
                    x: 1024.0,
                    label: "k*".into(),
                    band: Some((64.0, 4096.0)),
                }],
                ..ChartOpts::default()
            },
        )
        .unwrap();
        let err = line_chart(
            &dir.join("no/such/folder/x.png"),
            &Labels {
                title: "t",
                x: "x",
                y: "y",
            },
            &[Series {
                name: "a".into(),
                points: vec![(1.0, 1.0)],
            }],
            false,
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("cannot write it") && !msg.contains("Error("),
            "{msg}"
        );
        assert_eq!(msg.lines().count(), 1, "{msg}");
        for p in [&line, &bar, &sizes] {
            let bytes = std::fs::read(p).unwrap();
            assert_eq!(&bytes[1..4], b"PNG");
            assert!(bytes.len() > 2000);
        }
        let err = bar_chart(
            &bar,
            &Labels {
                title: "",
                x: "",
                y: "",
            },
            &["a".into()],
            &[("s".into(), vec![])],
        )
        .unwrap_err();
        assert!(err.message().contains("one value per category"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
