"""Processes on this machine, for the benchmarks: their CPU time by thread, and those of one network namespace
(a node of the emulated cluster) or whose command line says something (bench_instrument, bench_agent_parts,
bench_nccl_nodes)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def task_cpu_ns(pid: int) -> int:
    """CPU time of every thread of `pid` (ns, from schedstat: user and system, finer than the 10 ms ticks of stat)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tasks:
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
    return total


def children(pid: int) -> list[int]:
    """Every descendant of `pid` now (the agent's compiled reader, say)."""
    parents: dict[int, int] = {}
    for other in pids():
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{other}/stat").read_text()
            parents[other] = int(stat[stat.rindex(")") + 2 :].split()[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        frontier += kids
    return found


def tree_cpu_ns(pid: int) -> int:
    """CPU time of `pid` and of every descendant it has now: what one agent costs, its compiled reader included."""
    return sum(task_cpu_ns(p) for p in (pid, *children(pid)))


def pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def netns_pids(netns: str) -> list[int]:
    """Processes whose network namespace is `netns` (a node of the emulated cluster: its sshd and what runs there)."""
    inode = os.stat(f"/run/netns/{netns}").st_ino
    found = []
    for pid in pids():
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{pid}/ns/net").st_ino == inode:
                found.append(pid)
    return found


def cmdline_pids(needle: str) -> list[int]:
    found = []
    for pid in pids():
        with contextlib.suppress(OSError):
            if needle in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                found.append(pid)
    return found
