"""How much one TCP flow over an unshaped veth pair (the CPU is the ceiling) varies between runs, with the link
as the testbed makes it (MTU 9000, GRO on) and as a bare veth pair (MTU 1500, GRO off), and with the client alone
pinned (what the tcp rungs do) or both ends on different cores: the arms alternated in one run.

Why: bounding the observer effect at 2% needs runs that repeat within a few percent; the tcp-single rung on an
unshaped testbed spread 27-43% between runs even on an idle 16-core machine.

    sudo .venv/bin/python benchmarks/bench_tcp_spread.py [--runs 8] [--seconds 5] [--server-core N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from wirespeed.core.tools import iperf3

# (label, MTU, GRO, pin the server too)
ARMS = (
    ("MTU 9000, GRO on, client pinned", 9000, True, False),
    ("MTU 1500, GRO off, client pinned", 1500, False, False),
    ("MTU 9000, GRO on, both pinned", 9000, True, True),
)


def run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def once(a: str, b: str, link: int, seconds: int, server_core: int | None, port: int) -> float:
    source, target = f"198.18.0.{4 * link + 1}", f"198.18.0.{4 * link + 2}"
    server = subprocess.Popen(["ip", "netns", "exec", b, *iperf3.server_argv(target, port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        time.sleep(0.3)
        argv = iperf3.client_argv(source, target, port, seconds=seconds, core=0)
        if server_core is not None:
            argv[-1] = f"0,{server_core}"
        out = subprocess.run(["ip", "netns", "exec", a, *argv], capture_output=True, text=True, check=True).stdout
    finally:
        server.wait(timeout=20)
    gbps = iperf3.parse_json(out).receiver_gbps
    assert gbps is not None
    return gbps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--server-core", type=int, default=(os.cpu_count() or 2) // 2)
    args = parser.parse_args()
    tag = uuid.uuid4().hex[:5]
    a, b = f"wspa-{tag}", f"wspb-{tag}"
    links = sorted({(mtu, gro) for _, mtu, gro, _ in ARMS})
    found: dict[str, list[float]] = {label: [] for label, *_ in ARMS}
    try:
        for ns in (a, b):
            run(["ip", "netns", "add", ns])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        for i, (mtu, gro) in enumerate(links):
            run(["ip", "-n", a, "link", "add", f"pa{i}", "mtu", str(mtu), "type", "veth", "peer", "name", f"pb{i}",
                 "mtu", str(mtu), "netns", b])  # fmt: skip
            for ns, dev, host in ((a, f"pa{i}", 1), (b, f"pb{i}", 2)):
                run(["ip", "-n", ns, "addr", "add", f"198.18.0.{4 * i + host}/30", "dev", dev])
                run(["ip", "-n", ns, "link", "set", dev, "up"])
                if gro:
                    run(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "gro", "on"])
        port = 5201
        for link in range(len(links)):  # warm-up
            once(a, b, link, 2, None, port)
            port += 1
        for i in range(args.runs):
            for label, mtu, gro, both in ARMS:
                gbps = once(a, b, links.index((mtu, gro)), args.seconds, args.server_core if both else None, port)
                found[label].append(gbps)
                port += 1
            print(f"run {i + 1}/{args.runs}: " + ", ".join(f"{v[-1]:.2f}" for v in found.values()), flush=True)
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
    result = {}
    for label, values in found.items():
        median = statistics.median(values)
        spread = (max(values) - min(values)) / median
        cv = statistics.stdev(values) / statistics.mean(values)
        result[label] = {"median_gbps": median, "spread": spread, "cv": cv, "all": values}
        print(f"{label:34} median {median:6.2f} Gb/s  min-max {min(values):6.2f}-{max(values):6.2f}"
              f"  spread {spread:5.1%}  cv {cv:5.1%}")  # fmt: skip
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
