//! Output helpers for `weft plan`: aligned text tables, CSV files, JSON on stdout, and
//! writing text files with errors that name the path.

use std::path::Path;
use weft_core::{Error, Result};

/// A table with a header row.
pub(crate) struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table aligned in columns (numbers right-aligned).
    pub(crate) fn render(&self) -> String {
        let cols = self.headers.len();
        let mut width = vec![0; cols];
        for r in std::iter::once(&self.headers).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for (n, r) in std::iter::once(&self.headers).chain(&self.rows).enumerate() {
            let line: Vec<String> = r
                .iter()
                .enumerate()
                .take(cols)
                .map(|(i, c)| {
                    let numeric = n > 0 && c.parse::<f64>().is_ok();
                    if numeric {
                        format!("{c:>w$}", w = width[i])
                    } else {
                        format!("{c:<w$}", w = width[i])
                    }
                })
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
            if n == 0 {
                let rule: Vec<String> = width.iter().map(|&w| "-".repeat(w)).collect();
                out.push_str(&rule.join("  "));
                out.push('\n');
            }
        }
        out
    }

    /// The table as CSV (cells with commas or quotes are quoted).
    pub(crate) fn csv(&self) -> String {
        let quote = |c: &String| {
            if c.contains([',', '"', '\n']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.clone()
            }
        };
        let mut out = String::new();
        for r in std::iter::once(&self.headers).chain(&self.rows) {
            out.push_str(&r.iter().map(quote).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        out
    }
}

/// Writes `text` to `path`, naming the path on failure.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// Writes `text` to stdout; errors (a closed pipe) are ignored because there is no one
/// left to read the rest.
pub(crate) fn emit(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Prints a JSON value on stdout.
pub(crate) fn print_json(value: &serde_json::Value) {
    outln!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

/// Formats a float with `digits` decimals.
pub(crate) fn fixed(v: f64, digits: usize) -> String {
    format!("{v:.digits$}")
}
