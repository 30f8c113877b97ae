"""The floor under an agent woken 100 times a second: what a tick costs in CPU with nothing to do, with a read of
/proc/net/dev, and with a whole line made from it, in Python and in C (`wake_floor.c`, built here with `cc`),
against the agent's own steady line (`NodeSampler.line()`), alternated in one run, in a namespace of 8 veths.

Why: the node side's target (100x `ethtool -S` on 8 interfaces) leaves 55-60 us a line on a 2-core VM; this shows
how much of that the wake-up and the kernel's read take whatever the language.

    sudo .venv/bin/python benchmarks/bench_wake_floor.py [--ticks 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from vethns import veth_namespace

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

PYTHON = r"""
import os, sys, time
from wirespeed.adapters.nicsampler import NodeSampler, NETDEV_FORMAT
ticks, mode, interval = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
ifaces = sys.argv[4].split(",")
sampler = NodeSampler("n", ifaces)
fd = os.open("/proc/net/dev", os.O_RDONLY)
out = open(os.devnull, "wb")
def nothing(): pass
def read(): os.pread(fd, 65536, 0).decode().split()
def agent(): out.write(sampler.line().encode())
work = {"nothing": nothing, "read": read, "agent": agent}[mode]
for _ in range(50):
    work()
t = time.monotonic()
c = time.process_time_ns()
for _ in range(ticks):
    work()
    t += interval
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)
print((time.process_time_ns() - c) / 1e3 / ticks)
"""

ARMS = (
    ("C: wake-up alone", "c", "0"),
    ("Python: wake-up alone", "py", "nothing"),
    ("C: + read /proc/net/dev, split", "c", "1"),
    ("Python: + read /proc/net/dev, split", "py", "read"),
    ("C: + the line (2.3 KB)", "c", "2"),
    ("Python: the agent's line (NodeSampler.line)", "py", "agent"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=float, default=0.01)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_wake_floor: needs root (a namespace of veths)", file=sys.stderr)
        return 2
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        print("bench_wake_floor: no C compiler (cc or gcc): apt install gcc", file=sys.stderr)
        return 2
    found: dict[str, list[float]] = {label: [] for label, *_ in ARMS}
    with tempfile.TemporaryDirectory(prefix="wswf-") as work, veth_namespace("wf") as (netns, ifaces):
        binary = Path(work) / "wake_floor"
        subprocess.run([compiler, "-O2", "-o", str(binary), str(HERE / "wake_floor.c")], check=True)
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        for _ in range(args.rounds):
            for label, kind, mode in ARMS:
                if kind == "c":
                    argv = [str(binary), str(args.ticks), mode, str(int(args.interval * 1e9))]
                else:
                    argv = [sys.executable, "-c", PYTHON, str(args.ticks), mode, str(args.interval), ",".join(ifaces)]
                out = subprocess.run(["ip", "netns", "exec", netns, *argv], capture_output=True, text=True,
                                     check=True, env=env).stdout  # fmt: skip
                found[label].append(float(out.strip().splitlines()[-1]))
    print(f"CPU per tick at {1 / args.interval:g}/s, {args.ticks} ticks, median [min-max] of {args.rounds} (us)")
    for label, values in found.items():
        print(f"  {label:46} {statistics.median(values):7.1f}  [{min(values):.1f}-{max(values):.1f}]")
    print(json.dumps({"cpus": os.cpu_count(), "us_per_tick": found}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
