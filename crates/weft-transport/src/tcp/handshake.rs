//! The messages that open every TCP connection between two ranks, proving on both sides that
//! the peer holds the job's key, with the job secret's proofs of `weft_core::auth` (the
//! bootstrap store's handshake uses the same). Pure: builds and checks fixed-size byte
//! strings, no I/O.
//!
//! 1. The connector sends `HELLO`: magic, its rank, the rank it wants, a fresh nonce.
//! 2. The acceptor answers `CHALLENGE`: its own nonce and its proof (acceptor label, the
//!    ranks as context, the connector's nonce as challenge), proving it holds the key.
//! 3. The connector checks that and sends `PROOF`: its proof (connector label, the ranks,
//!    the acceptor's nonce as challenge). Its frames may follow at once; the acceptor
//!    interprets none of them before the proof checks out.
//!
//! Every message has a fixed size, so nothing an unproven peer sends is parsed beyond it. The
//! labels differ so one side's proof can never be replayed as the other's, and the ranks are
//! inside the proofs so a proof for one pair of ranks is worthless for another.

pub use weft_core::auth::{nonce, NONCE_BYTES};
use weft_core::auth::{prove, verify, PROOF_BYTES as MAC_BYTES};
use weft_core::{Error, ErrorKind, Result};

const MAGIC: &[u8; 8] = b"WEFTTCP1";
/// Bytes of `HELLO`: magic, connector rank, acceptor rank, connector nonce.
pub const HELLO_BYTES: usize = 8 + 4 + 4 + NONCE_BYTES;
/// Bytes of `CHALLENGE`: magic, acceptor nonce, acceptor MAC.
pub const CHALLENGE_BYTES: usize = 8 + NONCE_BYTES + MAC_BYTES;
/// Bytes of `PROOF`: the connector's MAC.
pub const PROOF_BYTES: usize = MAC_BYTES;
/// Shortest key accepted.
pub const MIN_KEY_BYTES: usize = weft_core::auth::MIN_SECRET_BYTES;

const ACCEPTOR_LABEL: &[u8] = b"weft-tcp acceptor";
const CONNECTOR_LABEL: &[u8] = b"weft-tcp connector";

/// The context of a proof: the pair of ranks the connection joins.
fn ranks(from: u32, to: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&from.to_le_bytes());
    b[4..].copy_from_slice(&to.to_le_bytes());
    b
}

/// `HELLO` from rank `from` to rank `to`.
pub fn hello(from: u32, to: u32, nonce_c: &[u8; NONCE_BYTES]) -> [u8; HELLO_BYTES] {
    let mut b = [0u8; HELLO_BYTES];
    b[..8].copy_from_slice(MAGIC);
    b[8..12].copy_from_slice(&from.to_le_bytes());
    b[12..16].copy_from_slice(&to.to_le_bytes());
    b[16..].copy_from_slice(nonce_c);
    b
}

/// Checks a `HELLO` received by rank `me` of a job of `size`; returns the connector's rank
/// and nonce. Nothing in it is trusted yet: the rank is only a claim until `PROOF`.
pub fn parse_hello(b: &[u8; HELLO_BYTES], me: u32, size: u32) -> Result<(u32, [u8; NONCE_BYTES])> {
    if &b[..8] != MAGIC {
        return Err(auth("hello does not start with the weft TCP magic".into()));
    }
    let from = u32::from_le_bytes(b[8..12].try_into().expect("4 bytes"));
    let to = u32::from_le_bytes(b[12..16].try_into().expect("4 bytes"));
    if to != me {
        return Err(auth(format!(
            "hello is addressed to rank {to}, this is rank {me}"
        )));
    }
    if from >= size || from == me {
        return Err(auth(format!(
            "hello claims to come from rank {from} (job of {size} ranks, this is rank {me})"
        )));
    }
    Ok((from, b[16..].try_into().expect("nonce bytes")))
}

/// `CHALLENGE` of the acceptor `to` for the connector `from`.
pub fn challenge(
    key: &[u8],
    from: u32,
    to: u32,
    nonce_c: &[u8; NONCE_BYTES],
    nonce_a: &[u8; NONCE_BYTES],
) -> [u8; CHALLENGE_BYTES] {
    let m = prove(key, ACCEPTOR_LABEL, &ranks(from, to), nonce_c, nonce_a);
    let mut b = [0u8; CHALLENGE_BYTES];
    b[..8].copy_from_slice(MAGIC);
    b[8..8 + NONCE_BYTES].copy_from_slice(nonce_a);
    b[8 + NONCE_BYTES..].copy_from_slice(&m);
    b
}

