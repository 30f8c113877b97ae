"""Where the agent's CPU goes at 100 samples/s, part by part: variants of its loop, each a process of its own in a
namespace of 8 veths, alternated in one run, CPU per tick from /proc/<pid>/task/*/schedstat (the process and its
children, so the compiled reader too) over a steady window.

- sleep: the schedule alone (wake, sleep, one write a tick);
- netdev: + one read of /proc/net/dev, split; netdev+stat: + /proc/stat one tick in ten, as the agent reads it;
- netlink: a RTM_GETSTATS dump (64-bit link stats) instead of /proc/net/dev;
- agent: `stream_samples` itself (with its compiled steady reader where `cc` builds it); agent-python: every line
  from Python (WIRESPEED_AGENT_COMPILED=0); agent-cpu1s: with CPU read once a second; agent-pinned: on one core;
- immediate / deferred: the steady line made every tick, or the tick's raw reads kept and the lines made when
  they are written (five at a time): does making lines warm, together, cost less than one by one, cold?
- agent-previous (with --previous SRC): `stream_samples` from another checkout's src/, for an A/B.

    sudo .venv/bin/python benchmarks/bench_agent_parts.py [--rounds 4] [--only agent,netdev] [--previous DIR/src]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from procs import tree_cpu_ns
from vethns import veth_namespace

SRC = Path(__file__).resolve().parents[1] / "src"

TICK = r"""
t = time.monotonic()
n = 0
while True:
    n += 1
    WORK
    t += 0.01
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)
    sys.stdout.write("x\n"); sys.stdout.flush()
"""


def loop(setup: str, work: str) -> str:
    return "import os, sys, time\n" + setup + TICK.replace("WORK", work)


AGENT = """
import sys
{before}
from wirespeed.engine.sampling import stream_samples
stream_samples("bench", sys.argv[1].split(","), 0.01)
"""

STEADY = r"""
import os, sys, time, json
import wirespeed.adapters.nicsampler as ns
from wirespeed.core.fabric.counters import cores_json
smp = ns.NodeSampler("bench", sys.argv[1].split(","))
smp.line()
st = smp._steady
assert st is not None and st.netdev_digits is not None
ndfd = os.open("/proc/net/dev", os.O_RDONLY); stfd = os.open("/proc/stat", os.O_RDONLY)
out = sys.stdout.buffer
def fmt(now, wall, nd, cpu):
    tokens = nd.decode("ascii").split()
    if st.netdev_names(tokens) != st.netdev_expected:
        raise SystemExit("an interface moved in /proc/net/dev")
    values = [now, wall, *st.netdev_digits(tokens), cores_json(cpu.decode()) if cpu else "[]"]
    return st.template % st.order(values) + "\n"
held = []
t = time.monotonic(); n = 0
while True:
    n += 1
    raw = (time.monotonic(), time.time(), os.pread(ndfd, 65536, 0), os.pread(stfd, 65536, 0) if n % 10 == 0 else None)
    held.append(raw if DEFER else fmt(*raw))
    if n % 5 == 0:
        out.write("".join(fmt(*r) for r in held).encode() if DEFER else "".join(held).encode())
        out.flush()
        held.clear()
    t += 0.01
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)
"""

NETLINK_SETUP = r"""
import socket, struct
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
s.bind((0, 0))
req = struct.pack("=IHHII", 28, 94, 1 | 0x300, 1, 0) + struct.pack("=BBHII", 0, 0, 0, 0, 1)  # RTM_GETSTATS dump
buf = bytearray(65536)
def dump():
    s.send(req)
    while True:
        size, off, done = s.recv_into(buf), 0, False
        while off < size:
            length, kind = struct.unpack_from("=IH", buf, off)
            done = done or kind == 3  # NLMSG_DONE
            off += (length + 3) & ~3
        if done:
            return
"""

VARIANTS = {
    "sleep": loop("", "pass"),
    "netdev": loop('fd = os.open("/proc/net/dev", os.O_RDONLY)\n', "os.pread(fd, 65536, 0).decode().split()"),
    "netdev+stat": loop(
        'fd = os.open("/proc/net/dev", os.O_RDONLY)\nst = os.open("/proc/stat", os.O_RDONLY)\n',
        "os.pread(fd, 65536, 0).decode().split()\n    if n % 10 == 0: os.pread(st, 65536, 0)",
    ),
    "netlink": loop(NETLINK_SETUP, "dump()"),
    "agent": AGENT.format(before=""),
    "agent-python": AGENT.format(before="import os\nos.environ['WIRESPEED_AGENT_COMPILED'] = '0'"),
    "agent-cpu1s": AGENT.format(before="import wirespeed.adapters.nicsampler as ns\nns.CPU_INTERVAL_S = 1.0"),
    "agent-pinned": AGENT.format(before="import os\nos.sched_setaffinity(0, {max(os.sched_getaffinity(0))})"),
    "immediate": "DEFER = False\n" + STEADY,
    "deferred": "DEFER = True\n" + STEADY,
}


def per_tick(netns: str, ifaces: list[str], code: str, seconds: float, pythonpath: Path) -> float:
    """CPU us per tick of one variant over `seconds`, after 1.5 s of start-up."""
    argv = ["ip", "netns", "exec", netns, sys.executable, "-c", code, ",".join(ifaces)]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(pythonpath)})  # fmt: skip
    assert child.stdout is not None and child.stdin is not None and child.stderr is not None
    lines = 0

    def drain() -> None:
        nonlocal lines
        assert child.stdout is not None
        for _ in child.stdout:
            lines += 1

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        time.sleep(1.5)
        cpu0, lines0 = tree_cpu_ns(child.pid), lines
        time.sleep(seconds)
        cpu1, lines1 = tree_cpu_ns(child.pid), lines
    finally:
        child.stdin.close()
        child.terminate()
        child.wait()
        reader.join(timeout=5)
    if lines1 == lines0:
        raise SystemExit(f"bench_agent_parts: a variant wrote nothing: {child.stderr.read().decode()[-800:]}")
    return (cpu1 - cpu0) / 1e3 / (lines1 - lines0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--only", default=",".join(VARIANTS))
    parser.add_argument("--previous", type=Path, help="another checkout's src/: adds agent-previous")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    names = args.only.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"bench_agent_parts: no variant {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    runs = [(n, VARIANTS[n], SRC) for n in names]
    if args.previous:
        runs.append(("agent-previous", VARIANTS["agent"], args.previous.resolve()))
    found: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    with veth_namespace("ap") as (netns, ifaces):
        for index in range(args.rounds):
            for name, code, path in runs if index % 2 == 0 else runs[::-1]:
                found[name].append(per_tick(netns, ifaces, code, args.seconds, path))
            print(json.dumps({"round": index + 1, **{n: round(v[-1], 1) for n, v in found.items()}}), flush=True)
    summary = {n: {"median": statistics.median(v), "min": min(v), "max": max(v)} for n, v in found.items()}
    print("CPU us per tick, median [min-max]")
    for name, figures in summary.items():
        print(f"   {name:<16} {figures['median']:7.1f}  [{figures['min']:.1f}-{figures['max']:.1f}]")
    if args.json:
        args.json.write_text(json.dumps({"benchmark": "agent_parts", "cpus": os.cpu_count(), **summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
