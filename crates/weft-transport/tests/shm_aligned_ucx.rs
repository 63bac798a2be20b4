//! With libucp loaded into the process, aligned segments and regions still work: UCX's
//! memory hooks (libucm, up to UCX 1.14) interpose `mremap` with four arguments and drop the
//! new address of a fixed move, which left the symmetric heap's region unmapped (a null
//! pointer in shmem_init on every lane). Its own test binary: the hooks are process-wide.
#![cfg(feature = "ucx")]

mod common;

#[test]
fn aligned_segments_survive_libucp_memory_hooks() {
    // Loading libucp runs UCX's global init, which installs its memory hooks.
    match weft_transport::ucx::link::library("libucp.so.0") {
        Ok(_) => {
            common::moves_keep_the_object("ucx");
            common::regions_keep_their_header("ucx");
        }
        Err(why) => eprintln!("skipping: libucp.so.0 does not load here: {why}"),
    }
}
