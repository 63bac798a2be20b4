//! Property tests of the one-sided wire decoder: any bytes decode to a request, a request
//! for more bytes, or an error — never a panic — and a request never claims more bytes
//! than the input holds; encoded requests decode to themselves.

use proptest::prelude::*;
use weft::rma::net::wire::{self, Decoded, Request};

proptest! {
    #[test]
    fn any_bytes_decode_safely(input in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut pos = 0;
        while pos < input.len() {
            match wire::decode_request(&input[pos..]) {
                Ok(Decoded::Request(r, n)) => {
                    prop_assert!(n >= wire::HEAD_BYTES && n <= input.len() - pos);
                    if let Request::Put { data, .. } = r {
                        prop_assert_eq!(n, wire::HEAD_BYTES + data.len());
                    }
                    pos += n;
                }
                Ok(Decoded::NeedBytes(n)) => {
                    prop_assert!(n > input.len() - pos);
                    prop_assert!(n <= wire::HEAD_BYTES + wire::MAX_PAYLOAD_BYTES);
                    break;
                }
                Err(_) => break,
            }
        }
    }

    #[test]
    fn heads_with_hostile_fields(op in 0u8..8, width in any::<u8>(), space in any::<u8>(), amo in any::<u8>(),
                                 len in any::<u32>(), offset in any::<u64>()) {
        let mut b = vec![op, width, space, amo];
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&offset.to_le_bytes());
        b.extend_from_slice(&[0u8; 16]);
        match wire::decode_request(&b) {
            Ok(Decoded::Request(Request::Get { len: l, .. }, _)) => prop_assert!(l as usize <= wire::MAX_PAYLOAD_BYTES),
            Ok(Decoded::Request(Request::Amo { width: w, .. }, _)) => prop_assert!(w == 4 || w == 8),
            Ok(Decoded::NeedBytes(n)) => prop_assert!(n <= wire::HEAD_BYTES + wire::MAX_PAYLOAD_BYTES),
            _ => {}
        }
    }

    #[test]
    fn puts_round_trip(offset in any::<u64>(), data in proptest::collection::vec(any::<u8>(), 0..300),
                       more in proptest::collection::vec(any::<u8>(), 0..50)) {
        let mut b = Vec::new();
        wire::put_head(&mut b, wire::SPACE_HEAP, offset, data.len() as u32);
        b.extend_from_slice(&data);
        wire::grow_put(&mut b, 0, more.len() as u32);
        b.extend_from_slice(&more);
        let mut all = data.clone();
        all.extend_from_slice(&more);
        match wire::decode_request(&b).unwrap() {
            Decoded::Request(Request::Put { space, offset: o, data: d }, n) => {
                prop_assert_eq!(space, wire::SPACE_HEAP);
                prop_assert_eq!(o, offset);
                prop_assert_eq!(d, &all[..]);
                prop_assert_eq!(n, b.len());
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }
}
