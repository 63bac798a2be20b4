//! The two text encodings of the PMI wire protocols, and how weft's values travel in them.
//!
//! - PMI-1 (MPICH's "simple" protocol, Flux RFC 13): one message per line, `cmd=NAME` then
//!   space-separated `key=value` attributes, ending in a newline.
//! - PMI-2 (MPICH's PMI-2 wire protocol, as Slurm's `mpi/pmi2` and Hydra serve it): a 6-byte
//!   decimal length field (padded with spaces), then that many bytes of `key=value;` pairs,
//!   the first being `cmd=NAME`; a `;` inside a value is doubled.
//!
//! Values weft stores are arbitrary bytes; both protocols carry only printable text without
//! separators, so [`encode_value`] keeps a small safe set of characters and writes the rest
//! as `%XX`. Pure functions; no I/O.

use weft_core::{Error, ErrorKind, Result};

/// Width of the PMI-2 length field.
pub const PMI2_LENGTH_FIELD: usize = 6;
/// Longest PMI message accepted from a server (both protocols), in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 << 10;

/// One parsed PMI message: its `cmd` and its other attributes, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pairs: Vec<(String, String)>,
}

impl Message {
    /// A message of command `cmd` with `attrs`.
    pub fn new(cmd: &str, attrs: &[(&str, &str)]) -> Message {
        let mut pairs = vec![("cmd".to_owned(), cmd.to_owned())];
        pairs.extend(attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Message { pairs }
    }

    /// The command name (`cmd=`), empty when the message had none.
    pub fn cmd(&self) -> &str {
        self.get("cmd").unwrap_or("")
    }

    /// The value of attribute `key`, if present (the first one when repeated).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The `rc` attribute as a number: 0 when absent (servers may omit it on success).
    pub fn rc(&self) -> Result<i64> {
        match self.get("rc") {
            None => Ok(0),
            Some(t) => t.trim().parse::<i64>().map_err(|_| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("answer {:?} has rc={t:?}, not a number", self.cmd()),
                )
            }),
        }
    }

    /// Attribute `key` as an unsigned integer; a missing or malformed one is a protocol error
    /// naming the message.
    pub fn uint(&self, key: &str) -> Result<u64> {
        let t = self.get(key).ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                format!("answer {:?} lacks {key}=", self.cmd()),
            )
        })?;
        t.trim().parse::<u64>().map_err(|_| {
            Error::new(
                ErrorKind::Protocol,
                format!(
                    "answer {:?} has {key}={t:?}, not a non-negative integer",
                    self.cmd()
                ),
            )
        })
    }

    /// The message as one PMI-1 line (with its newline). Attribute values must not contain
    /// spaces or newlines (weft's are encoded with [`encode_value`]).
    pub fn to_v1_line(&self) -> String {
        let mut s = String::new();
        for (i, (k, v)) in self.pairs.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s.push('\n');
        s
    }

    /// Parses one PMI-1 line (without its newline). Attributes may come in any order and
    /// unknown ones are kept; a word without `=` continues the previous value (servers put
    /// spaces in `msg=` texts). A line that does not start with a `key=` is an error.
    pub fn from_v1_line(line: &str) -> Result<Message> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for word in line.split([' ', '\t']).filter(|w| !w.is_empty()) {
            match word.split_once('=') {
                Some((k, v)) if !k.is_empty() => pairs.push((k.to_owned(), v.to_owned())),
                _ => match pairs.last_mut() {
                    Some((_, v)) => {
                        v.push(' ');
                        v.push_str(word);
                    }
                    None => {
                        return Err(Error::new(
                            ErrorKind::Protocol,
                            format!(
                                "PMI-1 line {:?} does not start with key=value",
                                shorten(line)
                            ),
                        ))
                    }
                },
            }
        }
        if pairs.is_empty() {
            return Err(Error::new(ErrorKind::Protocol, "empty PMI-1 line"));
        }
        Ok(Message { pairs })
    }

    /// The message as one PMI-2 frame: the length field, then `key=value;` pairs.
    pub fn to_v2_frame(&self) -> Result<Vec<u8>> {
        let mut body = String::new();
        for (k, v) in &self.pairs {
            body.push_str(k);
            body.push('=');
            body.push_str(&v.replace(';', ";;"));
            body.push(';');
        }
        let max = 10usize.pow(PMI2_LENGTH_FIELD as u32) - 1;
        if body.len() > max.min(MAX_MESSAGE_BYTES) {
            return Err(Error::new(
                ErrorKind::InvalidCount,
                format!(
                    "PMI-2 command {:?} of {} bytes is longer than the protocol allows",
                    self.cmd(),
                    body.len()
                ),
            ));
        }
        let mut out = format!("{:<width$}", body.len(), width = PMI2_LENGTH_FIELD).into_bytes();
        out.extend_from_slice(body.as_bytes());
        Ok(out)
    }

    /// Parses a PMI-2 length field (6 bytes: digits, padded with spaces on either side).
    pub fn v2_length(field: &[u8]) -> Result<usize> {
        let text = std::str::from_utf8(field).unwrap_or("");
        let n = text.trim().parse::<usize>().map_err(|_| {
            Error::new(
                ErrorKind::Protocol,
                format!(
                    "PMI-2 length field {:?} is not a number",
                    shorten_bytes(field)
                ),
            )
        })?;
        if n > MAX_MESSAGE_BYTES {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("PMI-2 message of {n} bytes exceeds the limit of {MAX_MESSAGE_BYTES}"),
            ));
        }
        Ok(n)
    }

    /// Parses a PMI-2 body (`key=value;...`, `;;` standing for `;` inside a value). Anything
    /// after the last `;` that is not a pair (some clients pad the body) is ignored when blank.
    pub fn from_v2_body(body: &[u8]) -> Result<Message> {
        let text = std::str::from_utf8(body).map_err(|_| {
            Error::new(
                ErrorKind::Protocol,
                format!("PMI-2 message {:?} is not UTF-8", shorten_bytes(body)),
            )
        })?;
        let bad = || {
            Error::new(
                ErrorKind::Protocol,
                format!("PMI-2 message {:?} is not key=value; pairs", shorten(text)),
            )
        };
        let mut pairs = Vec::new();
        let mut rest = text;
        loop {
            if rest
                .trim_matches(|c: char| c.is_whitespace() || c == '\0')
                .is_empty()
            {
                break;
            }
            let (key, after) = rest.split_once('=').ok_or_else(bad)?;
            if key.is_empty() || key.contains(';') {
                return Err(bad());
            }
            let mut value = String::new();
            let mut chars = after.char_indices().peekable();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                if c == ';' {
                    if chars.peek().map(|&(_, d)| d) == Some(';') {
                        chars.next();
                        value.push(';');
                        continue;
                    }
                    end = Some(i + 1);
                    break;
                }
                value.push(c);
            }
            let end = end.ok_or_else(bad)?;
            pairs.push((key.trim().to_owned(), value));
            rest = &after[end..];
        }
        if pairs.is_empty() {
            return Err(bad());
        }
        Ok(Message { pairs })
    }
}

