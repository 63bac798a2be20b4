//! Forwarding ranks' output line by line: each rank's stdout and stderr are cut at newlines
//! and whole lines written at once (optionally prefixed `[rank] `), so lines of different
//! ranks never interleave inside a line. A partial last line is written when its stream ends.
//! With [`OutputFiles`] each rank's streams also (or only) go to files of their own, as
//! the rank wrote them.
//!
//! No process handling here; depends only on std and the crate's `OutputMode`.

use crate::{OutputFiles, OutputMode};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use weft_core::{Error, Result};

/// A line longer than this is written in pieces rather than held back indefinitely.
pub const MAX_PENDING_BYTES: usize = 64 << 10;

/// Which of a rank's streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Where forwarded bytes and the launcher's own lines end up.
#[derive(Debug)]
pub struct Sink {
    mode: OutputMode,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Sink {
    /// A sink forwarding to this process (`Inherit`) or collecting (`Capture`).
    pub fn new(mode: OutputMode) -> Sink {
        Sink {
            mode,
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }

    /// Writes whole lines to the stream `kind`.
    pub fn write(&mut self, kind: StreamKind, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        match (self.mode, kind) {
            (OutputMode::Capture, StreamKind::Stdout) => self.stdout.extend_from_slice(bytes),
            (OutputMode::Capture, StreamKind::Stderr) => self.stderr.extend_from_slice(bytes),
            // Write errors (a closed pipe after `| head`) are ignored: ranks must keep
            // running and being drained whatever happens to the launcher's own output.
            (OutputMode::Inherit, StreamKind::Stdout) => {
                let mut o = std::io::stdout().lock();
                let _ = o.write_all(bytes).and_then(|_| o.flush());
            }
            (OutputMode::Inherit, StreamKind::Stderr) => {
                let mut o = std::io::stderr().lock();
                let _ = o.write_all(bytes).and_then(|_| o.flush());
            }
        }
    }

    /// Writes one of the launcher's own messages to stderr, as a line.
    pub fn launcher_line(&mut self, line: &str) {
        let mut b = Vec::with_capacity(line.len() + 1);
        b.extend_from_slice(line.as_bytes());
        b.push(b'\n');
        self.write(StreamKind::Stderr, &b);
    }

    /// The collected stdout and stderr (empty when forwarding).
    pub fn into_captured(self) -> (Vec<u8>, Vec<u8>) {
        (self.stdout, self.stderr)
    }
}

/// The not-yet-complete line of one stream of one rank.
#[derive(Debug)]
pub struct LineBuffer {
    prefix: Option<Vec<u8>>,
    kind: StreamKind,
    pending: Vec<u8>,
}

impl LineBuffer {
    /// A buffer for `rank`'s stream `kind`, prefixing lines with `[rank] ` when `tag`.
    pub fn new(rank: u32, kind: StreamKind, tag: bool) -> LineBuffer {
        LineBuffer {
            prefix: tag.then(|| format!("[{rank}] ").into_bytes()),
            kind,
            pending: Vec::new(),
        }
    }

    /// Adds bytes read from the stream; writes every line they complete.
    pub fn push(&mut self, data: &[u8], sink: &mut Sink) {
        self.pending.extend_from_slice(data);
        let complete = match self.pending.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if self.pending.len() >= MAX_PENDING_BYTES => self.pending.len(),
            None => return,
        };
        let out = self.render(&self.pending[..complete]);
        sink.write(self.kind, &out);
        self.pending.drain(..complete);
    }

    /// The stream ended: writes what is left (a tagged partial line gets a newline so the
    /// next tagged line starts on its own line).
    pub fn finish(&mut self, sink: &mut Sink) {
        if self.pending.is_empty() {
            return;
        }
        let out = self.render(&self.pending);
        sink.write(self.kind, &out);
        self.pending.clear();
    }

    fn render(&self, block: &[u8]) -> Vec<u8> {
        let Some(prefix) = &self.prefix else {
            return block.to_vec();
        };
        let mut out = Vec::with_capacity(block.len() + prefix.len() * 4);
        for line in block.split_inclusive(|&b| b == b'\n') {
            out.extend_from_slice(prefix);
            out.extend_from_slice(line);
            if line.last() != Some(&b'\n') {
                out.push(b'\n');
            }
        }
        out
    }
}

/// The line buffers of every rank's two streams, indexed by rank, and the files they are
/// also written to ([`OutputFiles`]).
#[derive(Debug)]
pub struct RankLines {
    bufs: Vec<LineBuffer>,
    /// Each rank's stdout and stderr file, in the order of `bufs`.
    files: Vec<File>,
    /// Whether lines also go to the sink (always, without files).
    copy: bool,
}

impl RankLines {
    /// Buffers for ranks `0..nranks`, tagged `[rank] ` when `tag`.
    pub fn new(nranks: u32, tag: bool) -> RankLines {
        let bufs = (0..nranks)
            .flat_map(|r| {
                [
                    LineBuffer::new(r, StreamKind::Stdout, tag),
                    LineBuffer::new(r, StreamKind::Stderr, tag),
                ]
            })
            .collect();
        RankLines {
            bufs,
            files: Vec::new(),
            copy: true,
        }
    }

    /// [`RankLines::new`], also writing each rank's streams to the files of `files` (made
    /// here, empty; an error names the file that could not be made).
    pub fn with_files(nranks: u32, tag: bool, files: Option<&OutputFiles>) -> Result<RankLines> {
        let mut lines = RankLines::new(nranks, tag);
        let Some(f) = files else {
            return Ok(lines);
        };
        for rank in 0..nranks {
            let dir = rank_output_dir(&f.dir, rank, nranks);
            std::fs::create_dir_all(&dir)
                .map_err(|e| Error::io(format!("output files: making {}", dir.display()), e))?;
            for name in ["stdout", "stderr"] {
                let path = dir.join(name);
                let file = File::create(&path).map_err(|e| {
                    Error::io(format!("output files: creating {}", path.display()), e)
                })?;
                lines.files.push(file);
            }
        }
        lines.copy = f.copy;
        Ok(lines)
    }

