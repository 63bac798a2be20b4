//! Messages between the launcher and its host agents, and their encoding.
//!
//! They travel as frames of weft-boot's wire format over a connection that has first proven
//! the job secret. Even so, nothing read is trusted: every length and tag is checked and a
//! bad message is a `Protocol` error, never a panic. Pure: no I/O. The job secret is never
//! part of a message (it reaches the agent through the launcher template's stdin).

use weft_core::{Error, ErrorKind, Result};

/// What one rank of a host needs beyond the command shared by all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankStart {
    /// The rank.
    pub rank: u32,
    /// Its `WEFT_*` variables (the agent adds `WEFT_JOB_SECRET`).
    pub vars: Vec<(String, String)>,
    /// Whether it reads the launcher's stdin ([`ToAgent::Input`]); else `/dev/null`.
    pub stdin: bool,
}

/// Launcher to agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToAgent {
    /// Start these ranks.
    Start {
        /// The program as the user wrote it (resolved in the host's own `PATH`).
        program: Vec<u8>,
        /// Its arguments.
        args: Vec<Vec<u8>>,
        /// Environment shared by every rank.
        env: Vec<(String, String)>,
        /// The ranks of this host.
        ranks: Vec<RankStart>,
    },
    /// End every rank now, clean up and say [`FromAgent::Finished`].
    Stop,
    /// Bytes of the launcher's stdin for a rank of this host that reads it; empty: the end
    /// of the input.
    Input { rank: u32, data: Vec<u8> },
}

/// Which output stream a chunk came from.
pub const STDOUT: u8 = 1;
/// See [`STDOUT`].
pub const STDERR: u8 = 2;

/// Agent to launcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FromAgent {
    /// First message: which host this agent serves and for which job.
    Hello {
        /// The host name from the host list.
        host: String,
        /// The job id.
        job_id: String,
    },
    /// A rank runs with this pid.
    Started { rank: u32, pid: u32 },
    /// A rank could not be started; `exit_code` is 126 or 127 like a shell's.
    NotStarted {
        rank: u32,
        exit_code: i32,
        message: String,
    },
    /// Bytes a rank wrote to [`STDOUT`] or [`STDERR`].
    Output {
        rank: u32,
        stream: u8,
        data: Vec<u8>,
    },
    /// A rank ended: `signal` true when `value` is a signal number, else an exit code.
    Exited {
        rank: u32,
        pid: u32,
        signal: bool,
        value: i32,
    },
    /// After [`ToAgent::Stop`]: every rank reaped, output drained, `/dev/shm` cleaned.
    Finished { segments_removed: u32 },
    /// `bytes` more of [`ToAgent::Input`] went into a rank's stdin pipe (or were dropped
    /// after the rank closed it): the launcher's window for that rank moves on.
    InputTaken { rank: u32, bytes: u32 },
}

const T_START: u8 = 1;
const T_STOP: u8 = 2;
const T_INPUT: u8 = 3;
const T_HELLO: u8 = 10;
const T_STARTED: u8 = 11;
const T_NOT_STARTED: u8 = 12;
const T_OUTPUT: u8 = 13;
const T_EXITED: u8 = 14;
const T_FINISHED: u8 = 15;
const T_INPUT_TAKEN: u8 = 16;

/// Most list entries (ranks, arguments, variables) a message may carry.
const MAX_ITEMS: u32 = 1 << 20;

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn pairs(&mut self, v: &[(String, String)]) {
        self.u32(v.len() as u32);
        for (k, x) in v {
            self.bytes(k.as_bytes());
            self.bytes(x.as_bytes());
        }
    }
}

struct Reader<'a> {
    rest: &'a [u8],
}

fn short(what: &str) -> Error {
    Error::new(
        ErrorKind::Protocol,
        format!("agent message: truncated while reading {what}"),
    )
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if self.rest.len() < n {
            return Err(short(what));
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Ok(a)
    }
    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(self.u32(what)? as i32)
    }
    fn bytes(&mut self, what: &str) -> Result<Vec<u8>> {
        let n = self.u32(what)? as usize;
        Ok(self.take(n, what)?.to_vec())
    }
    fn text(&mut self, what: &str) -> Result<String> {
        String::from_utf8(self.bytes(what)?).map_err(|_| {
            Error::new(
                ErrorKind::Protocol,
                format!("agent message: {what} is not UTF-8"),
            )
        })
    }
    fn count(&mut self, what: &str) -> Result<u32> {
        let n = self.u32(what)?;
        // Each entry takes at least 4 bytes, so a count beyond that is a lie.
        if n > MAX_ITEMS || n as usize > self.rest.len() / 4 {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("agent message: {what} count {n} exceeds what the message holds"),
            ));
        }
        Ok(n)
    }
    fn pairs(&mut self, what: &str) -> Result<Vec<(String, String)>> {
        let n = self.count(what)?;
        (0..n)
            .map(|_| Ok((self.text(what)?, self.text(what)?)))
            .collect()
    }
    fn end(self, what: &str) -> Result<()> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "agent message: {} stray bytes after {what}",
                    self.rest.len()
                ),
            ))
        }
    }
}

