//! Forwarding ranks' output line by line: each rank's stdout and stderr are cut at newlines
//! and whole lines written at once (optionally prefixed `[rank] `), so lines of different
//! ranks never interleave inside a line. A partial last line is written when its stream ends.
//!
//! No process handling here; depends only on std and the crate's `OutputMode`.

use crate::OutputMode;
use std::io::Write;

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

/// The line buffers of every rank's two streams, indexed by rank.
#[derive(Debug)]
pub struct RankLines {
    bufs: Vec<LineBuffer>,
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
        RankLines { bufs }
    }

    fn index(&self, rank: u32, kind: StreamKind) -> Option<usize> {
        let i = rank as usize * 2 + usize::from(kind == StreamKind::Stderr);
        (i < self.bufs.len()).then_some(i)
    }

    /// Adds bytes `rank` wrote; a rank outside the job is ignored (it cannot be attributed).
    pub fn push(&mut self, rank: u32, kind: StreamKind, data: &[u8], sink: &mut Sink) {
        if let Some(i) = self.index(rank, kind) {
            self.bufs[i].push(data, sink);
        }
    }

    /// The stream ended: writes its partial last line.
    pub fn finish(&mut self, rank: u32, kind: StreamKind, sink: &mut Sink) {
        if let Some(i) = self.index(rank, kind) {
            self.bufs[i].finish(sink);
        }
    }

    /// Writes every partial line left.
    pub fn finish_all(&mut self, sink: &mut Sink) {
        for b in &mut self.bufs {
            b.finish(sink);
        }
    }
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
    fn launcher_lines_go_to_stderr() {
        let (out, err) = captured(|s| s.launcher_line("weft: x"));
        assert_eq!((out.as_str(), err.as_str()), ("", "weft: x\n"));
    }
}
