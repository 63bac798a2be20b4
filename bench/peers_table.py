#!/usr/bin/env python3
"""Table of `bench/coll_sweep.sh` points against the peers' OSU figures.

Usage: peers_table.py POINTS.jsonl PEERS.md

POINTS.jsonl holds lines {"np": N, "round": R, "point": <weft bench coll --json point>};
PEERS.md the tables "## np=2 ..." and "## np=4 ..." with rows "| osu_<op> (us) | <size> |
<Open MPI> | <MPICH> |". Prints per (np, op, bytes) each round's p50, their median, the
better peer and median / peer; MISS where weft is slower. Exits 1 on unreadable input."""
import json
import re
import statistics
import sys

UNITS = {"B": 1, "KiB": 1024, "MiB": 1 << 20}


def peers_of(path):
    peers, np = {}, None
    for line in open(path, encoding="utf-8"):
        m = re.match(r"## np=(\d+)", line)
        if m:
            np = int(m.group(1))
            continue
        m = re.match(r"\| osu_(\w+) \(us\) \| ([^|]+) \| ([\d.]+) \| ([\d.]+) \|", line)
        if m and np:
            size = m.group(2).strip()
            if size == "-":
                nbytes = 0
            else:
                n, unit = size.split()
                nbytes = int(n) * UNITS[unit]
            peers[(np, m.group(1), nbytes)] = min(float(m.group(3)), float(m.group(4)))
    return peers


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    try:
        peers = peers_of(sys.argv[2])
        rows = {}
        for line in open(sys.argv[1], encoding="utf-8"):
            d = json.loads(line)
            p = d["point"]
            rows.setdefault((d["np"], p["op"], p["bytes"]), []).append((p["p50_us"], p["algo"]))
    except (OSError, ValueError, KeyError) as e:
        print(f"peers_table.py: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"{'np':>2} {'op':<15}{'bytes':>8} {'algo':<20}{'weft p50 per round (us)':<36}"
          f"{'median':>10}{'peer':>10}{'ratio':>8}")
    for key in sorted(rows):
        v = rows[key]
        med = statistics.median(a for a, _ in v)
        algos = "/".join(sorted({b for _, b in v}))
        best = peers.get(key)
        ratio = f"{med / best:.2f}" if best else "-"
        miss = " MISS" if best and med > best else ""
        rounds = " ".join(f"{a:.2f}" for a, _ in v)
        peer = f"{best:.2f}" if best else "-"
        print(f"{key[0]:>2} {key[1]:<15}{key[2]:>8} {algos:<20}{rounds:<36}{med:10.2f}"
              f"{peer:>10}{ratio:>8}{miss}")


if __name__ == "__main__":
    main()
