"""What one counter sample of 8 interfaces costs: wirespeed's sampler (SIOCETHTOOL + /proc/net/dev + /proc/stat)
against running `ethtool -S` once per interface (what mlnx_perf-style scripts and the seeds' tool do), in one run.

Also: the CPU that 100 samples a second of the 8 interfaces take for 10 s, as a percentage of one core.
Needs root: it makes a namespace with 4 veth pairs (8 interfaces) and removes it.

    sudo .venv/bin/python benchmarks/bench_sampler.py [--samples 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from vethns import veth_namespace

CHILD = r"""
import json, os, subprocess, sys, time
from wirespeed.adapters.nicsampler import NodeSampler
from wirespeed.core.parsers.ethtool import parse_stats

ifaces, samples = sys.argv[1].split(","), int(sys.argv[2])

def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system

def measure(one, n):
    one()  # warm-up
    c0, w0 = cpu(), time.perf_counter()
    for _ in range(n):
        one()
    return (cpu() - c0) / n, (time.perf_counter() - w0) / n

sampler = NodeSampler("bench", ifaces)
ours_cpu, ours_wall = measure(sampler.sample, samples)

def ethtool_all():
    for iface in ifaces:
        out = subprocess.run(["ethtool", "-S", iface], capture_output=True, text=True, check=True).stdout
        parse_stats(out)

theirs_cpu, theirs_wall = measure(ethtool_all, max(20, samples // 10))

# 100 samples a second for 10 s, on a fixed schedule.
rate, seconds = 100, 10.0
c0, tick = cpu(), time.monotonic()
for _ in range(int(rate * seconds)):
    sampler.sample()
    tick += 1 / rate
    delay = tick - time.monotonic()
    if delay > 0:
        time.sleep(delay)
busy = (cpu() - c0) / seconds * 100
print(json.dumps({
    "interfaces": len(ifaces),
    "ours_cpu_ms_per_sample": ours_cpu * 1e3, "ours_wall_ms_per_sample": ours_wall * 1e3,
    "ethtool_cpu_ms_per_sample": theirs_cpu * 1e3, "ethtool_wall_ms_per_sample": theirs_wall * 1e3,
    "ours_max_samples_per_s": 1 / ours_wall, "ethtool_max_samples_per_s": 1 / theirs_wall,
    "cpu_ratio": theirs_cpu / ours_cpu if ours_cpu else None, "wall_ratio": theirs_wall / ours_wall,
    "at_100_per_s_cpu_percent_of_one_core": busy,
}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_sampler: needs root (it makes a network namespace)", file=sys.stderr)
        return 2
    with veth_namespace("bs") as (netns, ifaces):
        src = str(Path(__file__).resolve().parents[1] / "src")
        out = subprocess.run(
            ["ip", "netns", "exec", netns, sys.executable, "-c", CHILD, ",".join(ifaces), str(args.samples)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": src},
        ).stdout
    data = json.loads(out.strip().splitlines()[-1])
    print(f"one sample of {data['interfaces']} interfaces        CPU ms   wall ms   max samples/s")
    print(
        f"wirespeed sampler (ioctl)      {data['ours_cpu_ms_per_sample']:8.3f} {data['ours_wall_ms_per_sample']:9.3f}"
        f" {data['ours_max_samples_per_s']:14.0f}"
    )
    print(
        f"ethtool -S per interface       {data['ethtool_cpu_ms_per_sample']:8.3f} "
        f"{data['ethtool_wall_ms_per_sample']:9.3f} {data['ethtool_max_samples_per_s']:14.1f}"
    )
    cpu = (
        f"{data['cpu_ratio']:.0f}x"
        if data["cpu_ratio"]
        else "not measured (our CPU time under one 10 ms tick: more --samples)"
    )
    print(f"ratio (ethtool / ours): CPU {cpu}, wall {data['wall_ratio']:.0f}x")
    print(f"100 samples/s of 8 interfaces for 10 s: {data['at_100_per_s_cpu_percent_of_one_core']:.2f}% of one core")
    print(json.dumps({"benchmark": "sampler", **data}))
    if args.json:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
