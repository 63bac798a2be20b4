use super::*;

/// One rank per node, a flat network of 1 ns per byte, 1000 ns latency, 50 ns overhead.
fn machine() -> Machine {
    Machine {
        ppn: 1,
        cores: 1,
        overhead_ns: 50.0,
        intra_latency_ns: 300.0,
        intra_ns_per_byte: 0.25,
        inter_latency_ns: 1000.0,
        inter_gap_ns: 0.0,
        copy_ns_per_byte: 0.125,
        reduce_ns_per_byte: 0.5,
        cma_latency_ns: 700.0,
        cma_ns_per_byte: 0.2,
        arrive_ns: 200.0,
        header_ns: 10.0,
        eager_bytes: 4096,
    }
}

fn run(programs: &[Program], m: &Machine) -> Outcome {
    let nodes = programs.len().div_ceil(m.ppn as usize) as u32;
    let mut net = FlatNetwork {
        nodes,
        ns_per_byte: 1.0,
    };
    simulate(programs, m, &mut net, &[0]).expect("simulates")
}

fn prog(steps: &[&[Op]]) -> Program {
    let mut p = Program::new();
    for s in steps {
        p.step();
        for &o in *s {
            p.push(o);
        }
    }
    p
}

#[test]
fn one_message_takes_overhead_bytes_and_latency() {
    let b = 1 << 20;
    let out = run(
        &[
            prog(&[&[Op::Send { peer: 1, bytes: b }]]),
            prog(&[&[Op::Recv { peer: 0, bytes: b }]]),
        ],
        &machine(),
    );
    // The sender's send is done when the data has left (rendezvous); the receiver 1000 ns
    // later.
    assert_eq!(out.finish_ns[0], 50.0 + b as f64);
    assert_eq!(out.finish_ns[1], 50.0 + b as f64 + 1000.0);
    assert_eq!(out.completion_ns(), 50.0 + b as f64 + 1000.0);
    assert_eq!(out.messages, 1);
    // Node 0's send link and node 1's receive link carried it.
    assert_eq!(out.link_bytes, vec![b, 0, 0, b]);
    assert_eq!(out.link_busy_ns[0], b as f64);
}

#[test]
fn an_eager_send_completes_after_its_overhead() {
    let out = run(
        &[
            prog(&[&[Op::Send {
                peer: 1,
                bytes: 100,
            }]]),
            prog(&[&[Op::Recv {
                peer: 0,
                bytes: 100,
            }]]),
        ],
        &machine(),
    );
    assert_eq!(out.finish_ns[0], 50.0);
    assert_eq!(out.finish_ns[1], 50.0 + 100.0 + 1000.0);
}

#[test]
fn a_chain_adds_its_hops() {
    let (p, b) = (6u32, 10_000u64);
    let programs: Vec<Program> = (0..p)
        .map(|r| {
            let mut steps: Vec<Vec<Op>> = Vec::new();
            if r > 0 {
                steps.push(vec![Op::Recv {
                    peer: r - 1,
                    bytes: b,
                }]);
            }
            if r + 1 < p {
                steps.push(vec![Op::Send {
                    peer: r + 1,
                    bytes: b,
                }]);
            }
            let refs: Vec<&[Op]> = steps.iter().map(|s| s.as_slice()).collect();
            prog(&refs)
        })
        .collect();
    let out = run(&programs, &machine());
    let hop = 50.0 + b as f64 + 1000.0;
    assert_eq!(out.completion_ns(), (p - 1) as f64 * hop);
    // A rank in the middle is done once its own send has left (no latency after it).
    for r in 0..p as usize - 1 {
        assert_eq!(
            out.finish_ns[r],
            r as f64 * hop + 50.0 + b as f64,
            "rank {r}"
        );
    }
}

