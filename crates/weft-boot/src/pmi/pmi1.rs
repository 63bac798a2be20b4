//! The PMI-1 client: one request line, one answer line (Flux RFC 13; MPICH's Hydra is the
//! reference server, Slurm's `mpi/pmi2` plugin serves it too).
//!
//! Start-up: on `PMI_PORT` with `PMI_ID`, `initack` first (the server then names rank and
//! size); `init` at version 1.1; `get_maxes` for the key and value limits; the job's
//! key-value space from `get_my_kvsname`; rank and size from `PMI_RANK`/`PMI_SIZE` unless
//! `initack` gave them; the node of every rank from the space's `PMI_process_mapping`.

use super::text::{Message, MAX_MESSAGE_BYTES};
use super::{agree, env_uint, mapping, Conn, PmiBoot, Protocol};
use crate::boot::{Backend, JobInfo};
use std::time::{Duration, Instant};
use weft_core::{Error, ErrorKind, Result};

/// A PMI-1 session.
pub struct Pmi1 {
    conn: Conn,
    kvsname: String,
    max_key: usize,
    max_value: usize,
}

impl Pmi1 {
    /// Opens the session named by the environment (`var` looks variables up) and reads the
    /// job's description. `request_timeout` bounds every answer.
    pub fn connect(
        var: &dyn Fn(&str) -> Option<String>,
        request_timeout: Duration,
    ) -> Result<PmiBoot<Pmi1>> {
        let deadline = Instant::now() + request_timeout;
        let conn = match (var("PMI_FD"), var("PMI_PORT")) {
            (Some(fd), _) => Conn::from_fd_var(&fd)?,
            (None, Some(port)) => Conn::from_port_var(&port, deadline)?,
            (None, None) => {
                return Err(Error::new(
                    ErrorKind::Config,
                    "PMI-1: neither PMI_FD nor PMI_PORT is set",
                ))
            }
        };
        Self::start(conn, var, request_timeout)
    }

    /// Runs the start-up exchange on an open connection.
    pub(crate) fn start(
        conn: Conn,
        var: &dyn Fn(&str) -> Option<String>,
        request_timeout: Duration,
    ) -> Result<PmiBoot<Pmi1>> {
        let deadline = Instant::now() + request_timeout;
        let mut p = Pmi1 {
            conn,
            kvsname: String::new(),
            max_key: 64,
            max_value: 256,
        };
        let mut from_server = None;
        if let Some(id) = var("PMI_ID") {
            from_server = Some(p.initack(id.trim(), deadline)?);
        }
        let r = p.call(
            &Message::new("init", &[("pmi_version", "1"), ("pmi_subversion", "1")]),
            "response_to_init",
            deadline,
        )?;
        if r.rc()? != 0 {
            return Err(p.refused("init at version 1.1", &r));
        }
        let r = p.call(&Message::new("get_maxes", &[]), "maxes", deadline)?;
        if r.rc()? != 0 {
            return Err(p.refused("get_maxes", &r));
        }
        // The limits count the terminating NUL of the C API.
        p.max_key = (r.uint("keylen_max")? as usize).saturating_sub(1);
        p.max_value = (r.uint("vallen_max")? as usize).saturating_sub(1);
        if p.max_key < 16 || p.max_value < 16 {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "{}: the server allows keys of {} and values of {} bytes, too short to use",
                    p.conn.what, p.max_key, p.max_value
                ),
            ));
        }
        let r = p.call(&Message::new("get_my_kvsname", &[]), "my_kvsname", deadline)?;
        if r.rc()? != 0 {
            return Err(p.refused("get_my_kvsname", &r));
        }
        p.kvsname = r
            .get("kvsname")
            .filter(|k| !k.is_empty())
            .ok_or_else(|| p.malformed(&r, "kvsname="))?
            .to_owned();
        let (rank, size) = match from_server {
            Some(rs) => rs,
            None => {
                let rank = env_uint(var, "PMI_RANK")?;
                let size = env_uint(var, "PMI_SIZE")?;
                match (rank, size) {
                    (Some(r), Some(s)) => (r, s),
                    _ => {
                        return Err(Error::new(
                            ErrorKind::Config,
                            format!(
                                "PMI-1 on {}: PMI_RANK and PMI_SIZE must be set (the server gives them only with PMI_ID)",
                                p.conn.what
                            ),
                        ))
                    }
                }
            }
        };
        agree(var, "PMI-1", rank, size)?;
        let node_of = match p.kvs_get("PMI_process_mapping", deadline)? {
            Some(m) => mapping::node_of_ranks(&m, size)?,
            None => None,
        };
        let job = JobInfo {
            rank,
            size,
            launcher_job: p.kvsname.clone(),
            node_of,
        }
        .checked("PMI-1")?;
        Ok(PmiBoot::new(p, job, Backend::Pmi1, request_timeout))
    }

    /// `initack`: the server answers `cmd=initack` and then `cmd=set` lines with size, rank
    /// and debug.
    fn initack(&self, id: &str, deadline: Instant) -> Result<(u32, u32)> {
        let r = self.call(
            &Message::new("initack", &[("pmiid", id)]),
            "initack",
            deadline,
        )?;
        if r.rc()? != 0 {
            return Err(self.refused(&format!("initack with PMI_ID={id}"), &r));
        }
        let (mut rank, mut size) = (None, None);
        for _ in 0..3 {
            let m = self.read(deadline, "cmd=set")?;
            if m.cmd() != "set" {
                return Err(self.malformed(&m, "cmd=set"));
            }
            if m.get("size").is_some() {
                size = Some(m.uint("size")?);
            }
            if m.get("rank").is_some() {
                rank = Some(m.uint("rank")?);
            }
        }
        match (rank, size) {
            (Some(r), Some(s)) if r <= u32::MAX as u64 && s <= u32::MAX as u64 => {
                Ok((r as u32, s as u32))
            }
            _ => Err(Error::new(
                ErrorKind::Protocol,
                format!("{}: initack did not give rank and size", self.conn.what),
            )),
        }
    }

    fn read(&self, deadline: Instant, awaiting: &str) -> Result<Message> {
        let line = self.conn.read_line(MAX_MESSAGE_BYTES, deadline, awaiting)?;
        Message::from_v1_line(&line)
            .map_err(|e| e.context(format!("{}: awaiting {awaiting}", self.conn.what)))
    }

    /// Sends `req` and reads the answer, which must be `cmd=<answer>`.
    fn call(&self, req: &Message, answer: &str, deadline: Instant) -> Result<Message> {
        self.conn.write_all(req.to_v1_line().as_bytes(), deadline)?;
        let awaiting = format!("cmd={answer}");
        let r = self.read(deadline, &awaiting)?;
        if r.cmd() != answer {
            return Err(self.malformed(&r, &awaiting));
        }
        Ok(r)
    }

    fn malformed(&self, got: &Message, wanted: &str) -> Error {
        Error::new(
            ErrorKind::Protocol,
            format!(
                "{}: the PMI-1 server answered {:?} where {wanted} was expected",
                self.conn.what,
                super::text::shorten(got.to_v1_line().trim_end())
            ),
        )
    }

    fn refused(&self, what: &str, r: &Message) -> Error {
        Error::new(
            ErrorKind::Protocol,
            format!(
                "{}: the PMI-1 server refused {what}: rc={} {}",
                self.conn.what,
                r.get("rc").unwrap_or("?"),
                r.get("msg").unwrap_or("")
            ),
        )
    }
}

