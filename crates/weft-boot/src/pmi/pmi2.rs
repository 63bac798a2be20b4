//! The PMI-2 client: length-prefixed `key=value;` commands (MPICH's PMI-2 wire protocol,
//! as Slurm's `mpi/pmi2` plugin and Hydra serve it).
//!
//! Start-up: the PMI-1 `init` line asking for version 2.0 (a server that answers with
//! another version is reported, and [`crate::select`] may fall back to PMI-1), `fullinit`
//! with `PMI_JOBID`/`PMI_RANK` when set (the server answers rank and size, which must agree
//! with `PMI_RANK`/`PMI_SIZE`), the job id from `job-getid`, the node of every rank from the
//! job attribute `PMI_process_mapping`.

use super::text::{Message, MAX_MESSAGE_BYTES, PMI2_LENGTH_FIELD};
use super::{agree, mapping, Conn, PmiBoot, Protocol};
use crate::boot::{Backend, JobInfo};
use std::time::{Duration, Instant};
use weft_core::{Error, ErrorKind, Result};

/// Longest key and value of PMI-2 (`PMI2_MAX_KEYLEN`, `PMI2_MAX_VALLEN`, without the NUL).
const MAX_KEY: usize = 63;
const MAX_VALUE: usize = 1023;
/// A key no rank puts: its get completes a fence into a barrier (see `kvs_fence`).
const BARRIER_KEY: &str = "weft:barrier";

/// A PMI-2 session.
pub struct Pmi2 {
    conn: Conn,
    jobid: String,
}

/// What came of asking a server for version 2.
pub(crate) enum Offer {
    /// The server speaks PMI-2; here is the session.
    Accepted(Box<PmiBoot<Pmi2>>),
    /// The server answered `init` with another version (it speaks only PMI-1); the
    /// connection is handed back for a PMI-1 session.
    Declined(Conn, String),
}

impl Pmi2 {
    /// Opens the session named by the environment (`PMI_FD`, or `PMI_PORT`). `request_timeout`
    /// bounds every answer. A server that only speaks PMI-1 is an error here.
    pub fn connect(
        var: &dyn Fn(&str) -> Option<String>,
        request_timeout: Duration,
    ) -> Result<PmiBoot<Pmi2>> {
        match Self::offer(Self::open(var, request_timeout)?, var, request_timeout)? {
            Offer::Accepted(b) => Ok(*b),
            Offer::Declined(conn, answer) => Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "{}: the PMI server does not speak PMI-2 (it answered {answer:?}); use WEFT_BOOT=pmi1",
                    conn.what
                ),
            )),
        }
    }

    pub(crate) fn open(var: &dyn Fn(&str) -> Option<String>, timeout: Duration) -> Result<Conn> {
        match (var("PMI_FD"), var("PMI_PORT")) {
            (Some(fd), _) => Conn::from_fd_var(&fd),
            (None, Some(port)) => Conn::from_port_var(&port, Instant::now() + timeout),
            (None, None) => Err(Error::new(
                ErrorKind::Config,
                "PMI: neither PMI_FD nor PMI_PORT is set",
            )),
        }
    }

    /// Asks for version 2.0 on `conn`; on success runs the rest of the start-up.
    pub(crate) fn offer(
        conn: Conn,
        var: &dyn Fn(&str) -> Option<String>,
        request_timeout: Duration,
    ) -> Result<Offer> {
        let deadline = Instant::now() + request_timeout;
        let init = Message::new("init", &[("pmi_version", "2"), ("pmi_subversion", "0")]);
        conn.write_all(init.to_v1_line().as_bytes(), deadline)?;
        let line = conn.read_line(MAX_MESSAGE_BYTES, deadline, "cmd=response_to_init")?;
        let r = Message::from_v1_line(&line)
            .map_err(|e| e.context(format!("{}: awaiting cmd=response_to_init", conn.what)))?;
        if r.cmd() != "response_to_init" {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "{}: the PMI server answered {:?} to init",
                    conn.what,
                    super::text::shorten(&line)
                ),
            ));
        }
        if r.rc()? != 0 || r.get("pmi_version").map(str::trim) != Some("2") {
            return Ok(Offer::Declined(conn, line));
        }
        let p = Pmi2 {
            conn,
            jobid: String::new(),
        };
        p.start(var, request_timeout)
            .map(|b| Offer::Accepted(Box::new(b)))
    }

    fn start(
        mut self,
        var: &dyn Fn(&str) -> Option<String>,
        request_timeout: Duration,
    ) -> Result<PmiBoot<Pmi2>> {
        let deadline = Instant::now() + request_timeout;
        let mut attrs: Vec<(&str, String)> = Vec::new();
        if let Some(j) = var("PMI_JOBID") {
            attrs.push(("pmijobid", j));
        }
        if let Some(r) = var("PMI_RANK").or_else(|| var("PMI_ID")) {
            attrs.push(("pmirank", r));
        }
        attrs.push(("threaded", "FALSE".into()));
        let pairs: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = self.call(
            &Message::new("fullinit", &pairs),
            "fullinit-response",
            deadline,
        )?;
        self.check_rc(&r, "fullinit")?;
        let (rank, size) = (r.uint("rank")?, r.uint("size")?);
        if rank > u32::MAX as u64 || size > u32::MAX as u64 {
            return Err(self.malformed(&r, "a 32-bit rank and size"));
        }
        let (rank, size) = (rank as u32, size as u32);
        agree(var, "PMI-2 fullinit", rank, size)?;
        let r = self.call(
            &Message::new("job-getid", &[]),
            "job-getid-response",
            deadline,
        )?;
        self.check_rc(&r, "job-getid")?;
        self.jobid = r
            .get("jobid")
            .filter(|j| !j.is_empty())
            .ok_or_else(|| self.malformed(&r, "jobid="))?
            .to_owned();
        let r = self.call(
            &Message::new("info-getjobattr", &[("key", "PMI_process_mapping")]),
            "info-getjobattr-response",
            deadline,
        )?;
        self.check_rc(&r, "info-getjobattr")?;
        let node_of = match (r.get("found"), r.get("value")) {
            (Some("TRUE"), Some(v)) => mapping::node_of_ranks(v, size)?,
            _ => None,
        };
        let job = JobInfo {
            rank,
            size,
            launcher_job: self.jobid.clone(),
            node_of,
        }
        .checked("PMI-2")?;
        Ok(PmiBoot::new(self, job, Backend::Pmi2, request_timeout))
    }

    /// Sends `req` and reads the answer, which must be `cmd=<answer>`.
    fn call(&self, req: &Message, answer: &str, deadline: Instant) -> Result<Message> {
        self.conn.write_all(&req.to_v2_frame()?, deadline)?;
        let awaiting = format!("cmd={answer}");
        let mut len = [0u8; PMI2_LENGTH_FIELD];
        self.conn.read_exact(&mut len, deadline, &awaiting)?;
        let n = Message::v2_length(&len)
            .map_err(|e| e.context(format!("{}: awaiting {awaiting}", self.conn.what)))?;
        let mut body = vec![0u8; n];
        self.conn.read_exact(&mut body, deadline, &awaiting)?;
        let r = Message::from_v2_body(&body)
            .map_err(|e| e.context(format!("{}: awaiting {awaiting}", self.conn.what)))?;
        if r.cmd() != answer {
            return Err(self.malformed(&r, &awaiting));
        }
        Ok(r)
    }

    fn check_rc(&self, r: &Message, what: &str) -> Result<()> {
        if r.rc()? != 0 {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "{}: the PMI-2 server refused {what}: rc={} {}",
                    self.conn.what,
                    r.get("rc").unwrap_or("?"),
                    r.get("errmsg").unwrap_or("")
                ),
            ));
        }
        Ok(())
    }

    fn malformed(&self, got: &Message, wanted: &str) -> Error {
        let text = got
            .to_v2_frame()
            .map(|f| String::from_utf8_lossy(&f[PMI2_LENGTH_FIELD..]).into_owned())
            .unwrap_or_default();
        Error::new(
            ErrorKind::Protocol,
            format!(
                "{}: the PMI-2 server answered {:?} where {wanted} was expected",
                self.conn.what,
                super::text::shorten(&text)
            ),
        )
    }
}

