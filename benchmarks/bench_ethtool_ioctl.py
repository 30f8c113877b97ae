"""What one sample of the driver statistics of 8 interfaces costs: StatsReader (one SIOCETHTOOL ioctl per interface,
readers opened once) against running `ethtool -S IFACE` once per interface, side by side in one run.

Also: the CPU that sampling the 8 interfaces with StatsReader 100 times a second for 10 s takes, as a percentage
of one core (sleeping to the next tick between samples). CPU time is the process's own plus its children's
(getrusage RUSAGE_SELF + RUSAGE_CHILDREN), so the ethtool programs count. Needs root: it makes a namespace with
4 veth pairs (8 interfaces), measures inside it from a child process, and removes it.

    sudo .venv/bin/python benchmarks/bench_ethtool_ioctl.py [--samples 5000] [--ethtool-samples 100]
        [--queues 1] [--rate 100] [--seconds 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

CHILD = r"""
import json, resource, subprocess, sys, time
from wirespeed.adapters.ethtool_ioctl import StatsReader

ifaces = sys.argv[1].split(",")
samples, ethtool_samples, rate, seconds = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])

def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

def measure(one, n):
    one()  # warm-up: page cache, first allocations
    c0, w0 = cpu(), time.perf_counter()
    for _ in range(n):
        one()
    return {"cpu_s": (cpu() - c0) / n, "wall_s": (time.perf_counter() - w0) / n, "samples": n}

readers = [StatsReader(iface) for iface in ifaces]

def ioctl_sample():
    return [reader.read() for reader in readers]

def ethtool_sample():
    found = []
    for iface in ifaces:
        out = subprocess.run(["ethtool", "-S", iface], capture_output=True, text=True, check=True).stdout
        found.append({n.strip(): int(v) for n, _, v in (line.rpartition(":") for line in out.splitlines()[1:])})
    return found

assert [list(s) for s in ioctl_sample()] == [list(s) for s in ethtool_sample()], "the two disagree on the names"
ours = measure(ioctl_sample, samples)
theirs = measure(ethtool_sample, ethtool_samples)

# `rate` samples a second for `seconds`, on a fixed schedule: sleep to the next tick.
ticks, late = int(rate * seconds), 0
c0, w0 = cpu(), time.monotonic()
tick = w0
for _ in range(ticks):
    ioctl_sample()
    tick += 1 / rate
    delay = tick - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    else:
        late += 1
elapsed = time.monotonic() - w0
busy = (cpu() - c0) / elapsed * 100
print(json.dumps({
    "interfaces": len(ifaces), "counters_per_interface": len(readers[0].names),
    "ioctl": ours, "ethtool": theirs,
    "paced": {"rate_per_s": rate, "seconds": elapsed, "samples": ticks, "late_ticks": late,
              "cpu_percent_of_one_core": busy},
}))
"""


def run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=5000, help="samples of the 8 interfaces through StatsReader")
    parser.add_argument("--ethtool-samples", type=int, default=100, help="samples through `ethtool -S`")
    parser.add_argument("--queues", type=int, default=1, help="queues per veth: more queues, more counters")
    parser.add_argument("--rate", type=float, default=100.0, help="samples per second in the paced run")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the paced run")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_ethtool_ioctl: needs root (it makes a network namespace)", file=sys.stderr)
        return 2
    netns = f"wsxb-{uuid.uuid4().hex[:8]}"
    ifaces: list[str] = []
    run(["ip", "netns", "add", netns])
    try:
        queues = ["numtxqueues", str(args.queues), "numrxqueues", str(args.queues)]
        for pair in range(4):
            a, b = f"bea{pair}", f"beb{pair}"
            run(["ip", "-n", netns, "link", "add", "name", a, *queues, "type", "veth", "peer", "name", b, *queues])
            for name in (a, b):
                run(["ip", "-n", netns, "link", "set", name, "up"])
            ifaces += [a, b]
        src = str(Path(__file__).resolve().parents[1] / "src")
        child = [
            CHILD,
            ",".join(ifaces),
            str(args.samples),
            str(args.ethtool_samples),
            str(args.rate),
            str(args.seconds),
        ]
        out = subprocess.run(
            ["ip", "netns", "exec", netns, sys.executable, "-c", *child],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": src},
        ).stdout
    finally:
        run(["ip", "netns", "del", netns])
    data = json.loads(out.strip().splitlines()[-1])
    ours, theirs, paced = data["ioctl"], data["ethtool"], data["paced"]
    data["ratio_ethtool_over_ioctl"] = {
        "cpu": theirs["cpu_s"] / ours["cpu_s"] if ours["cpu_s"] else None,
        "wall": theirs["wall_s"] / ours["wall_s"],
    }
    for method in (ours, theirs):
        method["max_samples_per_s"] = 1 / method["wall_s"]
    ratio = data["ratio_ethtool_over_ioctl"]
    print(
        f"one sample of {data['interfaces']} veth interfaces ({data['counters_per_interface']} counters each), "
        f"mean of {ours['samples']} / {theirs['samples']} samples"
    )
    print(f"{'method':34} {'CPU ms':>9} {'wall ms':>9} {'max samples/s':>14}")
    for name, method in (("StatsReader.read() (ioctl)", ours), ("ethtool -S per interface", theirs)):
        print(
            f"{name:34} {method['cpu_s'] * 1e3:9.3f} {method['wall_s'] * 1e3:9.3f} {method['max_samples_per_s']:14.1f}"
        )
    cpu_ratio = f"{ratio['cpu']:.0f}x" if ratio["cpu"] else "n/a"
    print(f"ratio (ethtool -S / ioctl): CPU {cpu_ratio}, wall {ratio['wall']:.0f}x")
    print(
        f"{paced['rate_per_s']:.0f} samples/s of {data['interfaces']} interfaces for {paced['seconds']:.1f} s: "
        f"{paced['cpu_percent_of_one_core']:.2f}% of one core ({paced['late_ticks']} of {paced['samples']} ticks late)"
    )
    print(json.dumps({"benchmark": "ethtool_ioctl", **data}))
    if args.json:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