fn unknown(tag: u8) -> Error {
    Error::new(
        ErrorKind::Protocol,
        format!("agent message: unknown type {tag}"),
    )
}

fn empty() -> Error {
    Error::new(ErrorKind::Protocol, "agent message: empty")
}

impl ToAgent {
    /// The frame body.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        match self {
            ToAgent::Start {
                program,
                args,
                env,
                ranks,
            } => {
                w.u8(T_START);
                w.bytes(program);
                w.u32(args.len() as u32);
                for a in args {
                    w.bytes(a);
                }
                w.pairs(env);
                w.u32(ranks.len() as u32);
                for r in ranks {
                    w.u32(r.rank);
                    w.pairs(&r.vars);
                    w.u8(u8::from(r.stdin));
                }
            }
            ToAgent::Stop => w.u8(T_STOP),
            ToAgent::Input { rank, data } => {
                w.u8(T_INPUT);
                w.u32(*rank);
                w.bytes(data);
            }
        }
        w.0
    }

    /// Parses a frame body.
    pub fn decode(body: &[u8]) -> Result<ToAgent> {
        let mut r = Reader { rest: body };
        let tag = r.u8("type").map_err(|_| empty())?;
        let msg = match tag {
            T_START => {
                let program = r.bytes("program")?;
                let n = r.count("arguments")?;
                let args = (0..n).map(|_| r.bytes("argument")).collect::<Result<_>>()?;
                let env = r.pairs("environment")?;
                let n = r.count("ranks")?;
                let mut ranks = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let rank = r.u32("rank")?;
                    let vars = r.pairs("rank variables")?;
                    let stdin = match r.u8("stdin flag")? {
                        0 => false,
                        1 => true,
                        f => {
                            return Err(Error::new(
                                ErrorKind::Protocol,
                                format!("agent message: stdin flag {f} is neither 0 nor 1"),
                            ))
                        }
                    };
                    ranks.push(RankStart { rank, vars, stdin });
                }
                ToAgent::Start {
                    program,
                    args,
                    env,
                    ranks,
                }
            }
            T_STOP => ToAgent::Stop,
            T_INPUT => ToAgent::Input {
                rank: r.u32("rank")?,
                data: r.bytes("input")?,
            },
            t => return Err(unknown(t)),
        };
        r.end("the message")?;
        Ok(msg)
    }
}

