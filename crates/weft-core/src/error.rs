//! The error type every weft layer returns: a kind that maps onto an MPI error class and a
//! message that names the rank, peer, operation and value at fault.

use std::fmt;

/// What went wrong, coarse enough to map onto `MPI_ERR_*` classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A rank argument outside `0..size` (MPI_ERR_RANK).
    InvalidRank,
    /// A tag argument that is negative and not a wildcard, or above the bound (MPI_ERR_TAG).
    InvalidTag,
    /// A count or length that is negative, mismatched or too large (MPI_ERR_COUNT).
    InvalidCount,
    /// A root argument outside `0..size` or different between ranks (MPI_ERR_ROOT).
    InvalidRoot,
    /// A communicator that was freed or never existed (MPI_ERR_COMM).
    InvalidComm,
    /// A datatype that does not fit the operation (MPI_ERR_TYPE).
    InvalidType,
    /// A reduction operation that does not apply to the datatype (MPI_ERR_OP).
    InvalidOp,
    /// A request handle that is stale or unknown (MPI_ERR_REQUEST).
    InvalidRequest,
    /// Any other invalid argument (MPI_ERR_ARG).
    InvalidArgument,
    /// A receive buffer smaller than the matched message (MPI_ERR_TRUNCATE).
    Truncate,
    /// A peer process died or left the job (MPI_ERR_PROC_FAILED).
    PeerDead,
    /// The job's secret was not proven by a peer (MPI_ERR_OTHER).
    Auth,
    /// Bytes from a peer that do not follow the protocol (MPI_ERR_OTHER).
    Protocol,
    /// An operation did not finish in the time allowed (MPI_ERR_OTHER).
    Timeout,
    /// An operating-system call failed (MPI_ERR_OTHER; MPI_ERR_IO for file operations).
    Io,
    /// A file that does not exist (MPI_ERR_NO_SUCH_FILE).
    FileNotFound,
    /// A file that exists where the open mode excludes one (MPI_ERR_FILE_EXISTS).
    FileExists,
    /// Permission to a file or its directory denied (MPI_ERR_ACCESS).
    FileAccess,
    /// No space left on the device (MPI_ERR_NO_SPACE).
    NoSpace,
    /// A disk quota exceeded (MPI_ERR_QUOTA).
    Quota,
    /// A write to a read-only file or file system (MPI_ERR_READ_ONLY).
    ReadOnly,
    /// A file that is open, or in use by another operation (MPI_ERR_FILE_IN_USE).
    FileInUse,
    /// A file name that is malformed or names no regular file (MPI_ERR_BAD_FILE).
    BadFile,
    /// An access mode that is invalid, or an access the file's mode excludes
    /// (MPI_ERR_AMODE; an access the mode excludes is MPI_ERR_ACCESS or MPI_ERR_READ_ONLY).
    Amode,
    /// Arguments of a collective call that must be the same on every rank differ
    /// (MPI_ERR_NOT_SAME).
    NotSame,
    /// A knob or configuration value is malformed (MPI_ERR_ARG).
    Config,
    /// A request for something this build cannot do (MPI_ERR_UNSUPPORTED_OPERATION).
    Unsupported,
    /// A broken internal invariant (MPI_ERR_INTERN).
    Internal,
    /// A one-sided call outside the synchronisation it needs: an access without an epoch,
    /// an unlock without a lock (MPI_ERR_RMA_SYNC).
    RmaSync,
    /// A one-sided access outside the target's window (MPI_ERR_RMA_RANGE).
    RmaRange,
    /// Memory that cannot be attached to or detached from a dynamic window
    /// (MPI_ERR_RMA_ATTACH).
    RmaAttach,
    /// Processes that cannot share memory asked for a shared window (MPI_ERR_RMA_SHARED).
    RmaShared,
    /// A call the window's flavor does not allow (MPI_ERR_RMA_FLAVOR).
    RmaFlavor,
    /// A lock type that is neither exclusive nor shared (MPI_ERR_LOCKTYPE).
    LockType,
    /// A port name that is malformed, not open here, or whose listener cannot be reached
    /// (MPI_ERR_PORT).
    Port,
    /// A service name that nobody published (MPI_ERR_NAME).
    Name,
    /// A service name that cannot be published or unpublished as asked (MPI_ERR_SERVICE).
    Service,
}

impl ErrorKind {
    /// Short lowercase name used in messages, e.g. `invalid rank`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidRank => "invalid rank",
            ErrorKind::InvalidTag => "invalid tag",
            ErrorKind::InvalidCount => "invalid count",
            ErrorKind::InvalidRoot => "invalid root",
            ErrorKind::InvalidComm => "invalid communicator",
            ErrorKind::InvalidType => "invalid datatype",
            ErrorKind::InvalidOp => "invalid operation",
            ErrorKind::InvalidRequest => "invalid request",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Truncate => "message truncated",
            ErrorKind::PeerDead => "peer died",
            ErrorKind::Auth => "authentication failed",
            ErrorKind::Protocol => "protocol error",
            ErrorKind::Timeout => "timed out",
            ErrorKind::Io => "I/O error",
            ErrorKind::FileNotFound => "no such file",
            ErrorKind::FileExists => "file exists",
            ErrorKind::FileAccess => "file access denied",
            ErrorKind::NoSpace => "no space left",
            ErrorKind::Quota => "quota exceeded",
            ErrorKind::ReadOnly => "read-only file",
            ErrorKind::FileInUse => "file in use",
            ErrorKind::BadFile => "bad file name",
            ErrorKind::Amode => "invalid access mode",
            ErrorKind::NotSame => "arguments differ between ranks",
            ErrorKind::Config => "configuration error",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Internal => "internal error",
            ErrorKind::RmaSync => "one-sided synchronisation error",
            ErrorKind::RmaRange => "one-sided access out of range",
            ErrorKind::RmaAttach => "window attach error",
            ErrorKind::RmaShared => "memory cannot be shared",
            ErrorKind::RmaFlavor => "wrong window flavor",
            ErrorKind::LockType => "invalid lock type",
            ErrorKind::Port => "invalid port",
            ErrorKind::Name => "unknown service name",
            ErrorKind::Service => "service name error",
        }
    }
}

/// An error with its kind and a message naming what was at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

/// Result alias used across weft.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Builds an error of `kind` with `message` (which should name rank, peer, op and values).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// Wraps an operating-system error with what was being done.
    pub fn io(context: impl fmt::Display, err: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, format!("{context}: {err}"))
    }

    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message without the kind prefix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prefixes the message with more context (e.g. the rank that saw it).
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

impl std::error::Error for Error {}

/// Returns early with an error of the given kind and a formatted message.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::Error::new($crate::ErrorKind::$kind, format!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_kind_and_message() {
        let e = Error::new(
            ErrorKind::Truncate,
            "rank 1 recv from 0: message 10 bytes, buffer 4",
        );
        assert_eq!(
            e.to_string(),
            "message truncated: rank 1 recv from 0: message 10 bytes, buffer 4"
        );
        assert_eq!(
            e.context("send").message(),
            "send: rank 1 recv from 0: message 10 bytes, buffer 4"
        );
    }
}
