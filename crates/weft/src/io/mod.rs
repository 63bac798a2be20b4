//! File I/O (MPI-IO, MPI-4.1 chapter 14) on POSIX files: collective open and close, views,
//! explicit offsets, individual and shared file pointers, independent, collective (with
//! two-phase aggregation) and nonblocking reads and writes, atomic mode. The MPI layer
//! turns handles and datatypes into a [`File`] and byte buffers; everything that decides
//! where bytes go and who moves them is here.
//!
//! * [`File::open`] is collective over a communicator (the file keeps a duplicate for its
//!   own traffic): the access mode must be the same on every rank, the rank that creates
//!   the file does so first, and a failure on any rank fails the open on all of them, with
//!   the kind that names it (no such file, exists, access, ...).
//! * A [`View`] maps the rank's stream of bytes to file ranges; the types are in the file's
//!   representation (the MPI layer converts data for "external32" and registered
//!   representations and passes the file's bytes).
//! * Independent accesses (`indep.rs`) use data sieving for pieces that lie close together
//!   (knob `WEFT_IO_SIEVE_BYTES`, hints `ind_rd_buffer_size`/`ind_wr_buffer_size`).
//! * Collective accesses (`twophase.rs`) exchange extents and use aggregators when the
//!   ranks' ranges interleave (`WEFT_IO_CB`, hints `romio_cb_read`/`romio_cb_write`), with
//!   `WEFT_IO_AGGREGATORS_PER_NODE` aggregators per node (hint `cb_nodes` caps them) and a
//!   collective buffer of `WEFT_IO_CB_BUFFER_BYTES` (hint `cb_buffer_size`).
//! * Nonblocking accesses return an [`IoRequest`]: collective ones are advanced by every
//!   progress call of the engine, independent ones run on the I/O thread.
//! * The shared file pointer lives in a hidden file beside the data file (`shared.rs`).
//!
//! Positions: offsets and file pointers count etypes of the view; internally the pointers
//! are stream bytes (an access cut short by the end of the file moves the individual
//! pointer by the bytes it moved).

mod indep;
pub mod knobs;
mod plan;
mod posix;
mod segs;
mod shared;
mod twophase;
mod view;
pub(crate) mod work;

pub use view::View;
pub use work::{Hook, IoRequest};

use crate::comm::Comm;
use crate::wait::{coll_waited, dup_waited, Wait};
use segs::SegList;
use shared::SharedPointer;
use std::fs::File as OsFile;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use weft_core::knob::KnobValues;
use weft_core::{Error, ErrorKind, Result};

/// How a file is opened (MPI_MODE_*).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenMode {
    pub read: bool,
    pub write: bool,
    pub create: bool,
    pub exclusive: bool,
    pub delete_on_close: bool,
    pub unique_open: bool,
    pub sequential: bool,
    pub append: bool,
}

impl OpenMode {
    /// The mode's flags as bits (for comparing ranks' modes).
    fn bits(&self) -> u64 {
        [
            self.read,
            self.write,
            self.create,
            self.exclusive,
            self.delete_on_close,
            self.unique_open,
            self.sequential,
            self.append,
        ]
        .iter()
        .enumerate()
        .map(|(i, &b)| (b as u64) << i)
        .sum()
    }

    /// Checks the combination (MPI-4.1 §14.2.1): reading or writing, no creation without
    /// writing, no reading and writing in sequential mode.
    pub fn check(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::new(ErrorKind::Amode, m.to_string()));
        if !self.read && !self.write {
            return bad("the access mode allows neither reading nor writing");
        }
        if !self.write && (self.create || self.exclusive) {
            return bad("MPI_MODE_CREATE and MPI_MODE_EXCL need a mode that writes");
        }
        if self.sequential && self.read && self.write {
            return bad("MPI_MODE_SEQUENTIAL cannot be combined with MPI_MODE_RDWR");
        }
        Ok(())
    }
}

/// Whether collective accesses aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CbMode {
    /// When the ranks' file ranges interleave.
    Auto,
    /// Always.
    Enable,
    /// Never.
    Disable,
}

impl CbMode {
    fn name(self) -> &'static str {
        match self {
            CbMode::Auto => "automatic",
            CbMode::Enable => "enable",
            CbMode::Disable => "disable",
        }
    }
}

/// A file's I/O settings: the knobs, overridden by its info hints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub cb_read: CbMode,
    pub cb_write: CbMode,
    /// Bytes of the collective buffer (a window of two-phase I/O).
    pub cb_buffer_bytes: u64,
    /// Aggregators per node.
    pub aggregators_per_node: u32,
    /// Most aggregators in all (hint `cb_nodes`).
    pub cb_nodes: Option<u32>,
    /// Largest span data sieving reads (0: off).
    pub sieve_read_bytes: u64,
    /// Largest span data sieving rewrites (0: off).
    pub sieve_write_bytes: u64,
    /// File domain alignment (hint `striping_unit`; else 4 KiB).
    pub striping_unit: Option<u64>,
}

/// A knob of [`knobs::KNOBS`] (each has a default there, so it always has a value).
fn knob_text(values: &KnobValues, name: &str) -> String {
    values
        .text(name)
        .unwrap_or_else(|| panic!("{name} is declared with a default in io::knobs"))
}