/// Characters a value keeps as they are; everything else travels as `%XX`.
fn safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b':' | b',' | b'/' | b'_' | b'-' | b'+' | b'@')
}

/// Writes `value` with only characters both PMI protocols carry: letters, digits and
/// `.:,/_-+@` as they are, other bytes as `%XX`.
pub fn encode_value(value: &[u8]) -> String {
    let mut s = String::with_capacity(value.len());
    for &b in value {
        if safe(b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// Reverses [`encode_value`]; a value that was not written by it is a protocol error.
pub fn decode_value(text: &str) -> Result<Vec<u8>> {
    let bad = || {
        Error::new(
            ErrorKind::Protocol,
            format!("PMI value {:?} was not written by weft", shorten(text)),
        )
    };
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = text.get(i + 1..i + 3).ok_or_else(bad)?;
                out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
                i += 3;
            }
            c if safe(c) => {
                out.push(c);
                i += 1;
            }
            _ => return Err(bad()),
        }
    }
    Ok(out)
}

/// The first 80 characters of `s`, for error messages about untrusted input.
pub(crate) fn shorten(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_owned(),
    }
}

fn shorten_bytes(b: &[u8]) -> String {
    shorten(&String::from_utf8_lossy(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_lines_round_trip_and_tolerate_order_extras_and_spaces() {
        let m = Message::new(
            "put",
            &[("kvsname", "kvs_1"), ("key", "a"), ("value", "x%20y")],
        );
        let line = m.to_v1_line();
        assert_eq!(line, "cmd=put kvsname=kvs_1 key=a value=x%20y\n");
        assert_eq!(Message::from_v1_line(line.trim_end()).unwrap(), m);
        let r = Message::from_v1_line("cmd=get_result  rc=-1 msg=key not found value=").unwrap();
        assert_eq!(r.cmd(), "get_result");
        assert_eq!(r.rc().unwrap(), -1);
        assert_eq!(r.get("msg"), Some("key not found"));
        assert_eq!(r.get("value"), Some(""));
        let r = Message::from_v1_line("rc=0 cmd=barrier_out").unwrap();
        assert_eq!((r.cmd(), r.rc().unwrap()), ("barrier_out", 0));
        assert_eq!(
            Message::from_v1_line("cmd=maxes").unwrap().rc().unwrap(),
            0,
            "no rc means success"
        );
        for bad in ["", "   ", "hello world", "=x cmd=y"] {
            let e = Message::from_v1_line(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Protocol, "{bad:?}: {e}");
        }
        let e = Message::from_v1_line("cmd=maxes rc=zero")
            .unwrap()
            .rc()
            .unwrap_err();
        assert!(e.message().contains("rc=\"zero\""), "{e}");
        let e = Message::from_v1_line("cmd=maxes")
            .unwrap()
            .uint("vallen_max")
            .unwrap_err();
        assert!(e.message().contains("lacks vallen_max="), "{e}");
    }

    #[test]
    fn v2_frames_round_trip_with_escaped_semicolons() {
        let m = Message::new("kvs-put", &[("key", "k;1"), ("value", "a;;b")]);
        let f = m.to_v2_frame().unwrap();
        let len = Message::v2_length(&f[..PMI2_LENGTH_FIELD]).unwrap();
        assert_eq!(len, f.len() - PMI2_LENGTH_FIELD);
        assert_eq!(
            std::str::from_utf8(&f[PMI2_LENGTH_FIELD..]).unwrap(),
            "cmd=kvs-put;key=k;;1;value=a;;;;b;"
        );
        assert_eq!(Message::from_v2_body(&f[PMI2_LENGTH_FIELD..]).unwrap(), m);
        // Slurm answers like this; trailing blanks and NULs are ignored.
        let r = Message::from_v2_body(b"cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=3;size=4;appnum=-1;debugged=FALSE;pmiverbose=FALSE;  \0").unwrap();
        assert_eq!(r.uint("rank").unwrap(), 3);
        assert_eq!(r.get("debugged"), Some("FALSE"));
        for bad in [
            &b""[..],
            b"cmd",
            b"cmd=x",
            b"=x;",
            b"cmd=a;;",
            b"\xff\xfe=x;",
        ] {
            assert!(Message::from_v2_body(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Message::v2_length(b"42    ").unwrap(), 42);
        assert_eq!(Message::v2_length(b"    42").unwrap(), 42);
        assert!(Message::v2_length(b"abcdef").is_err());
        assert!(Message::v2_length(b"999999").is_err(), "beyond the limit");
    }

    #[test]
    fn values_survive_both_protocols() {
        for v in [
            &b""[..],
            b"node-01.cluster",
            b"10.0.0.1:4000,127.0.0.1:4000",
            b"a b;c=d%e\n\x00\xff",
        ] {
            let e = encode_value(v);
            assert!(!e.contains([' ', ';', '=', '\n']), "{e}");
            assert_eq!(decode_value(&e).unwrap(), v);
        }
        for bad in ["%", "%4", "%zz", "a b", "x=y"] {
            assert_eq!(
                decode_value(bad).unwrap_err().kind(),
                ErrorKind::Protocol,
                "{bad}"
            );
        }
    }
}
