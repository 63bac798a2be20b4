#!/usr/bin/env python3
"""Predicted against measured for `weft sim` (docs/sim.md).

Measures with `weft bench` on this machine, then simulates every measured point with the
algorithm the benchmark ran, and prints a Markdown table (predicted, measured median, error).

    scripts/sim-validate.py [--weft target/release/weft] [--out target/sim-val]
                            [--np 2,4,8] [--ops allreduce,bcast,alltoall]
                            [--sizes 64K,256K,1M,4M] [--rounds 3] [--no-measure]

Calibration, once, from point-to-point only: `weft bench p2p` ping-pong at the same sizes
(--cal-sizes; --rounds runs, median per size): a least-squares line through (bytes, one-way
time) gives the node lane's latency (intercept, at least 0) and bandwidth (1 / slope), used
for the lane, local copies and single copies alike. The reduction rate is the one `weft tune` measures
(`reduce_ns_per_byte`, f32 sums of 1 MiB, the cost model's figure), read from a tuning file
when --tuning names one. Nothing is fitted to the collectives.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip().startswith("{")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", default="target/release/weft")
    ap.add_argument("--out", default="target/sim-val")
    ap.add_argument("--np", default="2,4,8")
    ap.add_argument("--ops", default="allreduce,bcast,alltoall")
    ap.add_argument("--sizes", default="64K,256K,1M,4M")
    ap.add_argument("--cal-sizes", default="64K,256K,1M,4M",
                    help="ping-pong sizes of the calibration (4M,16M,64M: buffers "
                         "beyond the caches)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", default="20")
    ap.add_argument("--cores", default=str(os.cpu_count() or 1))
    ap.add_argument("--tuning", help="a weft tune file to take reduce_ns_per_byte from")
    ap.add_argument("--lanes-from-tuning", action="store_true",
                    help="simulate on the --tuning file's lanes, reduction rate and cores "
                         "(weft sim --tuning) instead of the ping-pong calibration")
    ap.add_argument("--no-measure", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    nps = [int(x) for x in a.np.split(",")]
    ops = a.ops.split(",")
    if not a.no_measure:
        for r in range(1, a.rounds + 1):
            out = run([a.weft, "bench", "p2p", "-n", "2", "--test", "latency", "--sizes",
                       a.cal_sizes, "--iters", "100", "--json"])
            open(f"{a.out}/p2p-r{r}.json", "w").write(out)
            # Rounds interleave the rank counts and collectives.
            for np_ in nps:
                for op in ops:
                    out = run([a.weft, "bench", "coll", "--op", op, "-n", str(np_), "--sizes",
                               a.sizes, "--iters", a.iters, "--json"])
                    open(f"{a.out}/{op}-{np_}-r{r}.json", "w").write(out)
    # Calibration: the median one-way time per size over the rounds, then a line.
    p2p = {}
    for r in range(1, a.rounds + 1):
        for p in lines(f"{a.out}/p2p-r{r}.json"):
            p2p.setdefault(p["bytes"], []).append(p["p50_us"])
    xs = sorted(p2p)
    ys = [statistics.median(p2p[x]) for x in xs]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    latency_us = max(my - slope * mx, 0.0)
    gbps = 1.0 / (slope * 1e3)
    reduce = []
    if a.tuning:
        for line in open(a.tuning):
            if line.startswith("reduce_ns_per_byte"):
                reduce = ["--reduce-gbps", str(1.0 / float(line.split("=")[1]))]
    if a.lanes_from_tuning:
        if not a.tuning:
            sys.exit("--lanes-from-tuning needs --tuning FILE")
        lane_args = ["--tuning", a.tuning]
        print(f"lanes, reduction rate and cores of {a.tuning} (ping-pong medians here: "
              f"{dict(zip(xs, ys))})")
    else:
        lane_args = ["--cores", a.cores, "--intra-latency-us", f"{latency_us}",
                     "--intra-gbps", f"{gbps}", *reduce]
        print(f"calibration: node lane {latency_us:.2f} us + {gbps:.3f} GB/s "
              f"(p2p medians {dict(zip(xs, ys))}); {' '.join(reduce) or 'default reduction rate'}")
    print()
    within, cells = 0, 0
    print("| op | np | bytes | algorithm | measured median us | predicted us | error |")
    print("|---|---|---|---|---|---|---|")
    for op in ops:
        for np_ in nps:
            meas = {}
            for r in range(1, a.rounds + 1):
                for p in lines(f"{a.out}/{op}-{np_}-r{r}.json"):
                    meas.setdefault((p["bytes"], p["algo"]), []).append(p["p50_us"])
            for (b, algo), v in sorted(meas.items()):
                m = statistics.median(v)
                sim = json.loads(run([a.weft, "sim", "--op", op, "--procs", str(np_),
                                      "--bytes", str(b), "--algo", algo, *lane_args,
                                      "--json"]))
                pred = sim["runs"][0]["predicted_us"]
                err = (pred - m) / m * 100
                within += abs(err) <= 30
                cells += 1
                print(f"| {op} | {np_} | {b} | {algo} | {m:.1f} | {pred:.1f} | {err:+.0f}% |")
    print()
    print(f"within 30% of the measured median: {within} of {cells}")


if __name__ == "__main__":
    sys.exit(main())