impl Settings {
    /// The knobs' values.
    pub fn from_values(values: &KnobValues) -> Result<Settings> {
        let cb = match knob_text(values, "WEFT_IO_CB").as_str() {
            "enable" => CbMode::Enable,
            "disable" => CbMode::Disable,
            _ => CbMode::Auto,
        };
        let bytes = |name: &str| weft_core::units::parse_bytes(&knob_text(values, name));
        let cb_buffer_bytes = bytes("WEFT_IO_CB_BUFFER_BYTES")?;
        if cb_buffer_bytes == 0 {
            return Err(Error::new(
                ErrorKind::Config,
                "WEFT_IO_CB_BUFFER_BYTES=0: the collective buffer needs at least one byte",
            ));
        }
        let sieve = bytes("WEFT_IO_SIEVE_BYTES")?;
        let per_node = knob_text(values, "WEFT_IO_AGGREGATORS_PER_NODE")
            .parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Config,
                    "WEFT_IO_AGGREGATORS_PER_NODE must be a positive integer",
                )
            })?;
        Ok(Settings {
            cb_read: cb,
            cb_write: cb,
            cb_buffer_bytes,
            aggregators_per_node: per_node,
            cb_nodes: None,
            sieve_read_bytes: sieve,
            sieve_write_bytes: sieve,
            striping_unit: None,
        })
    }

    /// Applies the hints this implementation reads (MPI-4.1 §14.2.8's reserved keys and
    /// ROMIO's): `cb_buffer_size`, `cb_nodes`, `romio_cb_read`/`romio_cb_write`
    /// (`enable`, `disable`, `automatic`), `collective_buffering` (`true`/`false`),
    /// `ind_rd_buffer_size`, `ind_wr_buffer_size`, `romio_ds_read`/`romio_ds_write`
    /// (`disable` turns data sieving off), `striping_unit`. Other keys are kept by the MPI
    /// layer but change nothing; a value that does not parse is ignored, as the standard
    /// allows for hints.
    pub fn apply_hints(&mut self, hints: &[(String, String)]) {
        let num = |v: &str| {
            weft_core::units::parse_bytes(v.trim())
                .ok()
                .filter(|&n| n > 0)
        };
        let mode = |v: &str| match v.trim() {
            "enable" | "true" => Some(CbMode::Enable),
            "disable" | "false" => Some(CbMode::Disable),
            "automatic" | "auto" => Some(CbMode::Auto),
            _ => None,
        };
        for (k, v) in hints {
            match k.as_str() {
                "cb_buffer_size" => self.cb_buffer_bytes = num(v).unwrap_or(self.cb_buffer_bytes),
                "cb_nodes" => {
                    if let Some(n) = num(v) {
                        self.cb_nodes = Some(n.min(u32::MAX as u64) as u32);
                    }
                }
                "romio_cb_read" => self.cb_read = mode(v).unwrap_or(self.cb_read),
                "romio_cb_write" => self.cb_write = mode(v).unwrap_or(self.cb_write),
                "collective_buffering" => {
                    if let Some(m) = mode(v) {
                        let m = if m == CbMode::Enable { CbMode::Auto } else { m };
                        self.cb_read = m;
                        self.cb_write = m;
                    }
                }
                "ind_rd_buffer_size" => {
                    self.sieve_read_bytes = num(v).unwrap_or(self.sieve_read_bytes)
                }
                "ind_wr_buffer_size" => {
                    self.sieve_write_bytes = num(v).unwrap_or(self.sieve_write_bytes)
                }
                "romio_ds_read" if v.trim() == "disable" => self.sieve_read_bytes = 0,
                "romio_ds_write" if v.trim() == "disable" => self.sieve_write_bytes = 0,
                "striping_unit" => self.striping_unit = num(v).or(self.striping_unit),
                _ => {}
            }
        }
    }

    /// The settings as hints (what MPI_File_get_info reports).
    pub fn as_hints(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("cb_buffer_size".into(), self.cb_buffer_bytes.to_string()),
            ("romio_cb_read".into(), self.cb_read.name().into()),
            ("romio_cb_write".into(), self.cb_write.name().into()),
            (
                "ind_rd_buffer_size".into(),
                self.sieve_read_bytes.to_string(),
            ),
            (
                "ind_wr_buffer_size".into(),
                self.sieve_write_bytes.to_string(),
            ),
        ];
        if let Some(n) = self.cb_nodes {
            v.push(("cb_nodes".into(), n.to_string()));
        }
        if let Some(s) = self.striping_unit {
            v.push(("striping_unit".into(), s.to_string()));
        }
        v
    }
}

/// An open file as every access reaches it (shared with the I/O thread).
pub(crate) struct Handle {
    pub(crate) file: OsFile,
    pub(crate) path: PathBuf,
    /// Opened for reading too (a write-only open is read-write when permissions allow, so
    /// data sieving can read what it rewrites).
    pub(crate) readable: bool,
}

/// Where `seek` counts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whence {
    /// From the start of the view.
    Set,
    /// From the current position.
    Current,
    /// From the end of the file.
    End,
}

/// The displacement of [`File::set_view`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disp {
    /// Bytes from the start of the file.
    Bytes(u64),
    /// The shared file pointer's current byte (MPI_DISPLACEMENT_CURRENT, sequential mode).
    Current,
}

