"""Does the sampler see what iperf3 sees? Throughput of a shaped half, sampled by `agent sample` on the receiving
node, against iperf3's own receiver report for the same seconds, in one run.

The sampler counts what the interface passed (netdev counters on the emulated veths, headers included); iperf3
counts TCP payload. A veth carries TSO/GSO super-packets of up to 64 KiB, so headers add about 0.1% there; on a
real NIC the PHY counters see every MTU-sized frame (0.74% of headers at MTU 9000, plus the FCS). The window is
iperf3's steady state (its intervals 3 to n-1), with the counters interpolated to its boundaries on the node's
wall clock. Needs root (builds a testbed).

    sudo .venv/bin/python benchmarks/bench_watch_accuracy.py [--rate 1gbit] [--seconds 12] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from pathlib import Path
from typing import Any

from wirespeed.core.fabric.meter import Cable, NodeLayout, NodeSample
from wirespeed.core.fabric.units import parse_rate_bps
from wirespeed.engine.clusters import load_cluster_file
from wirespeed.engine.remote import Remote
from wirespeed.engine.sampling import ClusterSampler
from wirespeed.testbed import build

PREFIX = "wsa-"
HALF = "enp1s0f1np1"
MTU = 9000


def interpolate(samples: list[tuple[float, int]], at: float) -> float:
    """The counter's value at wall time `at`, linear between the two samples around it."""
    for (t0, v0), (t1, v1) in itertools.pairwise(samples):
        if t0 <= at <= t1:
            return v0 + (v1 - v0) * (at - t0) / (t1 - t0)
    raise ValueError(f"{at} outside the sampled span {samples[0][0]}..{samples[-1][0]}")


def run_once(remote: Remote, rate: str, seconds: int, interval: float) -> dict[str, Any]:
    cluster = remote.cluster
    server, client = cluster.node(f"{PREFIX}2"), cluster.node(f"{PREFIX}1")
    addr = remote.run(server, ["ip", "-j", "-4", "addr", "show", "dev", HALF])
    target = json.loads(addr.stdout)[0]["addr_info"][0]["local"]
    sampler = ClusterSampler(remote, [NodeLayout(server.name, (Cable(HALF, (HALF,), None),))], interval)
    collected: list[NodeSample] = []
    sampler.start()
    reader = threading.Thread(
        target=lambda: [collected.append(s) for s in sampler.samples(0.5) if isinstance(s, NodeSample)]
    )
    reader.start()
    listener = remote.start(server, ["iperf3", "-s", "-1", "-B", target, "-p", "5401"])
    try:
        time.sleep(1.0)
        result = remote.run(
            client, ["iperf3", "-c", target, "-p", "5401", "-t", str(seconds), "-J"], timeout_s=seconds + 30
        )
        time.sleep(interval * 2)
    finally:
        listener.stop()
        sampler.stop()
        reader.join(timeout=10)
    report = json.loads(result.stdout)
    start = float(report["start"]["timestamp"]["timesecs"])
    intervals = report["intervals"][2:-1]  # steady state: past slow start, before the end
    begin = start + intervals[0]["sum"]["start"]
    end = start + intervals[-1]["sum"]["end"]
    iperf_bits = sum(i["sum"]["bytes"] for i in intervals) * 8
    iperf_gbps = iperf_bits / (end - begin) / 1e9
    series = [(s.wall or 0.0, s.ifaces[HALF].netdev["rx_bytes"]) for s in collected if HALF in s.ifaces]
    sampled_bytes = interpolate(series, end) - interpolate(series, begin)
    sampled_gbps = sampled_bytes * 8 / (end - begin) / 1e9
    return {
        "rate": rate,
        "window_s": round(end - begin, 3),
        "samples": len(series),
        "iperf3_receiver_gbps": iperf_gbps,
        "sampled_frames_gbps": sampled_gbps,
        "ratio": sampled_gbps / iperf_gbps,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", action="append", help="tc rate of the half (repeatable; default 1gbit, 300mbit)")
    parser.add_argument("--seconds", type=int, default=12)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = []
    for rate in args.rate or ["1gbit", "300mbit"]:
        state = build.up(prefix=PREFIX, nodes=2, topology="direct", half_rate_bps=parse_rate_bps(rate), mtu=MTU)
        try:
            remote = Remote(load_cluster_file(state.cluster_file))
            with remote.owned():
                results.append(run_once(remote, rate, args.seconds, args.interval))
        finally:
            build.down(PREFIX)
    print(f"{'rate':>8} {'window s':>9} {'iperf3 Gb/s':>12} {'sampled Gb/s':>13} {'ratio':>7}")
    for r in results:
        print(
            f"{r['rate']:>8} {r['window_s']:9.2f} {r['iperf3_receiver_gbps']:12.4f} {r['sampled_frames_gbps']:13.4f} "
            f"{r['ratio']:7.4f}"
        )
    print(json.dumps({"benchmark": "watch_accuracy", "results": results}))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
