//! The data path of weft: how bytes move between processes.
//!
//! - [`transport`]: the [`transport::Transport`] trait every transport implements (what its
//!   lanes reach, their limits and capabilities, their costs and where the figures came
//!   from) and the registry of transports.
//! - [`net`]: [`net::NetEndpoint`], what a network transport does for the progress engine
//!   (eager messages, rendezvous the engine matches and then fetches, lost peers).
//! - [`shm`]: the node-wide shared-memory segment, per-peer single-producer rings of
//!   cache-line cells, and single-copy CMA (`process_vm_readv`) for large messages.
//! - [`tcp`]: the transport between nodes: lazily made, key-authenticated, nonblocking TCP
//!   connections driven by epoll from the progress loop, with a fuzzed frame decoder.
//! - [`ucx`]: UCX (`ucp`), loaded at run time with the `ucx` feature.
//! - [`buf`]: raw views of user buffers that stay valid while a nonblocking operation is
//!   in flight (the runtime guarantees the lifetime; this module keeps the `unsafe`).
//!
//! This crate knows nothing of communicators, tags or matching: it moves framed messages
//! with a small fixed header. It depends on `weft-core` (the TCP handshake's proofs and the
//! UCX message token are `weft_core::auth`'s), `libc` and, with the `ucx` feature,
//! `libloading`. `unsafe` in weft's
//! data path lives here, each block with a `// SAFETY:` comment.

pub mod buf;
pub mod knobs;
pub mod net;
pub mod shm;
pub mod tcp;
pub mod transport;
pub mod ucx;