/// An open file of a communicator.
pub struct File {
    comm: Comm,
    handle: Arc<Handle>,
    mode: OpenMode,
    view: View,
    datarep: String,
    atomic: bool,
    settings: Settings,
    /// The individual file pointer, in stream bytes.
    fp: u64,
    shared: SharedPointer,
    /// Collective data accesses started (their messages' tags).
    seq: u32,
}

impl std::fmt::Debug for File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "File({}, {:?})", self.handle.path.display(), self.comm)
    }
}

/// Error kinds an open's failure is shared by (index + 1; 0 is success).
const OPEN_KINDS: [ErrorKind; 10] = [
    ErrorKind::Io,
    ErrorKind::FileNotFound,
    ErrorKind::FileExists,
    ErrorKind::FileAccess,
    ErrorKind::NoSpace,
    ErrorKind::Quota,
    ErrorKind::ReadOnly,
    ErrorKind::FileInUse,
    ErrorKind::BadFile,
    ErrorKind::Amode,
];

fn kind_code(r: &Result<OsFile>) -> u64 {
    match r {
        Ok(_) => 0,
        Err(e) => OPEN_KINDS
            .iter()
            .position(|&k| k == e.kind())
            .map_or(1, |i| i as u64 + 1),
    }
}

/// Deletes a file (MPI_File_delete): not collective.
pub fn delete(path: &Path) -> Result<()> {
    std::fs::remove_file(path).map_err(|e| posix::os_error("unlink", path, e))
}

impl File {
    /// Opens `path` on every rank of `comm` (collective). `values` are the knobs' values
    /// (the weft instance's configuration); `hints` the info keys the program gave. The
    /// exchanges are nonblocking collectives waited for by `wait`.
    pub fn open(
        comm: &Comm,
        path: &Path,
        mode: OpenMode,
        hints: &[(String, String)],
        values: &KnobValues,
        wait: Wait<'_>,
    ) -> Result<File> {
        let mut settings = Settings::from_values(values)?;
        settings.apply_hints(hints);
        let me = comm.rank();
        let n = comm.size() as usize;
        // The mode must agree; a rank with a bad mode reports it on every rank.
        let mine = [mode.bits(), mode.check().is_err() as u64];
        let mut all = vec![0u64; 2 * n];
        // SAFETY: each request is waited for (or dropped, which waits) before its buffers go.
        coll_waited(wait, unsafe { comm.iallgather(&mine, &mut all)? })?;
        if let Some(r) = (0..n).find(|&r| all[2 * r + 1] != 0) {
            return Err(mode.check().err().unwrap_or_else(|| {
                Error::new(
                    ErrorKind::Amode,
                    format!("rank {r} gave an invalid access mode"),
                )
            }));
        }
        if let Some(r) = (0..n).find(|&r| all[2 * r] != mine[0]) {
            return Err(Error::new(
                ErrorKind::NotSame,
                format!(
                    "open {}: rank {r} gave access mode {:#x}, rank {me} {:#x}: it must be \
                     the same on every rank",
                    path.display(),
                    all[2 * r],
                    mine[0]
                ),
            ));
        }
        let want_read = mode.read || mode.write;
        let try_open = |create: bool, exclusive: bool| -> (Result<OsFile>, bool) {
            // Write-only files are opened read-write when allowed (data sieving reads).
            let rw = posix::open(path, want_read, mode.write, create, exclusive);
            match rw {
                Err(e) if !mode.read && e.kind() == ErrorKind::FileAccess => (
                    posix::open(path, false, mode.write, create, exclusive),
                    false,
                ),
                r => (r, true),
            }
        };
        // Rank 0 creates the file first; the others open it once it exists.
        let mut first = (Err(Error::new(ErrorKind::Internal, "not opened")), false);
        let mut word = [0u64; 2];
        if me == 0 {
            first = try_open(mode.create, mode.exclusive);
            word[0] = kind_code(&first.0);
            word[1] = (std::process::id() as u64) << 32
                ^ std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
        }
        // SAFETY: as above.
        coll_waited(wait, unsafe { comm.ibcast(&mut word, 0)? })?;
        if word[0] != 0 {
            let kind = OPEN_KINDS
                .get(word[0] as usize - 1)
                .copied()
                .unwrap_or(ErrorKind::Io);
            return Err(match first.0 {
                Err(e) if me == 0 => e,
                _ => Error::new(
                    kind,
                    format!("open {}: rank 0 failed ({})", path.display(), kind.name()),
                ),
            });
        }
        let nonce = word[1];
        if me != 0 {
            // The file exists now: create without exclusion (a file removed in between is
            // made again rather than missed).
            first = try_open(mode.create, false);
        }
        let code = [kind_code(&first.0)];
        let mut codes = vec![0u64; n];
        // SAFETY: as above.
        coll_waited(wait, unsafe { comm.iallgather(&code, &mut codes)? })?;
        if let Some(r) = codes.iter().position(|&c| c != 0) {
            let kind = OPEN_KINDS
                .get(codes[r] as usize - 1)
                .copied()
                .unwrap_or(ErrorKind::Io);
            return Err(match first.0 {
                Err(e) => e,
                Ok(_) => Error::new(
                    kind,
                    format!("open {}: rank {r} failed ({})", path.display(), kind.name()),
                ),
            });
        }
        let (file, readable) = (first.0.expect("checked"), first.1);
        let private = dup_waited(comm, wait)?;
        let local_only = {
            let e = comm.engine.borrow();
            let node_of = e.node_of();
            let n0 = node_of[comm.data.members[0] as usize];
            comm.data.members.iter().all(|&w| node_of[w as usize] == n0)
        };
        let shared = SharedPointer::new(path, nonce ^ comm.data.ctx as u64, local_only);
        let mut f = File {
            comm: private,
            handle: Arc::new(Handle {
                file,
                path: path.to_path_buf(),
                readable,
            }),
            mode,
            view: View::bytes(),
            datarep: "native".into(),
            atomic: false,
            settings,
            fp: 0,
            shared,
            seq: 0,
        };
        if mode.append {
            let size = posix::size(&f.handle.file, &f.handle.path)?;
            f.fp = size;
            if me == 0 {
                f.shared.set(size)?;
            }
            coll_waited(wait, f.comm.ibarrier()?)?;
        }
        Ok(f)
    }

