//! Fuzzes the TCP frame decoder with proptest and replays the checked-in corpus
//! (`fuzz/corpus/tcp_frame/` at the repository root, shared with the cargo-fuzz target): whatever bytes arrive, the decoder answers a frame within its limits,
//! "need more", or an error, and never panics or reads past its input.
//!
//! Hand-made corpus files are named by the answer expected for their bytes: `ok-*` (a whole
//! frame at the start), `more-*` (a truncated frame) and `err-*` (bytes no rank would send);
//! those libFuzzer kept are named by their hash and only checked like any input.
//! Set `WEFT_FUZZ_CASES` to run more proptest cases than the default (CI keeps it bounded).

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

use proptest::prelude::*;
use weft_transport::shm::Header;
use weft_transport::tcp::frame::{self, Decoded, Limits, FRAME_HEADER_BYTES};

const LIMITS: Limits = Limits {
    eager_bytes: 1024,
    fragment_bytes: 4096,
};

fn cases() -> u32 {
    std::env::var("WEFT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// Checks the decoder's answer against the input it was given.
fn check_answer(input: &[u8]) -> Option<Header> {
    match frame::decode(input, &LIMITS) {
        Ok(Decoded::NeedMore) => None,
        Ok(Decoded::Frame(h)) => {
            assert!(input.len() >= FRAME_HEADER_BYTES + h.len as usize);
            assert!(FRAME_HEADER_BYTES + h.len as usize <= LIMITS.max_frame_bytes());
            assert_eq!(frame::encode_header(&h), input[..FRAME_HEADER_BYTES]);
            Some(h)
        }
        Err(e) => {
            assert_eq!(e.kind(), weft_core::ErrorKind::Protocol, "{e}");
            None
        }
    }
}

fn valid_frame() -> impl Strategy<Value = (Header, Vec<u8>)> {
    let kind = prop_oneof![
        Just(frame::KIND_EAGER),
        Just(frame::KIND_RTS),
        Just(frame::KIND_CTS),
        Just(frame::KIND_FRAG)
    ];
    (
        kind,
        any::<u8>(),
        any::<u32>(),
        any::<u32>(),
        any::<i32>(),
        any::<u32>(),
        0usize..4096,
    )
        .prop_map(|(kind, flags, src, ctx, tag, aux, n)| {
            let len = match kind {
                frame::KIND_EAGER => n % (LIMITS.eager_bytes as usize + 1),
                frame::KIND_RTS => frame::RTS_BODY_BYTES,
                frame::KIND_CTS => frame::CTS_BODY_BYTES,
                _ => 1 + n % LIMITS.fragment_bytes as usize,
            };
            let h = Header {
                kind,
                flags,
                reserved: 0,
                src,
                ctx,
                tag,
                len: len as u32,
                aux,
            };
            let body = (0..len).map(|i| (i * 31 + 7) as u8).collect();
            (h, body)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        check_answer(&bytes);
    }

    #[test]
    fn headers_with_random_fields(mut hdr in proptest::array::uniform24(any::<u8>()), tail in 0usize..64) {
        // Small kinds make the interesting branches likely.
        hdr[0] %= 8;
        let mut input = hdr.to_vec();
        input.resize(FRAME_HEADER_BYTES + tail, 0xAB);
        check_answer(&input);
    }

    #[test]
    fn frames_round_trip_and_every_prefix_needs_more((h, body) in valid_frame()) {
        let mut wire = frame::encode_header(&h).to_vec();
        wire.extend_from_slice(&body);
        prop_assert_eq!(frame::decode(&wire, &LIMITS).unwrap(), Decoded::Frame(h));
        for cut in [0, 1, FRAME_HEADER_BYTES - 1, FRAME_HEADER_BYTES, wire.len() - 1] {
            if cut < wire.len() {
                prop_assert_eq!(frame::decode(&wire[..cut], &LIMITS).unwrap(), Decoded::NeedMore);
            }
        }
    }

    #[test]
    fn a_stream_split_anywhere_decodes_the_same(
        frames in proptest::collection::vec(valid_frame(), 1..6),
        splits in proptest::collection::vec(1usize..5000, 1..10),
    ) {
        let mut wire = Vec::new();
        for (h, body) in &frames {
            wire.extend_from_slice(&frame::encode_header(h));
            wire.extend_from_slice(body);
        }
        // Feed the stream in chunks, as reads from a socket would deliver it.
        let mut buf: Vec<u8> = Vec::new();
        let mut got = Vec::new();
        let mut at = 0;
        let mut s = 0;
        while at < wire.len() {
            let n = splits[s % splits.len()].min(wire.len() - at);
            s += 1;
            buf.extend_from_slice(&wire[at..at + n]);
            at += n;
            while let Decoded::Frame(h) = frame::decode(&buf, &LIMITS).unwrap() {
                let end = FRAME_HEADER_BYTES + h.len as usize;
                got.push((h, buf[FRAME_HEADER_BYTES..end].to_vec()));
                buf.drain(..end);
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(got, frames);
    }
}

#[test]
fn corpus_replays_with_the_expected_answers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/tcp_frame");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let answer = frame::decode(&bytes, &LIMITS);
        let ok = match name.split('-').next().unwrap() {
            "ok" => matches!(answer, Ok(Decoded::Frame(_))),
            "more" => matches!(answer, Ok(Decoded::NeedMore)),
            "err" => answer.is_err(),
            // Inputs fuzzing kept (named by their hash): any answer the decoder may give.
            _ => true,
        };
        assert!(ok, "{name}: unexpected answer {answer:?}");
        check_answer(&bytes);
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} corpus files in {}", dir.display());
}