impl Protocol for Pmi2 {
    fn kvs_put(&self, key: &str, value: &str, deadline: Instant) -> Result<()> {
        let r = self.call(
            &Message::new("kvs-put", &[("key", key), ("value", value)]),
            "kvs-put-response",
            deadline,
        )?;
        self.check_rc(&r, &format!("kvs-put of {key:?}"))
    }

    fn kvs_fence(&self, deadline: Instant) -> Result<()> {
        let r = self.call(
            &Message::new("kvs-fence", &[]),
            "kvs-fence-response",
            deadline,
        )?;
        self.check_rc(&r, "kvs-fence")?;
        // Slurm answers the fence once every rank entered it; Hydra answers at once and
        // instead holds back a get of a key nobody put until every rank has fenced (MPICH
        // 4's and 5's Hydra alike). A get of such a key after the fence makes it a barrier
        // under both.
        self.kvs_get(BARRIER_KEY, deadline).map(|_| ())
    }

    fn kvs_get(&self, key: &str, deadline: Instant) -> Result<Option<String>> {
        let r = self.call(
            &Message::new(
                "kvs-get",
                &[("jobid", &self.jobid), ("srcid", "-1"), ("key", key)],
            ),
            "kvs-get-response",
            deadline,
        )?;
        // MPICH 5.0's Hydra answers a key nobody put with a bare `rc=1` (no `found`, no
        // `errmsg`), after holding it until every rank fenced as other Hydras do.
        if r.rc()? != 0 && r.get("found").is_none() && r.get("errmsg").is_none() {
            return Ok(None);
        }
        self.check_rc(&r, &format!("kvs-get of {key:?}"))?;
        match r.get("found") {
            Some("TRUE") => Ok(Some(
                r.get("value")
                    .ok_or_else(|| self.malformed(&r, "value="))?
                    .to_owned(),
            )),
            Some("FALSE") => Ok(None),
            _ => Err(self.malformed(&r, "found=TRUE or found=FALSE")),
        }
    }

    fn send_abort(&self, code: i32, message: &str, deadline: Instant) -> Result<()> {
        // The exit code rides in the message: PMI-2's abort has no field for it. Slurm does
        // not undo the escaping of ';', so none is sent.
        let msg = format!("exit code {code}: {message}").replace(';', ",");
        let frame = Message::new("abort", &[("isworld", "TRUE"), ("msg", &msg)]).to_v2_frame()?;
        self.conn.send_only(&frame, deadline)
    }

    fn finish(&self, deadline: Instant) -> Result<()> {
        let r = self.call(
            &Message::new("finalize", &[]),
            "finalize-response",
            deadline,
        )?;
        self.check_rc(&r, "finalize")
    }

    fn limits(&self) -> (usize, usize) {
        (MAX_KEY, MAX_VALUE)
    }

    fn name(&self) -> &'static str {
        "PMI-2"
    }
}