impl FromAgent {
    /// The frame body.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        match self {
            FromAgent::Hello { host, job_id } => {
                w.u8(T_HELLO);
                w.bytes(host.as_bytes());
                w.bytes(job_id.as_bytes());
            }
            FromAgent::Started { rank, pid } => {
                w.u8(T_STARTED);
                w.u32(*rank);
                w.u32(*pid);
            }
            FromAgent::NotStarted {
                rank,
                exit_code,
                message,
            } => {
                w.u8(T_NOT_STARTED);
                w.u32(*rank);
                w.i32(*exit_code);
                w.bytes(message.as_bytes());
            }
            FromAgent::Output { rank, stream, data } => {
                w.u8(T_OUTPUT);
                w.u32(*rank);
                w.u8(*stream);
                w.bytes(data);
            }
            FromAgent::Exited {
                rank,
                pid,
                signal,
                value,
            } => {
                w.u8(T_EXITED);
                w.u32(*rank);
                w.u32(*pid);
                w.u8(u8::from(*signal));
                w.i32(*value);
            }
            FromAgent::Finished { segments_removed } => {
                w.u8(T_FINISHED);
                w.u32(*segments_removed);
            }
            FromAgent::InputTaken { rank, bytes } => {
                w.u8(T_INPUT_TAKEN);
                w.u32(*rank);
                w.u32(*bytes);
            }
        }
        w.0
    }

    /// Parses a frame body.
    pub fn decode(body: &[u8]) -> Result<FromAgent> {
        let mut r = Reader { rest: body };
        let tag = r.u8("type").map_err(|_| empty())?;
        let msg = match tag {
            T_HELLO => FromAgent::Hello {
                host: r.text("host")?,
                job_id: r.text("job id")?,
            },
            T_STARTED => FromAgent::Started {
                rank: r.u32("rank")?,
                pid: r.u32("pid")?,
            },
            T_NOT_STARTED => FromAgent::NotStarted {
                rank: r.u32("rank")?,
                exit_code: r.i32("exit code")?,
                message: r.text("message")?,
            },
            T_OUTPUT => {
                let rank = r.u32("rank")?;
                let stream = r.u8("stream")?;
                if stream != STDOUT && stream != STDERR {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        format!("agent message: output stream {stream} is neither 1 nor 2"),
                    ));
                }
                FromAgent::Output {
                    rank,
                    stream,
                    data: r.bytes("output")?,
                }
            }
            T_EXITED => FromAgent::Exited {
                rank: r.u32("rank")?,
                pid: r.u32("pid")?,
                signal: match r.u8("exit kind")? {
                    0 => false,
                    1 => true,
                    k => {
                        return Err(Error::new(
                            ErrorKind::Protocol,
                            format!("agent message: exit kind {k} is neither 0 nor 1"),
                        ))
                    }
                },
                value: r.i32("exit value")?,
            },
            T_FINISHED => FromAgent::Finished {
                segments_removed: r.u32("segment count")?,
            },
            T_INPUT_TAKEN => FromAgent::InputTaken {
                rank: r.u32("rank")?,
                bytes: r.u32("byte count")?,
            },
            t => return Err(unknown(t)),
        };
        r.end("the message")?;
        Ok(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples_from() -> Vec<FromAgent> {
        vec![
            FromAgent::Hello {
                host: "h1".into(),
                job_id: "abc".into(),
            },
            FromAgent::Started { rank: 3, pid: 99 },
            FromAgent::NotStarted {
                rank: 1,
                exit_code: 127,
                message: "not found".into(),
            },
            FromAgent::Output {
                rank: 2,
                stream: STDERR,
                data: b"x\ny".to_vec(),
            },
            FromAgent::Exited {
                rank: 0,
                pid: 7,
                signal: true,
                value: 9,
            },
            FromAgent::Finished {
                segments_removed: 4,
            },
            FromAgent::InputTaken {
                rank: 5,
                bytes: 65536,
            },
        ]
    }

    #[test]
    fn messages_round_trip() {
        for m in samples_from() {
            assert_eq!(FromAgent::decode(&m.encode()).unwrap(), m);
        }
        let start = ToAgent::Start {
            program: b"/bin/sh".to_vec(),
            args: vec![b"-c".to_vec(), b"exit 3".to_vec()],
            env: vec![("A".into(), "1".into())],
            ranks: vec![RankStart {
                rank: 5,
                vars: vec![("WEFT_RANK".into(), "5".into())],
                stdin: true,
            }],
        };
        assert_eq!(ToAgent::decode(&start.encode()).unwrap(), start);
        let input = ToAgent::Input {
            rank: 5,
            data: b"line\n".to_vec(),
        };
        assert_eq!(ToAgent::decode(&input.encode()).unwrap(), input);
        assert_eq!(
            ToAgent::decode(&ToAgent::Stop.encode()).unwrap(),
            ToAgent::Stop
        );
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error_not_a_panic() {
        let from: Vec<Vec<u8>> = samples_from().iter().map(FromAgent::encode).collect();
        let to = ToAgent::Start {
            program: b"p".to_vec(),
            args: vec![b"a".to_vec()],
            env: vec![("K".into(), "V".into())],
            ranks: vec![RankStart {
                rank: 0,
                vars: vec![("WEFT_RANK".into(), "0".into())],
                stdin: false,
            }],
        }
        .encode();
        for body in &from {
            for cut in 0..body.len() {
                assert!(
                    FromAgent::decode(&body[..cut]).is_err(),
                    "{body:?} cut at {cut}"
                );
            }
        }
        for cut in 0..to.len() {
            assert!(ToAgent::decode(&to[..cut]).is_err(), "cut at {cut}");
        }
        for body in from.iter().chain(std::iter::once(&to)) {
            for i in 0..body.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut b = body.clone();
                    b[i] ^= flip;
                    // Either answer is fine; returning at all (no panic, no huge allocation)
                    // is what is tested.
                    let _ = FromAgent::decode(&b);
                    let _ = ToAgent::decode(&b);
                }
            }
        }
        let e = FromAgent::decode(&[200]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert!(e.message().contains("unknown type 200"), "{e}");
        let e = FromAgent::decode(&[T_STARTED, 0, 0, 0, 1, 0, 0, 0, 2, 9]).unwrap_err();
        assert!(e.message().contains("stray bytes"), "{e}");
        let e = ToAgent::decode(&[T_START, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).unwrap_err();
        assert!(e.message().contains("arguments count"), "{e}");
        assert!(FromAgent::decode(&[])
            .unwrap_err()
            .message()
            .contains("empty"));
    }
}