#[test]
fn a_shared_link_halves_each_messages_bandwidth() {
    let b = 1 << 16;
    // Ranks 0 and 1 both send to rank 2: node 2's receive link carries both, one after the
    // other, so the pair takes twice the bytes' time.
    let shared = run(
        &[
            prog(&[&[Op::Send { peer: 2, bytes: b }]]),
            prog(&[&[Op::Send { peer: 2, bytes: b }]]),
            prog(&[&[
                Op::Recv { peer: 0, bytes: b },
                Op::Recv { peer: 1, bytes: b },
            ]]),
        ],
        &machine(),
    );
    assert_eq!(shared.completion_ns(), 50.0 + 2.0 * b as f64 + 1000.0);
    assert_eq!(shared.link_bytes[5], 2 * b);
    // To two receivers, nothing is shared.
    let apart = run(
        &[
            prog(&[&[Op::Send { peer: 2, bytes: b }]]),
            prog(&[&[Op::Send { peer: 3, bytes: b }]]),
            prog(&[&[Op::Recv { peer: 0, bytes: b }]]),
            prog(&[&[Op::Recv { peer: 1, bytes: b }]]),
        ],
        &machine(),
    );
    assert_eq!(apart.completion_ns(), 50.0 + b as f64 + 1000.0);
}

#[test]
fn ranks_of_a_node_copy_and_wait_for_each_other() {
    let m = Machine {
        ppn: 2,
        cores: 2,
        ..machine()
    };
    // Rank 0 copies 8000 bytes (1000 ns) and reduces 2000 (1000 ns) before arriving; rank 1
    // arrives at once; both leave 200 ns after the later arrival. Then rank 1 receives
    // 4000 bytes from rank 0 through the node (300 ns + 1000 ns of its own copying).
    let out = run(
        &[
            prog(&[
                &[
                    Op::Copy { bytes: 8000 },
                    Op::Reduce { bytes: 2000 },
                    Op::Arrive,
                ],
                &[Op::Send {
                    peer: 1,
                    bytes: 4000,
                }],
            ]),
            prog(&[
                &[Op::Arrive],
                &[Op::Recv {
                    peer: 0,
                    bytes: 4000,
                }],
            ]),
        ],
        &m,
    );
    let phase = 2000.0 + 200.0;
    assert_eq!(out.finish_ns[0], phase + 50.0);
    assert_eq!(out.finish_ns[1], phase + 50.0 + 300.0 + 1000.0);
    assert_eq!(out.intra_bytes[1], 4000);
    assert_eq!(out.trace.len(), 2);
    assert_eq!(out.trace[0].end_ns, phase);
}

#[test]
fn fewer_cores_than_ranks_queue_the_work() {
    let work = [Op::Copy { bytes: 8000 }];
    let programs = vec![prog(&[&work]); 4];
    let wide = run(
        &programs,
        &Machine {
            ppn: 4,
            cores: 4,
            ..machine()
        },
    );
    assert_eq!(wide.completion_ns(), 1000.0);
    let narrow = run(
        &programs,
        &Machine {
            ppn: 4,
            cores: 2,
            ..machine()
        },
    );
    assert_eq!(narrow.completion_ns(), 2000.0);
}

#[test]
fn programs_that_do_not_match_are_an_error() {
    let programs = [prog(&[&[Op::Send { peer: 1, bytes: 8 }]]), prog(&[&[]])];
    let mut net = FlatNetwork {
        nodes: 2,
        ns_per_byte: 1.0,
    };
    let err = simulate(&programs, &machine(), &mut net, &[]).unwrap_err();
    assert!(err.to_string().contains("rank 0 never finished"), "{err}");
    let programs = [prog(&[&[Op::Send { peer: 5, bytes: 8 }]]), prog(&[&[]])];
    let err = simulate(&programs, &machine(), &mut net, &[]).unwrap_err();
    assert!(err.to_string().contains("peer 5"), "{err}");
}

#[test]
fn neighbouring_copies_of_a_step_join() {
    let mut p = Program::new();
    p.step();
    p.push(Op::Copy { bytes: 8 });
    p.push(Op::Copy { bytes: 16 });
    p.push(Op::Reduce { bytes: 4 });
    p.push(Op::Reduce { bytes: 4 });
    p.step();
    p.push(Op::Copy { bytes: 1 });
    assert_eq!(
        p.step_ops(0),
        &[Op::Copy { bytes: 24 }, Op::Reduce { bytes: 8 }]
    );
    assert_eq!(p.step_ops(1), &[Op::Copy { bytes: 1 }]);
    assert_eq!(p.op_count(), 3);
}
