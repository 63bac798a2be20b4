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
pub const DEFAULT_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

const FAMILY: &str = "sans-serif";

/// One named curve of a line chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) points in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// Axes and title of a chart.
#[derive(Clone, Debug)]
pub struct Labels<'a> {
    /// Caption above the chart.
    pub title: &'a str,
    /// X axis description.
    pub x: &'a str,
    /// Y axis description.
    pub y: &'a str,
}

fn font_path() -> String {
    std::env::var("WEFT_PLOT_FONT").unwrap_or_else(|_| DEFAULT_FONT.to_string())
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

/// Draws `series` as lines (with point markers) into a PNG at `path`; `log_x` uses a
/// logarithmic x axis (all x must be > 0).
pub fn line_chart(path: &Path, labels: &Labels, series: &[Series], log_x: bool) -> Result<()> {
    ensure_font()?;
    if series.iter().all(|s| s.points.is_empty()) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("plot {}: nothing to draw", path.display()),
        ));
    }
    let (x0, x1) = bounds(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let (y0, y1) = bounds(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let pad = (y1 - y0) * 0.05;
    let (y0, y1) = (y0 - pad, y1 + pad);
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_error(path, e))?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(labels.title, (FAMILY, 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70);
    macro_rules! finish {
        ($chart:ident) => {{
            $chart
                .configure_mesh()
                .x_desc(labels.x)
                .y_desc(labels.y)
                .label_style((FAMILY, 14))
                .draw()
                .map_err(|e| draw_error(path, e))?;
            for (i, s) in series.iter().enumerate() {
                let colour = COLOURS[i % COLOURS.len()];
                $chart
                    .draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        colour.stroke_width(2),
                    ))
                    .map_err(|e| draw_error(path, e))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                    });
                $chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .map_err(|e| draw_error(path, e))?;
            }
            $chart
                .configure_series_labels()
                .label_font((FAMILY, 14))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(|e| draw_error(path, e))?;
        }};
    }
    if log_x {
        if x0 <= 0.0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("plot {}: log x axis needs x > 0", path.display()),
            ));
        }
        let mut chart = builder
            .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
            .map_err(|e| draw_error(path, e))?;
        finish!(chart);
    } else {
        let mut chart = builder
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| draw_error(path, e))?;
        finish!(chart);
    }
    root.present().map_err(|e| draw_error(path, e))?;
    Ok(())
}

/// Draws grouped bars into a PNG at `path`: one group per category, one bar per named
/// series (`series[j].1[i]` is series j's value for category i).
pub fn bar_chart(
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
        for p in [&line, &bar] {
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