/// The connector's check of `CHALLENGE`; returns the acceptor's nonce when it proved the key.
pub fn check_challenge(
    key: &[u8],
    from: u32,
    to: u32,
    nonce_c: &[u8; NONCE_BYTES],
    b: &[u8; CHALLENGE_BYTES],
) -> Result<[u8; NONCE_BYTES]> {
    if &b[..8] != MAGIC {
        return Err(auth(format!(
            "rank {to}'s address answered without the weft TCP magic (another program?)"
        )));
    }
    let nonce_a: [u8; NONCE_BYTES] = b[8..8 + NONCE_BYTES].try_into().expect("nonce bytes");
    let context = ranks(from, to);
    if !verify(
        key,
        ACCEPTOR_LABEL,
        &context,
        nonce_c,
        &nonce_a,
        &b[8 + NONCE_BYTES..],
    ) {
        return Err(auth(format!(
            "the process answering for rank {to} does not hold the job key"
        )));
    }
    Ok(nonce_a)
}

/// `PROOF` of the connector `from`.
pub fn proof(
    key: &[u8],
    from: u32,
    to: u32,
    nonce_c: &[u8; NONCE_BYTES],
    nonce_a: &[u8; NONCE_BYTES],
) -> [u8; PROOF_BYTES] {
    prove(key, CONNECTOR_LABEL, &ranks(from, to), nonce_a, nonce_c)
}

/// The acceptor's check of `PROOF`.
pub fn check_proof(
    key: &[u8],
    from: u32,
    to: u32,
    nonce_c: &[u8; NONCE_BYTES],
    nonce_a: &[u8; NONCE_BYTES],
    b: &[u8; PROOF_BYTES],
) -> Result<()> {
    if verify(key, CONNECTOR_LABEL, &ranks(from, to), nonce_a, nonce_c, b) {
        Ok(())
    } else {
        Err(auth(format!(
            "connection claiming rank {from} failed to prove the job key"
        )))
    }
}

fn auth(message: String) -> Error {
    Error::new(ErrorKind::Auth, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_prove_the_key() {
        let key = [7u8; 32];
        let (nc, na) = (nonce().unwrap(), nonce().unwrap());
        let (from, claimed_nonce) = parse_hello(&hello(2, 0, &nc), 0, 3).unwrap();
        assert_eq!(from, 2);
        assert_eq!(claimed_nonce, nc);
        let c = challenge(&key, 2, 0, &nc, &na);
        assert_eq!(check_challenge(&key, 2, 0, &nc, &c).unwrap(), na);
        let p = proof(&key, 2, 0, &nc, &na);
        check_proof(&key, 2, 0, &nc, &na, &p).unwrap();
    }

    #[test]
    fn wire_bytes_are_hmac_sha256_of_label_ranks_and_nonces() {
        // Known answers (Python's hmac over b"weft-tcp acceptor" | le32 2 | le32 0 | nonce_c
        // | nonce_a, and the connector's mirror): the bytes on the wire do not depend on how
        // the proof is computed.
        let (key, nc, na) = ([7u8; 32], [1u8; NONCE_BYTES], [2u8; NONCE_BYTES]);
        let c = challenge(&key, 2, 0, &nc, &na);
        assert_eq!(
            weft_core::auth::encode_hex(&c[8 + NONCE_BYTES..]),
            "fa51d0f8302e9eec5237da3a0af2e2b089933ed64518e6433cd8957c3384e662"
        );
        assert_eq!(
            weft_core::auth::encode_hex(&proof(&key, 2, 0, &nc, &na)),
            "2147024106a5aa0cb26b19e94975f3dff11c160ed24fc14b59173160ae6f5e8e"
        );
    }

    #[test]
    fn wrong_key_ranks_or_reflection_fail() {
        let (key, other) = ([7u8; 32], [8u8; 32]);
        let (nc, na) = (nonce().unwrap(), nonce().unwrap());
        let c = challenge(&other, 2, 0, &nc, &na);
        assert_eq!(
            check_challenge(&key, 2, 0, &nc, &c).unwrap_err().kind(),
            ErrorKind::Auth
        );
        let p = proof(&key, 2, 0, &nc, &na);
        assert!(check_proof(&other, 2, 0, &nc, &na, &p).is_err());
        assert!(check_proof(&key, 1, 0, &nc, &na, &p).is_err());
        // The acceptor's MAC replayed as a proof does not pass.
        let c = challenge(&key, 2, 0, &nc, &na);
        let replay: [u8; PROOF_BYTES] = c[8 + NONCE_BYTES..].try_into().unwrap();
        assert!(check_proof(&key, 2, 0, &nc, &na, &replay).is_err());
        assert!(parse_hello(&hello(2, 1, &nc), 0, 3).is_err());
        assert!(parse_hello(&hello(3, 0, &nc), 0, 3).is_err());
        assert!(parse_hello(&hello(0, 0, &nc), 0, 3).is_err());
        let mut bad = hello(2, 0, &nc);
        bad[0] = b'X';
        assert!(parse_hello(&bad, 0, 3).is_err());
    }
}
