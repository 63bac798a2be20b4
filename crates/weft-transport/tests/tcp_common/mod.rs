//! Endpoints of a job of `n` ranks in one process, over loopback, each knowing the others'
//! addresses: what the TCP tests start from.

use std::net::{IpAddr, Ipv4Addr};
use weft_transport::tcp::frame::Limits;
use weft_transport::tcp::{parse_addresses, Endpoint, TcpConfig};

/// `n` bound endpoints with the job key `key`, `limits` and `rails` connections per pair.
pub(crate) fn loopback_endpoints(n: u32, key: &[u8], limits: Limits, rails: u32) -> Vec<Endpoint> {
    let mut eps: Vec<Endpoint> = (0..n)
        .map(|rank| {
            Endpoint::bind(TcpConfig {
                rank,
                size: n,
                key: key.to_vec(),
                limits,
                bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                interfaces: Vec::new(),
                small_fragment_bytes: 32 * 1024,
                max_fast_peers: 1,
                fast_after_bytes: 1 << 20,
                rails,
                rail_sources: Vec::new(),
            })
            .unwrap()
        })
        .collect();
    let records: Vec<String> = eps.iter().map(|e| e.address_record()).collect();
    for ep in &mut eps {
        for (r, rec) in records.iter().enumerate() {
            ep.set_peer_addresses(r as u32, parse_addresses(r as u32, rec).unwrap());
        }
    }
    eps
}