    /// Closes the file on every rank (collective): removes the shared pointer's file and,
    /// with MPI_MODE_DELETE_ON_CLOSE, the file. Data written is visible to later opens (the
    /// kernel's page cache); [`File::sync`] forces it to the storage device. The barriers
    /// are nonblocking ones waited for by `wait`.
    pub fn close(mut self, wait: Wait<'_>) -> Result<()> {
        coll_waited(wait, self.comm.ibarrier()?)?;
        if self.comm.rank() == 0 {
            self.shared.remove();
            if self.mode.delete_on_close {
                delete(&self.handle.path)?;
            }
        } else {
            self.shared.close();
        }
        // The others must not reopen a deleted file's name before it is gone.
        coll_waited(wait, self.comm.ibarrier()?)?;
        self.comm.free()
    }

    /// The file's communicator (a private duplicate of the one it was opened on).
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// The path it was opened with.
    pub fn path(&self) -> &Path {
        &self.handle.path
    }

    /// The access mode.
    pub fn mode(&self) -> OpenMode {
        self.mode
    }

    /// Its settings (knobs and hints).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Applies more hints (MPI_File_set_info, MPI_File_set_view's info). Collective in MPI;
    /// nothing is exchanged: every rank applies its own (the standard lets hints differ).
    pub fn apply_hints(&mut self, hints: &[(String, String)]) {
        self.settings.apply_hints(hints);
    }

    /// The file's size in bytes.
    pub fn size(&self) -> Result<u64> {
        posix::size(&self.handle.file, &self.handle.path)
    }

