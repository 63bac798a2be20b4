//! The job secret and the proofs of it that open every authenticated connection of a job:
//! the bootstrap store's (weft-boot), the TCP lanes' and the one-sided service's
//! (weft-transport's TCP handshake). One module for what they share: random secrets and
//! nonces, the secret's hex form, and the HMAC-SHA256 proof each side of a handshake gives.
//!
//! A proof answers a challenge: the prover computes HMAC-SHA256(secret, label | context |
//! challenge | its own nonce), where the challenge is the verifier's fresh nonce, the label
//! names the prover's role (so one side's proof can never be replayed as the other's) and
//! the context binds what the connection is for (the TCP handshake's pair of ranks; empty
//! for the bootstrap store). The secret never crosses a socket. Proofs are checked in
//! constant time.

use crate::{Error, ErrorKind, Result};
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of a secret made by [`new_secret`].
pub const SECRET_BYTES: usize = 32;
/// Shortest secret accepted, in bytes: shorter ones are too easy to guess.
pub const MIN_SECRET_BYTES: usize = 16;
/// Bytes of a nonce.
pub const NONCE_BYTES: usize = 32;
/// Bytes of a proof (an HMAC-SHA256).
pub const PROOF_BYTES: usize = 32;

/// A fresh random value that a handshake's side contributes.
pub type Nonce = [u8; NONCE_BYTES];
/// One side's proof that it holds the secret ([`prove`]).
pub type Proof = [u8; PROOF_BYTES];

/// Fills `buf` from the operating system's random source.
pub fn random_bytes(buf: &mut [u8]) -> Result<()> {
    getrandom::fill(buf).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("reading the system random source: {e}"),
        )
    })
}

/// A fresh random job secret of [`SECRET_BYTES`] bytes.
pub fn new_secret() -> Result<Vec<u8>> {
    let mut s = vec![0u8; SECRET_BYTES];
    random_bytes(&mut s)?;
    Ok(s)
}

/// A fresh nonce from the operating system's random source.
pub fn nonce() -> Result<Nonce> {
    let mut n = [0u8; NONCE_BYTES];
    random_bytes(&mut n)?;
    Ok(n)
}

/// Refuses a secret shorter than [`MIN_SECRET_BYTES`].
pub fn check_secret(secret: &[u8]) -> Result<()> {
    if secret.len() < MIN_SECRET_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "job secret of {} bytes is too short (at least {MIN_SECRET_BYTES} bytes)",
                secret.len()
            ),
        ));
    }
    Ok(())
}

/// Lowercase hex of `bytes` (how the secret travels in `WEFT_JOB_SECRET`).
pub fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Parses hex (either case); `what` names the field in the error.
pub fn decode_hex(what: &str, text: &str) -> Result<Vec<u8>> {
    let t = text.trim().as_bytes();
    if t.len() & 1 == 1 {
        return Err(Error::new(
            ErrorKind::Config,
            format!("{what}: {} hex digits, expected an even number", t.len()),
        ));
    }
    let digit = |c: u8| -> Result<u8> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(Error::new(
                ErrorKind::Config,
                format!("{what}: {:?} is not a hex digit", c as char),
            )),
        }
    };
    t.chunks(2)
        .map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

fn mac(secret: &[u8], label: &[u8], context: &[u8], challenge: &[u8], own: &[u8]) -> HmacSha256 {
    // HMAC takes keys of any length, so this cannot fail.
    let mut m = <HmacSha256 as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(label);
    m.update(context);
    m.update(challenge);
    m.update(own);
    m
}

/// The proof of a side in role `label` that it holds `secret`, for the connection
/// `context`: it answers the verifier's nonce `challenge` and includes the prover's own
/// nonce `own`.
pub fn prove(secret: &[u8], label: &[u8], context: &[u8], challenge: &[u8], own: &[u8]) -> Proof {
    mac(secret, label, context, challenge, own)
        .finalize()
        .into_bytes()
        .into()
}

/// Whether `proof` is the [`prove`] of a side that holds `secret` (the verifier passes its
/// own nonce as `challenge` and the prover's as `own`). Compares in constant time.
pub fn verify(
    secret: &[u8],
    label: &[u8],
    context: &[u8],
    challenge: &[u8],
    own: &[u8],
    proof: &[u8],
) -> bool {
    mac(secret, label, context, challenge, own)
        .verify_slice(proof)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_errors() {
        let b = [0u8, 1, 0xab, 0xff];
        assert_eq!(encode_hex(&b), "0001abff");
        assert_eq!(decode_hex("x", "0001ABff").unwrap(), b);
        let e = decode_hex("WEFT_JOB_SECRET", "abc").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(e.message().contains("WEFT_JOB_SECRET"));
        assert!(decode_hex("x", "zz").is_err());
    }

    #[test]
    fn secrets_and_nonces_are_random_and_long_enough() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_eq!(a.len(), SECRET_BYTES);
        assert_ne!(a, b);
        assert_ne!(nonce().unwrap(), nonce().unwrap());
        assert!(check_secret(&a).is_ok());
        assert_eq!(
            check_secret(b"short").unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn a_proof_holds_only_for_its_secret_label_context_and_nonces() {
        let (secret, other) = ([7u8; 32], [8u8; 32]);
        let (c, o) = ([1u8; NONCE_BYTES], [2u8; NONCE_BYTES]);
        let p = prove(&secret, b"server", b"ctx", &c, &o);
        assert!(verify(&secret, b"server", b"ctx", &c, &o, &p));
        assert!(!verify(&other, b"server", b"ctx", &c, &o, &p));
        assert!(!verify(&secret, b"client", b"ctx", &c, &o, &p));
        assert!(!verify(&secret, b"server", b"xtc", &c, &o, &p));
        assert!(!verify(&secret, b"server", b"ctx", &o, &c, &p));
        assert!(!verify(&secret, b"server", b"ctx", &c, &o, &p[..31]));
        // HMAC-SHA256 itself (RFC 4231 test case 2), through the same construction with an
        // empty context: key "Jefe", data "what do ya want for nothing?".
        let p = prove(b"Jefe", b"what do ya ", b"", b"want for ", b"nothing?");
        assert_eq!(
            encode_hex(&p),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