    fn index(&self, rank: u32, kind: StreamKind) -> Option<usize> {
        let i = rank as usize * 2 + usize::from(kind == StreamKind::Stderr);
        (i < self.bufs.len()).then_some(i)
    }

    /// Adds bytes `rank` wrote; a rank outside the job is ignored (it cannot be attributed).
    pub fn push(&mut self, rank: u32, kind: StreamKind, data: &[u8], sink: &mut Sink) {
        if let Some(i) = self.index(rank, kind) {
            if let Some(f) = self.files.get_mut(i) {
                // A full disk must not stop the job or its forwarding: the file stays short.
                let _ = f.write_all(data);
            }
            if self.copy {
                self.bufs[i].push(data, sink);
            }
        }
    }

    /// The stream ended: writes its partial last line.
    pub fn finish(&mut self, rank: u32, kind: StreamKind, sink: &mut Sink) {
        if let Some(i) = self.index(rank, kind) {
            if self.copy {
                self.bufs[i].finish(sink);
            }
        }
    }

    /// Writes every partial line left.
    pub fn finish_all(&mut self, sink: &mut Sink) {
        if self.copy {
            for b in &mut self.bufs {
                b.finish(sink);
            }
        }
    }
}

/// The folder of `rank`'s output files under `dir`: `rank.N`, N zero-padded to the width of
/// the job's last rank so that listings sort in rank order.
pub fn rank_output_dir(dir: &Path, rank: u32, nranks: u32) -> PathBuf {
    let width = nranks.saturating_sub(1).max(1).to_string().len();
    dir.join(format!("rank.{rank:0width$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(f: impl FnOnce(&mut Sink)) -> (String, String) {
        let mut s = Sink::new(OutputMode::Capture);
        f(&mut s);
        let (o, e) = s.into_captured();
        (String::from_utf8(o).unwrap(), String::from_utf8(e).unwrap())
    }

    #[test]
    fn lines_are_held_until_complete_and_tagged() {
        let (out, err) = captured(|s| {
            let mut a = LineBuffer::new(0, StreamKind::Stdout, true);
            let mut b = LineBuffer::new(12, StreamKind::Stdout, true);
            let mut e = LineBuffer::new(1, StreamKind::Stderr, true);
            a.push(b"hel", s);
            b.push(b"one\ntw", s);
            a.push(b"lo\nwor", s);
            e.push(b"oops\n", s);
            b.push(b"o\n", s);
            a.finish(s);
            b.finish(s);
            e.finish(s);
        });
        assert_eq!(out, "[12] one\n[0] hello\n[12] two\n[0] wor\n");
        assert_eq!(err, "[1] oops\n");
    }

    #[test]
    fn untagged_output_is_passed_unchanged() {
        let (out, _) = captured(|s| {
            let mut a = LineBuffer::new(3, StreamKind::Stdout, false);
            a.push(b"x\ny", s);
            a.push(b"z", s);
            a.finish(s);
            a.finish(s);
        });
        assert_eq!(out, "x\nyz");
    }

    #[test]
    fn very_long_lines_are_written_in_pieces() {
        let (out, _) = captured(|s| {
            let mut a = LineBuffer::new(0, StreamKind::Stdout, true);
            a.push(&vec![b'a'; MAX_PENDING_BYTES], s);
            a.push(b"b\n", s);
        });
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), MAX_PENDING_BYTES + 4);
        assert_eq!(lines[1], "[0] b");
    }

    #[test]
    fn output_files_get_each_ranks_streams_untagged() {
        let dir = std::env::temp_dir().join(format!("weft-outfiles-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for copy in [true, false] {
            let files = OutputFiles {
                dir: dir.clone(),
                copy,
            };
            let (out, err) = captured(|s| {
                let mut l = RankLines::with_files(11, true, Some(&files)).unwrap();
                l.push(3, StreamKind::Stdout, b"a\nb", s);
                l.push(10, StreamKind::Stderr, b"e\n", s);
                l.finish_all(s);
            });
            let read = |r: &str, f: &str| std::fs::read_to_string(dir.join(r).join(f)).unwrap();
            assert_eq!(read("rank.03", "stdout"), "a\nb");
            assert_eq!(read("rank.10", "stderr"), "e\n");
            assert_eq!(read("rank.00", "stdout"), "");
            if copy {
                assert_eq!((out.as_str(), err.as_str()), ("[3] a\n[3] b\n", "[10] e\n"));
            } else {
                assert_eq!((out.as_str(), err.as_str()), ("", ""));
            }
        }
        assert_eq!(rank_output_dir(Path::new("d"), 0, 1), Path::new("d/rank.0"));
        assert_eq!(
            rank_output_dir(Path::new("d"), 7, 100),
            Path::new("d/rank.07")
        );
        std::fs::write(dir.join("blocker"), b"").unwrap();
        let bad = OutputFiles {
            dir: dir.join("blocker"),
            copy: true,
        };
        let e = RankLines::with_files(1, false, Some(&bad)).unwrap_err();
        assert!(e.to_string().contains("blocker"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn launcher_lines_go_to_stderr() {
        let (out, err) = captured(|s| s.launcher_line("weft: x"));
        assert_eq!((out.as_str(), err.as_str()), ("", "weft: x\n"));
    }
}