impl Protocol for Pmi1 {
    fn kvs_put(&self, key: &str, value: &str, deadline: Instant) -> Result<()> {
        let r = self.call(
            &Message::new(
                "put",
                &[("kvsname", &self.kvsname), ("key", key), ("value", value)],
            ),
            "put_result",
            deadline,
        )?;
        if r.rc()? != 0 {
            return Err(self.refused(&format!("put of {key:?}"), &r));
        }
        Ok(())
    }

    fn kvs_fence(&self, deadline: Instant) -> Result<()> {
        let r = self.call(&Message::new("barrier_in", &[]), "barrier_out", deadline)?;
        if r.rc()? != 0 {
            return Err(self.refused("the barrier", &r));
        }
        Ok(())
    }

    fn kvs_get(&self, key: &str, deadline: Instant) -> Result<Option<String>> {
        let r = self.call(
            &Message::new("get", &[("kvsname", &self.kvsname), ("key", key)]),
            "get_result",
            deadline,
        )?;
        if r.rc()? != 0 {
            return Ok(None);
        }
        Ok(Some(
            r.get("value")
                .ok_or_else(|| self.malformed(&r, "value="))?
                .to_owned(),
        ))
    }

    fn send_abort(&self, code: i32, _message: &str, deadline: Instant) -> Result<()> {
        // PMI-1 carries no message text (values cannot hold spaces): the caller prints it.
        let line = Message::new("abort", &[("exitcode", &code.to_string())]).to_v1_line();
        self.conn.send_only(line.as_bytes(), deadline)
    }

    fn finish(&self, deadline: Instant) -> Result<()> {
        let r = self.call(&Message::new("finalize", &[]), "finalize_ack", deadline)?;
        if r.rc()? != 0 {
            return Err(self.refused("finalize", &r));
        }
        Ok(())
    }

    fn limits(&self) -> (usize, usize) {
        (self.max_key, self.max_value)
    }

    fn name(&self) -> &'static str {
        "PMI-1"
    }
}