    fn same_everywhere(&self, what: &str, words: &[u64], wait: Wait<'_>) -> Result<()> {
        let n = self.comm.size() as usize;
        let mut all = vec![0u64; words.len() * n];
        // SAFETY: the request is waited for (or dropped, which waits) before the buffers go.
        coll_waited(wait, unsafe { self.comm.iallgather(words, &mut all)? })?;
        for r in 0..n {
            if all[r * words.len()..(r + 1) * words.len()] != *words {
                return Err(Error::new(
                    ErrorKind::NotSame,
                    format!(
                        "{what} on rank {}: rank {r} passed other arguments; they must be the \
                         same on every rank",
                        self.comm.rank()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn writable(&self, what: &str) -> Result<()> {
        if !self.mode.write {
            return Err(Error::new(
                ErrorKind::ReadOnly,
                format!(
                    "{what}: {} was opened read-only",
                    self.handle.path.display()
                ),
            ));
        }
        Ok(())
    }

    fn readable(&self, what: &str) -> Result<()> {
        if !self.mode.read {
            return Err(Error::new(
                ErrorKind::FileAccess,
                format!(
                    "{what}: {} was opened write-only",
                    self.handle.path.display()
                ),
            ));
        }
        Ok(())
    }

    fn not_sequential(&self, what: &str) -> Result<()> {
        if self.mode.sequential {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{what}: {} was opened with MPI_MODE_SEQUENTIAL, which allows only the \
                     shared file pointer",
                    self.handle.path.display()
                ),
            ));
        }
        Ok(())
    }

    /// Truncates or extends the file to `bytes` (collective, the same value on every rank).
    /// Its exchanges (here and in the other collective calls that take a [`Wait`]) are
    /// nonblocking collectives waited for by `wait`.
    pub fn set_size(&mut self, bytes: u64, wait: Wait<'_>) -> Result<()> {
        self.writable("set_size")?;
        self.same_everywhere("set_size", &[bytes], &mut *wait)?;
        let r = if self.comm.rank() == 0 {
            self.handle
                .file
                .set_len(bytes)
                .map_err(|e| posix::os_error("ftruncate", &self.handle.path, e))
        } else {
            Ok(())
        };
        self.agree(r, wait)
    }

    /// Reserves storage for the first `bytes` (collective); the file grows to `bytes` if
    /// shorter.
    pub fn preallocate(&mut self, bytes: u64, wait: Wait<'_>) -> Result<()> {
        self.writable("preallocate")?;
        self.same_everywhere("preallocate", &[bytes], &mut *wait)?;
        let r = if self.comm.rank() == 0 {
            posix::preallocate(&self.handle.file, &self.handle.path, bytes)
        } else {
            Ok(())
        };
        self.agree(r, wait)
    }

    /// Shares rank 0's outcome `r` of a collective's one-rank step with every rank.
    fn agree(&self, r: Result<()>, wait: Wait<'_>) -> Result<()> {
        let mut w = [match &r {
            Ok(()) => 0u64,
            Err(e) => OPEN_KINDS
                .iter()
                .position(|&k| k == e.kind())
                .map_or(1, |i| i as u64 + 1),
        }];
        // SAFETY: the request is waited for (or dropped, which waits) before the buffer goes.
        coll_waited(wait, unsafe { self.comm.ibcast(&mut w, 0)? })?;
        r?;
        if w[0] != 0 {
            let kind = OPEN_KINDS
                .get(w[0] as usize - 1)
                .copied()
                .unwrap_or(ErrorKind::Io);
            return Err(Error::new(
                kind,
                format!(
                    "{}: rank 0 failed ({})",
                    self.handle.path.display(),
                    kind.name()
                ),
            ));
        }
        Ok(())
    }

    /// Writes this rank's data through to the storage device, then waits for every rank
    /// (collective, MPI_File_sync).
    pub fn sync(&mut self, wait: Wait<'_>) -> Result<()> {
        let r = if self.mode.write {
            self.handle
                .file
                .sync_all()
                .map_err(|e| posix::os_error("fsync", &self.handle.path, e))
        } else {
            Ok(())
        };
        coll_waited(wait, self.comm.ibarrier()?)?;
        r
    }

    /// Sets the view (collective): the etype's size and the representation's name must
    /// be the same on every rank; both file pointers go back to 0.
    pub fn set_view(
        &mut self,
        disp: Disp,
        etype: crate::dtype::TypeMap,
        filetype: crate::dtype::TypeMap,
        datarep: &str,
        wait: Wait<'_>,
    ) -> Result<()> {
        let disp = match disp {
            Disp::Bytes(b) => b,
            Disp::Current => {
                if !self.mode.sequential {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        "set_view: MPI_DISPLACEMENT_CURRENT needs a file opened with \
                         MPI_MODE_SEQUENTIAL",
                    ));
                }
                self.shared.get()?
            }
        };
        let view = View::new(disp, etype, filetype, !self.mode.write)?;
        let rep_hash = datarep.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        self.same_everywhere("set_view", &[view.etype_bytes(), rep_hash], &mut *wait)?;
        self.view = view;
        self.datarep = datarep.to_string();
        self.fp = 0;
        if self.comm.rank() == 0 {
            self.shared.set(0)?;
        }
        coll_waited(wait, self.comm.ibarrier()?)
    }

    /// The view.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The data representation's name given with the view.
    pub fn datarep(&self) -> &str {
        &self.datarep
    }

    /// Sets atomic mode (collective, the same on every rank).
    pub fn set_atomicity(&mut self, on: bool, wait: Wait<'_>) -> Result<()> {
        self.same_everywhere("set_atomicity", &[on as u64], wait)?;
        self.atomic = on;
        Ok(())
    }

    /// Whether the file is in atomic mode.
    pub fn atomicity(&self) -> bool {
        self.atomic
    }

    fn etype_bytes(&self) -> u64 {
        self.view.etype_bytes()
    }

    fn stream_pos(&self, offset: u64, what: &str) -> Result<u64> {
        offset.checked_mul(self.etype_bytes()).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("{what}: offset {offset} etypes is beyond the file's range"),
            )
        })
    }

    /// The absolute byte of view offset `offset` (MPI_File_get_byte_offset).
    pub fn byte_offset(&self, offset: u64) -> Result<u64> {
        self.not_sequential("get_byte_offset")?;
        self.view
            .byte_offset(self.stream_pos(offset, "get_byte_offset")?)
    }

    /// The individual file pointer, in etypes.
    pub fn position(&self) -> Result<u64> {
        self.not_sequential("get_position")?;
        Ok(self.fp / self.etype_bytes())
    }

    /// Where `seek(offset, whence)` lands, in stream bytes, from the pointer at `current`.
    fn target(&self, current: u64, offset: i64, whence: Whence) -> Result<u64> {
        let e = self.etype_bytes() as i128;
        let base = match whence {
            Whence::Set => 0,
            Whence::Current => (current as i128 / e) * e,
            Whence::End => (self.view.stream_bytes_below(self.size()?) as i128 / e) * e,
        };
        let t = base + offset as i128 * e;
        if t < 0 || t > i64::MAX as i128 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "seek to offset {offset} etypes from {whence:?} lands at etype {} of the \
                     view: before its start or beyond range",
                    t / e
                ),
            ));
        }
        Ok(t as u64)
    }

    /// Moves the individual file pointer (MPI_File_seek).
    pub fn seek(&mut self, offset: i64, whence: Whence) -> Result<()> {
        self.not_sequential("seek")?;
        self.fp = self.target(self.fp, offset, whence)?;
        Ok(())
    }

    /// The shared file pointer, in etypes.
    pub fn position_shared(&mut self) -> Result<u64> {
        Ok(self.shared.get()? / self.etype_bytes())
    }

    /// Moves the shared file pointer (collective, the same arguments on every rank).
    pub fn seek_shared(&mut self, offset: i64, whence: Whence, wait: Wait<'_>) -> Result<()> {
        let w = match whence {
            Whence::Set => 0,
            Whence::Current => 1,
            Whence::End => 2,
        };
        self.same_everywhere("seek_shared", &[offset as u64, w], &mut *wait)?;
        let r = if self.comm.rank() == 0 {
            self.shared
                .get()
                .and_then(|cur| self.target(cur, offset, whence))
                .and_then(|t| self.shared.set(t).map(|_| ()))
        } else {
            Ok(())
        };
        self.agree(r, wait)
    }

    fn access(&self, write: bool) -> indep::Access<'_> {
        indep::Access {
            file: &self.handle.file,
            path: &self.handle.path,
            sieve_bytes: match (write, self.handle.readable) {
                (true, true) => self.settings.sieve_write_bytes,
                (true, false) => 0,
                (false, _) => self.settings.sieve_read_bytes,
            },
            atomic: self.atomic,
        }
    }

    fn segs(&self, pos: u64, len: usize) -> Result<SegList> {
        self.view.segs(pos, len as u64)
    }

    /// Reads `buf.len()` stream bytes at view offset `offset` (etypes); the bytes read
    /// (fewer at the end of the file).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<u64> {
        self.readable("read_at")?;
        self.not_sequential("read_at")?;
        let l = self.segs(self.stream_pos(offset, "read_at")?, buf.len())?;
        indep::read(self.access(false), &l, buf)
    }

    /// Writes `buf` at view offset `offset` (etypes); the bytes written.
    pub fn write_at(&self, offset: u64, buf: &[u8]) -> Result<u64> {
        self.writable("write_at")?;
        self.not_sequential("write_at")?;
        let l = self.segs(self.stream_pos(offset, "write_at")?, buf.len())?;
        indep::write(self.access(true), &l, buf)?;
        Ok(buf.len() as u64)
    }

    /// Reads at the individual file pointer and moves it past the bytes read.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<u64> {
        self.readable("read")?;
        self.not_sequential("read")?;
        let l = self.segs(self.fp, buf.len())?;
        let n = indep::read(self.access(false), &l, buf)?;
        self.fp += n;
        Ok(n)
    }

    /// Writes at the individual file pointer and moves it past them.
    pub fn write(&mut self, buf: &[u8]) -> Result<u64> {
        self.writable("write")?;
        self.not_sequential("write")?;
        let l = self.segs(self.fp, buf.len())?;
        indep::write(self.access(true), &l, buf)?;
        self.fp += buf.len() as u64;
        Ok(buf.len() as u64)
    }

    /// Reads at the shared file pointer, which moves past the bytes asked for.
    pub fn read_shared(&mut self, buf: &mut [u8]) -> Result<u64> {
        self.readable("read_shared")?;
        let pos = self.shared.fetch_add(buf.len() as u64)?;
        let l = self.segs(pos, buf.len())?;
        indep::read(self.access(false), &l, buf)
    }

    /// Writes at the shared file pointer, which moves past them.
    pub fn write_shared(&mut self, buf: &[u8]) -> Result<u64> {
        self.writable("write_shared")?;
        let pos = self.shared.fetch_add(buf.len() as u64)?;
        let l = self.segs(pos, buf.len())?;
        indep::write(self.access(true), &l, buf)?;
        Ok(buf.len() as u64)
    }

    /// Starts a collective access of stream bytes `pos..` (`len` of them at `data`).
    ///
    /// # Safety
    /// `data` is valid for `len` bytes (writable for a read) until the request finishes.
    unsafe fn start_collective<'a>(
        &mut self,
        what: &'static str,
        write: bool,
        pos: u64,
        data: *mut u8,
        len: usize,
    ) -> Result<IoRequest<'a>> {
        let list = self.segs(pos, len)?;
        self.seq = self.seq.wrapping_add(1);
        let tag = (self.seq & 0x3fff_ffff) as i32;
        let mut settings = self.settings.clone();
        if write && !self.handle.readable {
            // Holes cannot be read back: write each run.
            settings.sieve_write_bytes = 0;
        }
        let engine = self.comm.engine.clone();
        let work = {
            let e = engine.borrow();
            twophase::TwoPhase::new(
                twophase::Start {
                    what,
                    write,
                    file: self.handle.clone(),
                    settings,
                    atomic: self.atomic,
                    comm: &self.comm,
                    tag,
                    list,
                    data,
                    len,
                },
                &e,
            )
        };
        Ok(IoRequest::engine(&engine, Box::new(work)))
    }

    /// Starts a collective read of `buf.len()` bytes at view offset `offset` (every rank
    /// of the file calls it, in the same order as its other collective accesses).
    ///
    /// # Safety
    /// The request must be waited for or dropped, never leaked (`std::mem::forget`): the
    /// engine writes into `buf` until it finishes.
    pub unsafe fn iread_at_all<'a>(
        &mut self,
        offset: u64,
        buf: &'a mut [u8],
    ) -> Result<IoRequest<'a>> {
        self.readable("read_at_all")?;
        self.not_sequential("read_at_all")?;
        let pos = self.stream_pos(offset, "read_at_all")?;
        // SAFETY: `buf` is borrowed for the request's life.
        unsafe { self.start_collective("read_at_all", false, pos, buf.as_mut_ptr(), buf.len()) }
    }

    /// Starts a collective write of `buf` at view offset `offset`.
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iwrite_at_all<'a>(
        &mut self,
        offset: u64,
        buf: &'a [u8],
    ) -> Result<IoRequest<'a>> {
        self.writable("write_at_all")?;
        self.not_sequential("write_at_all")?;
        let pos = self.stream_pos(offset, "write_at_all")?;
        // SAFETY: `buf` is borrowed for the request's life and only read.
        unsafe {
            self.start_collective(
                "write_at_all",
                true,
                pos,
                buf.as_ptr() as *mut u8,
                buf.len(),
            )
        }
    }

    /// Starts a collective read at the individual file pointer, which moves past the bytes
    /// asked for at once.
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iread_all<'a>(&mut self, buf: &'a mut [u8]) -> Result<IoRequest<'a>> {
        self.readable("read_all")?;
        self.not_sequential("read_all")?;
        let pos = self.fp;
        self.fp += buf.len() as u64;
        // SAFETY: as above.
        unsafe { self.start_collective("read_all", false, pos, buf.as_mut_ptr(), buf.len()) }
    }

    /// Starts a collective write at the individual file pointer, which moves past it.
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iwrite_all<'a>(&mut self, buf: &'a [u8]) -> Result<IoRequest<'a>> {
        self.writable("write_all")?;
        self.not_sequential("write_all")?;
        let pos = self.fp;
        self.fp += buf.len() as u64;
        // SAFETY: as above.
        unsafe { self.start_collective("write_all", true, pos, buf.as_ptr() as *mut u8, buf.len()) }
    }

    /// Collective read at view offset `offset`; the bytes read.
    pub fn read_at_all(&mut self, offset: u64, buf: &mut [u8]) -> Result<u64> {
        // SAFETY: the request is waited for before `buf`'s borrow ends.
        unsafe { self.iread_at_all(offset, buf)? }.wait()
    }

    /// Collective write at view offset `offset`.
    pub fn write_at_all(&mut self, offset: u64, buf: &[u8]) -> Result<u64> {
        // SAFETY: as above.
        unsafe { self.iwrite_at_all(offset, buf)? }.wait()
    }

    /// Moves the individual file pointer back by `bytes` that a read started by
    /// [`File::iread_all`] asked for and did not get (the end of the file cut it short), as
    /// [`File::read_all`] does.
    pub fn unread(&mut self, bytes: u64) {
        self.fp = self.fp.saturating_sub(bytes);
    }

    /// Collective read at the individual file pointer; it moves past the bytes read.
    pub fn read_all(&mut self, buf: &mut [u8]) -> Result<u64> {
        let start = self.fp;
        // SAFETY: as above.
        let r = unsafe { self.iread_all(buf)? }.wait();
        // A read cut short by the end of the file moves the pointer by what it read.
        self.fp = start + *r.as_ref().unwrap_or(&0);
        r
    }

    /// Collective write at the individual file pointer.
    pub fn write_all(&mut self, buf: &[u8]) -> Result<u64> {
        // SAFETY: as above.
        unsafe { self.iwrite_all(buf)? }.wait()
    }

    /// The start of this rank's part of an ordered access of `len` bytes: the ranks' parts
    /// follow each other in rank order from the shared file pointer, which moves past all
    /// of them (collective).
    fn ordered_start(&mut self, len: usize, wait: Wait<'_>) -> Result<u64> {
        let n = self.comm.size() as usize;
        let mut sizes = vec![0u64; n];
        let mine = [len as u64];
        // SAFETY: each request is waited for (or dropped, which waits) before its buffers go.
        coll_waited(&mut *wait, unsafe {
            self.comm.iallgather(&mine, &mut sizes)?
        })?;
        let total: u64 = sizes.iter().sum();
        let before: u64 = sizes[..self.comm.rank() as usize].iter().sum();
        let mut base = [0u64, 0];
        if self.comm.rank() == 0 {
            match self.shared.fetch_add(total) {
                Ok(b) => base[0] = b,
                Err(_) => base[1] = 1,
            }
        }
        // SAFETY: as above.
        coll_waited(wait, unsafe { self.comm.ibcast(&mut base, 0)? })?;
        if base[1] != 0 {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "ordered access to {}: rank 0 could not move the shared file pointer",
                    self.handle.path.display()
                ),
            ));
        }
        Ok(base[0] + before)
    }

    /// Starts a collective read in rank order at the shared file pointer (the metadata step
    /// waits by `wait`; the data moves in the background).
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iread_ordered<'a>(
        &mut self,
        buf: &'a mut [u8],
        wait: Wait<'_>,
    ) -> Result<IoRequest<'a>> {
        self.readable("read_ordered")?;
        let pos = self.ordered_start(buf.len(), wait)?;
        // SAFETY: as above.
        unsafe { self.start_collective("read_ordered", false, pos, buf.as_mut_ptr(), buf.len()) }
    }

    /// Starts a collective write in rank order at the shared file pointer.
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iwrite_ordered<'a>(
        &mut self,
        buf: &'a [u8],
        wait: Wait<'_>,
    ) -> Result<IoRequest<'a>> {
        self.writable("write_ordered")?;
        let pos = self.ordered_start(buf.len(), wait)?;
        // SAFETY: as above.
        unsafe {
            self.start_collective(
                "write_ordered",
                true,
                pos,
                buf.as_ptr() as *mut u8,
                buf.len(),
            )
        }
    }

    /// Collective read in rank order at the shared file pointer.
    pub fn read_ordered(&mut self, buf: &mut [u8], wait: Wait<'_>) -> Result<u64> {
        // SAFETY: waited for at once.
        unsafe { self.iread_ordered(buf, wait)? }.wait()
    }

    /// Collective write in rank order at the shared file pointer.
    pub fn write_ordered(&mut self, buf: &[u8], wait: Wait<'_>) -> Result<u64> {
        // SAFETY: waited for at once.
        unsafe { self.iwrite_ordered(buf, wait)? }.wait()
    }

    /// Starts an independent access of stream bytes `pos..` on the I/O thread.
    ///
    /// # Safety
    /// `data` is valid for `len` bytes (writable for a read) until the request finishes.
    unsafe fn start_independent<'a>(
        &self,
        write: bool,
        pos: u64,
        data: *mut u8,
        len: usize,
    ) -> Result<IoRequest<'a>> {
        let list = self.segs(pos, len)?;
        let handle = self.handle.clone();
        let acc = self.access(write);
        let (sieve, atomic) = (acc.sieve_bytes, acc.atomic);
        struct Ptr(*mut u8);
        // SAFETY: the request borrows the buffer until the job is done; only the I/O
        // thread touches it meanwhile.
        unsafe impl Send for Ptr {}
        let p = Ptr(data);
        let task = Box::new(move || {
            let p = p;
            let acc = indep::Access {
                file: &handle.file,
                path: &handle.path,
                sieve_bytes: sieve,
                atomic,
            };
            if len == 0 {
                return Ok(0);
            }
            if write {
                // SAFETY: see `Ptr`: `len` readable bytes for the job's life.
                let b = unsafe { std::slice::from_raw_parts(p.0, len) };
                indep::write(acc, &list, b).map(|_| len as u64)
            } else {
                // SAFETY: see `Ptr`: `len` writable bytes, only this job writes them.
                let b = unsafe { std::slice::from_raw_parts_mut(p.0, len) };
                indep::read(acc, &list, b)
            }
        });
        Ok(IoRequest::thread(&self.comm.engine, task))
    }

    /// Starts an independent read at view offset `offset` on the I/O thread.
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iread_at<'a>(&self, offset: u64, buf: &'a mut [u8]) -> Result<IoRequest<'a>> {
        self.readable("iread_at")?;
        self.not_sequential("iread_at")?;
        let pos = self.stream_pos(offset, "iread_at")?;
        // SAFETY: as above.
        unsafe { self.start_independent(false, pos, buf.as_mut_ptr(), buf.len()) }
    }

    /// Starts an independent write at view offset `offset` on the I/O thread.
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iwrite_at<'a>(&self, offset: u64, buf: &'a [u8]) -> Result<IoRequest<'a>> {
        self.writable("iwrite_at")?;
        self.not_sequential("iwrite_at")?;
        let pos = self.stream_pos(offset, "iwrite_at")?;
        // SAFETY: as above; only read.
        unsafe { self.start_independent(true, pos, buf.as_ptr() as *mut u8, buf.len()) }
    }

    /// Starts an independent read at the individual file pointer, which moves past the
    /// bytes asked for at once.
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iread<'a>(&mut self, buf: &'a mut [u8]) -> Result<IoRequest<'a>> {
        self.readable("iread")?;
        self.not_sequential("iread")?;
        let pos = self.fp;
        self.fp += buf.len() as u64;
        // SAFETY: as above.
        unsafe { self.start_independent(false, pos, buf.as_mut_ptr(), buf.len()) }
    }

    /// Starts an independent write at the individual file pointer.
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iwrite<'a>(&mut self, buf: &'a [u8]) -> Result<IoRequest<'a>> {
        self.writable("iwrite")?;
        self.not_sequential("iwrite")?;
        let pos = self.fp;
        self.fp += buf.len() as u64;
        // SAFETY: as above.
        unsafe { self.start_independent(true, pos, buf.as_ptr() as *mut u8, buf.len()) }
    }

    /// Starts an independent read at the shared file pointer.
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iread_shared<'a>(&mut self, buf: &'a mut [u8]) -> Result<IoRequest<'a>> {
        self.readable("iread_shared")?;
        let pos = self.shared.fetch_add(buf.len() as u64)?;
        // SAFETY: as above.
        unsafe { self.start_independent(false, pos, buf.as_mut_ptr(), buf.len()) }
    }

    /// Starts an independent write at the shared file pointer.
    ///
    /// # Safety
    /// As for [`File::iread_at_all`].
    pub unsafe fn iwrite_shared<'a>(&mut self, buf: &'a [u8]) -> Result<IoRequest<'a>> {
        self.writable("iwrite_shared")?;
        let pos = self.shared.fetch_add(buf.len() as u64)?;
        // SAFETY: as above.
        unsafe { self.start_independent(true, pos, buf.as_ptr() as *mut u8, buf.len()) }
    }
}
