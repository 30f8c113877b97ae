"""What the instrument costs, three ways side by side in one run: the node's agent, the whole pipeline from a node's
counters to the controller's meter and record, and the observer effect on a CPU-bound measurement.

1. node: `agent sample` of 8 veth interfaces (4 pairs in a namespace of its own) at 100 samples/s, its CPU per
   sample (all threads of it and its children, the compiled reader too: /proc/<pid>/task/*/schedstat, ns), as
   shipped and with every line from Python, against `ethtool -S` on each of the 8 and parsing it; and the same
   two agents with mlx5-sized driver sets: `mlx5_shim.c`, preloaded, answers their ethtool ioctls for the veths
   with the real fixture's names padded with per-channel and per-priority counters to several hundred, and for
   each read one copy of a reading made ahead (the driver's copy), so the figure is the agent's work.
2. pipeline: a 2-node emulated cluster (2 cables, 4 halves a node), `ClusterSampler` + the recorder's work
   (`WireRecorder`: parse, record line, `Meter.add`) at `--interval` 0.01 s: CPU of every process involved (the
   agents, sshd on the nodes, the ssh clients and ControlMaster here, this process's threads) over a steady
   window, per node-sample.
3. observer: on a 2-node cluster with unshaped halves (`--half-rate none`: the CPU is the ceiling),
   `wirespeed bench tcp-single` alternated with the same iperf3 argv run by hand between the same namespaces.

Needs root; makes its own testbeds and namespace with a random prefix and removes them, even on Ctrl-C.

    sudo .venv/bin/python benchmarks/bench_instrument.py [--only node,pipeline,observer] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from procs import cmdline_pids, netns_pids, task_cpu_ns, tree_cpu_ns
from vethns import veth_namespace

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real" / "ethtool"  # travels with the repo
MLX5_FIXTURE = FIXTURE / "ethtool_S_mlx5_xdp_kernel5.15_nonzero_only.txt"

# The agent's loop; with mlx5-sized driver sets, `mlx5_shim.c` (LD_PRELOAD) answers its ethtool ioctls.
AGENT = r"""
import sys
from wirespeed.engine.sampling import stream_samples

stream_samples(sys.argv[1], sys.argv[2].split(","), float(sys.argv[3]))
"""


def mlx5_names() -> tuple[str, ...]:
    """A string set the size of a real mlx5 interface's: the fixture's names, the PHY and RDMA counters, and the
    per-channel and per-priority counters a 20-channel, 8-priority port adds (several hundred in all)."""
    from wirespeed.core.parsers.ethtool import parse_stats

    base = list(parse_stats(MLX5_FIXTURE.read_text()))
    for name in ("tx_bytes_phy", "rx_bytes_phy", "tx_packets_phy", "rx_packets_phy",
                 "tx_vport_rdma_unicast_bytes", "rx_vport_rdma_unicast_bytes"):  # fmt: skip
        if name not in base:
            base.append(name)
    per_channel = (
        "packets",
        "bytes",
        "csum_complete",
        "csum_unnecessary",
        "xdp_drop",
        "xdp_redirect",
        "lro_packets",
        "lro_bytes",
        "gro_packets",
        "gro_bytes",
        "ecn_mark",
        "removed_vlan_packets",
    )
    names = base + [f"{d}{c}_{s}" for c in range(20) for d in ("rx", "tx") for s in per_channel]
    names += [f"{d}_prio{p}_{s}" for p in range(8) for d in ("rx", "tx")
              for s in ("bytes", "packets", "pause", "pause_duration", "pause_transition", "discards")]  # fmt: skip
    return tuple(dict.fromkeys(n for n in names if len(n.encode()) < 32))


def mlx5_shim(work: Path, ifaces: list[str]) -> dict[str, str]:
    """The environment that gives `ifaces` an mlx5-sized driver: the shim built here with cc, its string set, and
    100 readings whose traffic counters grow, made ahead (the copy per read is then the driver's copy)."""
    import struct

    names = mlx5_names()
    shim = work / "mlx5_shim.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(HERE / "mlx5_shim.c"), "-ldl"], check=True)
    (work / "names").write_bytes(b"".join(n.encode().ljust(32, b"\0") for n in names))
    growing = {i for i, n in enumerate(names) if "bytes" in n or "packets" in n}
    fmt = struct.Struct(f"={len(names)}Q")
    base = [1_000_000 + 7 * i for i in range(len(names))]
    (work / "readings").write_bytes(
        b"".join(fmt.pack(*(v + 12_500_000 * k if i in growing else v for i, v in enumerate(base))) for k in range(100))
    )
    return {
        "LD_PRELOAD": str(shim),
        "MLX5_SHIM_NAMES": str(work / "names"),
        "MLX5_SHIM_READINGS": str(work / "readings"),
        "MLX5_SHIM_IFACES": ",".join(ifaces),
    }


ETHTOOL = r"""
import json, resource, subprocess, sys, time
from wirespeed.core.parsers.ethtool import parse_stats

ifaces, rounds = sys.argv[1].split(","), int(sys.argv[2])

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def once():
    for iface in ifaces:
        parse_stats(subprocess.run(["ethtool", "-S", iface], capture_output=True, text=True, check=True).stdout)

once()
c0, w0 = cpu(), time.perf_counter()
for _ in range(rounds):
    once()
print(json.dumps({"cpu_s": (cpu() - c0) / rounds, "wall_s": (time.perf_counter() - w0) / rounds}))
"""


# ------------------------------------------------------------------------------------------------ CPU accounting
def agent_pids() -> list[int]:
    """The agents' processes: `agent sample` and its compiled steady reader."""
    return cmdline_pids("agent sample") + cmdline_pids("steady-reader-")


class CpuWindow:
    """CPU of a set of processes (found again at each reading) between `start()` and `stop()`, in ns per group."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]]) -> None:
        self.groups = groups
        self.first: dict[str, dict[int, int]] = {}

    def read(self) -> dict[str, dict[int, int]]:
        return {name: {pid: task_cpu_ns(pid) for pid in find()} for name, find in self.groups.items()}

    def start(self) -> None:
        self.first = self.read()

    def stop(self) -> dict[str, int]:
        """ns per group; a process that started inside the window counts from 0 (none should, in a steady state)."""
        last = self.read()
        return {
            name: sum(ns - self.first.get(name, {}).get(pid, 0) for pid, ns in now.items())
            for name, now in last.items()
        }


def median_spread(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def sh(argv: list[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


# ------------------------------------------------------------------------------------------------------ 1. node


def agent_per_sample(
    netns: str, ifaces: list[str], interval: float, seconds: float, env_extra: dict[str, str]
) -> dict[str, float]:
    """One agent at `interval`: its CPU per line over `seconds` of steady state (start-up left out), from outside,
    its compiled reader included."""
    env = {**os.environ, "PYTHONPATH": str(SRC), **env_extra}
    argv = ["ip", "netns", "exec", netns, sys.executable, "-c", AGENT, "bench", ",".join(ifaces), str(interval)]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert child.stdout is not None and child.stdin is not None
    lines = 0
    sizes = 0

    def drain() -> None:
        nonlocal lines, sizes
        assert child.stdout is not None
        for line in child.stdout:
            lines += 1
            sizes += len(line)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        time.sleep(1.5)  # imports and the first samples
        cpu0, lines0, bytes0 = tree_cpu_ns(child.pid), lines, sizes
        time.sleep(seconds)
        cpu1, lines1, bytes1 = tree_cpu_ns(child.pid), lines, sizes
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        reader.join(timeout=5)
    if lines1 == lines0:  # it died or never started: no figure, and say so (not a division by zero)
        raise SystemExit(f"bench_instrument: an agent wrote no line in {seconds:g} s: {shlex.join(argv)}")
    count = lines1 - lines0
    return {"cpu_us": (cpu1 - cpu0) / 1e3 / count, "samples": count, "line_bytes": (bytes1 - bytes0) / count}


def ethtool_per_sample(netns: str, ifaces: list[str], rounds: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = sh(["ip", "netns", "exec", netns, "env", f"PYTHONPATH={env['PYTHONPATH']}", sys.executable, "-c", ETHTOOL,
              ",".join(ifaces), str(rounds)])  # fmt: skip
    data = json.loads(out.strip().splitlines()[-1])
    return {"cpu_us": data["cpu_s"] * 1e6, "wall_us": data["wall_s"] * 1e6}


def bench_node(repeats: int, seconds: float) -> dict[str, Any]:
    """The agent as shipped (its compiled steady reader built beforehand, as a node builds it once) and the same
    agent with every line from Python, on veths and on mlx5-sized sets, and `ethtool -S`, alternated."""
    from wirespeed.adapters import steadyreader

    compiled = steadyreader.build() is not None
    python = {"WIRESPEED_AGENT_COMPILED": "0"}
    arms: dict[str, list[dict[str, float]]] = {"veth": [], "veth-python": [], "mlx5": [], "mlx5-python": [],
                                               "ethtool": []}  # fmt: skip
    with veth_namespace("ib") as (netns, ifaces), tempfile.TemporaryDirectory(prefix="ws-mlx5-") as work:
        mlx5 = mlx5_shim(Path(work), ifaces)
        envs = {"veth": {}, "veth-python": python, "mlx5": mlx5, "mlx5-python": {**mlx5, **python}}
        for _ in range(repeats):  # alternated, medians
            for mode, env in envs.items():
                arms[mode].append(agent_per_sample(netns, ifaces, 0.01, seconds, env))
            arms["ethtool"].append(ethtool_per_sample(netns, ifaces, 30))
    result: dict[str, Any] = {"interfaces": len(ifaces), "compiled_reader": compiled, "mlx5_names": len(mlx5_names())}
    for name, runs in arms.items():
        result[name] = {
            "cpu_us": median_spread([r["cpu_us"] for r in runs]),
            **({"line_bytes": statistics.median(r["line_bytes"] for r in runs)} if "line_bytes" in runs[0] else {}),
        }
    for name in ("veth", "veth-python", "mlx5", "mlx5-python"):
        result[f"ratio_{name.replace('-', '_')}"] = result["ethtool"]["cpu_us"][0] / result[name]["cpu_us"][0]
    return result


# -------------------------------------------------------------------------------------------------- testbeds
@contextlib.contextmanager
def testbed(half_rate: str, cables: int) -> Iterator[tuple[str, Path]]:
    """A 2-node direct testbed of our own (random prefix), always taken down."""
    prefix = f"ib{uuid.uuid4().hex[:4]}-"
    wirespeed = [sys.executable, "-m", "wirespeed"]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    try:
        out = subprocess.run(
            [*wirespeed, "testbed", "up", "--prefix", prefix, "--cables", str(cables), "--half-rate", half_rate,
             "--json"], check=True, capture_output=True, text=True, env=env,
        ).stdout  # fmt: skip
        cluster = Path(json.loads(out)["cluster_file"])
        yield prefix, cluster
    finally:
        subprocess.run([*wirespeed, "testbed", "down", "--prefix", prefix], capture_output=True, env=env, check=False)


# -------------------------------------------------------------------------------------------------- 2. pipeline
def bench_pipeline(repeats: int, seconds: float, interval: float) -> dict[str, Any]:
    from wirespeed.core.fabric.meter import Cable, NodeLayout
    from wirespeed.engine.clusters import load_cluster_file
    from wirespeed.engine.remote import Remote
    from wirespeed.engine.wire import WireRecorder

    halves = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")
    runs = []
    with testbed("1gbit", 2) as (_, cluster_file), tempfile.TemporaryDirectory(prefix="wsib-") as work:
        control = Path(work) / "cm"
        control.mkdir()
        remote = Remote(load_cluster_file(cluster_file), control_dir=control)
        nodes = [node.name for node in remote.cluster.nodes]
        layouts = [NodeLayout(n, (Cable("port 0", halves[:2], 2.0), Cable("port 1", halves[2:], 2.0))) for n in nodes]
        me = os.getpid()
        groups: dict[str, Callable[[], list[int]]] = {
            "agents": lambda: [p for n in nodes for p in netns_pids(n) if p in agent_pids()],
            "sshd": lambda: [p for n in nodes for p in netns_pids(n) if p not in agent_pids()],
            "ssh": lambda: [p for p in cmdline_pids(str(control)) if p != me],
            "controller": lambda: [me],
        }
        with remote.owned():
            remote.run(remote.cluster.node(nodes[0]), ["true"])  # connections up, agents shipped, before timing
            for _ in range(repeats):
                record_path = Path(work) / "samples.jsonl"
                with WireRecorder(remote, layouts, interval, record_path.open("w")):
                    time.sleep(2.0)  # the agents' start-up
                    window = CpuWindow(groups)
                    lines0 = record_path.read_text().count("\n")
                    window.start()
                    time.sleep(seconds)
                    used = window.stop()
                    lines1 = record_path.read_text().count("\n")
                samples = lines1 - lines0
                runs.append({name: ns / 1e3 / samples for name, ns in used.items()} | {"samples": samples})
    result: dict[str, Any] = {"interval_s": interval, "window_s": seconds, "nodes": 2, "halves_per_node": 4}
    for name in ("agents", "sshd", "ssh", "controller"):
        result[name] = median_spread([r[name] for r in runs])
    totals = [sum(r[n] for n in ("agents", "sshd", "ssh", "controller")) for r in runs]
    result["total_us"] = median_spread(totals)
    result["samples_per_s"] = statistics.median(r["samples"] for r in runs) / seconds
    return result


# -------------------------------------------------------------------------------------------------- 3. observer
def bench_observer(repeats: int, seconds: int, live_arm: bool = True, plain_arm: bool = True) -> dict[str, Any]:
    from wirespeed.core.tools import iperf3

    wirespeed = [sys.executable, "-m", "wirespeed"]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    ours: list[float] = []
    ours_live: list[float] = []
    ours_wire: list[float] = []
    theirs: list[float] = []
    argv_seen: dict[str, Any] = {}
    with testbed("none", 1) as (prefix, cluster_file), tempfile.TemporaryDirectory(prefix="wsib-") as work:
        runs = Path(work) / "runs"
        nodes = [f"{prefix}1", f"{prefix}2"]

        def by_wirespeed(live: bool = False) -> None:
            before = set(runs.glob("*")) if runs.exists() else set()
            argv = [*wirespeed, "bench", "tcp-single", "--cluster", str(cluster_file), "--seconds", str(seconds),
                    "--runs", str(runs)]  # fmt: skip
            if live:
                in_a_terminal(argv, env)  # the full-screen live view drawn the whole time, as a person sees it
            else:
                subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env, check=False)
            (run,) = set(runs.glob("*")) - before
            data = json.loads((run / "tcp-single.json").read_text())
            (ours_live if live else ours).append(_tool_gbps(data))
            wire = _wire_gbps(data)
            if wire is not None:
                ours_wire.append(wire)
            if not argv_seen:
                argv_seen.update(_argv_from(run, nodes))

        def by_hand() -> None:
            server, client = argv_seen["server"], argv_seen["client"]
            listener = subprocess.Popen(["ip", "netns", "exec", server["node"], *server["argv"]],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            try:
                time.sleep(0.5)
                out = sh(["ip", "netns", "exec", client["node"], *client["argv"]])
            finally:
                try:
                    listener.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    listener.kill()
                    listener.wait()
            parsed = iperf3.parse_json(out)
            assert parsed.receiver_gbps is not None
            theirs.append(parsed.receiver_gbps)

        by_wirespeed()  # warm-up, and the argv wirespeed used
        by_hand()
        ours.clear()
        ours_wire.clear()
        theirs.clear()
        for i in range(repeats):  # each round said as it ends: a run cut by a time limit keeps what it measured
            if plain_arm:
                by_wirespeed()
                by_hand()
                if live_arm:
                    by_wirespeed(live=True)
            elif i % 2:  # live view and by hand only: which goes first alternates, so drift favours neither
                by_wirespeed(live=True)
                by_hand()
            else:
                by_hand()
                by_wirespeed(live=True)
            plain = f" plain {ours[-1]:.2f}" if plain_arm else ""
            live = f" live {ours_live[-1]:.2f}" if live_arm else ""
            ratio = (ours if plain_arm else ours_live)[-1] / theirs[-1]
            print(
                f"   round {i + 1}/{repeats} ({time.strftime('%H:%M:%S')}):{plain}{live}"
                f" by hand {theirs[-1]:.2f} Gb/s, ratio {ratio:.3f}",
                flush=True,
            )
    result: dict[str, Any] = {
        "seconds": seconds,
        "repeats": repeats,
        "by_hand_gbps": median_spread(theirs),
        "wirespeed_all": ours,
        "wirespeed_live_all": ours_live,
        "by_hand_all": theirs,
        "argv": argv_seen,
    }
    if ours_live:
        result["wirespeed_live_gbps"] = median_spread(ours_live)
    if ours_wire:
        result["wirespeed_wire_gbps"] = median_spread(ours_wire)
    if ours:
        result["wirespeed_gbps"] = median_spread(ours)
        result["ratio"] = result["wirespeed_gbps"][0] / result["by_hand_gbps"][0]
        result["paired"] = paired_ratios(ours, theirs)
    if live_arm:
        result["ratio_live"] = result["wirespeed_live_gbps"][0] / result["by_hand_gbps"][0]
        result["paired_live"] = paired_ratios(ours_live, theirs)
    return result


def paired_ratios(ours: list[float], theirs: list[float], resamples: int = 10000) -> dict[str, float]:
    """Each round's wirespeed/by-hand ratio: their median and its 95% bootstrap interval (seeded: the same
    figures give the same interval)."""
    import random

    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    draw = random.Random(20)
    medians = sorted(statistics.median(draw.choices(ratios, k=len(ratios))) for _ in range(resamples))
    return {"median": statistics.median(ratios), "low": medians[int(0.025 * resamples)],
            "high": medians[int(0.975 * resamples) - 1], "rounds": len(ratios)}  # fmt: skip


def in_a_terminal(argv: list[str], env: dict[str, str], columns: int = 120, lines: int = 40) -> int:
    """Run `argv` on a pseudo-terminal of `columns` x `lines` (what it draws is read and dropped)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    terminal_env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color"}
    child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=terminal_env, start_new_session=True)
    os.close(slave)

    def drain() -> None:
        with contextlib.suppress(OSError):
            while os.read(master, 65536):
                pass

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    code = child.wait()
    reader.join(timeout=5)
    os.close(master)
    return code


def _tool_gbps(data: Any) -> float:
    """The rung's figure: the receiver's rate of its one flow (`forward_gbps` of `<rung>.json`)."""
    if isinstance(data, dict) and isinstance(data.get("forward_gbps"), int | float):
        return float(data["forward_gbps"])
    raise ValueError(f"no forward_gbps in tcp-single.json: {json.dumps(data)[:300]}")


def _wire_gbps(data: Any) -> float | None:
    """What the sampler saw at the wire over the rung, where the rung records it."""
    for key in ("wire_gbps", "wire_forward_gbps"):
        if isinstance(data, dict) and isinstance(data.get(key), int | float):
            return float(data[key])
    return None


def _argv_from(run: Path, nodes: list[str]) -> dict[str, Any]:
    """The iperf3 server and client argv wirespeed ran, and where: the rung keeps the client's JSON as
    `tcp-single/iperf3-0-<node>-<iface>.json`; its addresses, port and duration rebuilt through the same
    `iperf3.server_argv`/`client_argv` the rung calls (one flow on a node with cores: pinned to core 0, `-A 0`)."""
    from wirespeed.core.tools import iperf3

    (path,) = sorted(run.glob("tcp-single/iperf3-0-*.json"))
    data = json.loads(path.read_text())
    start = data["start"]
    connected = start["connected"][0]
    client_node = next(n for n in nodes if path.name.startswith(f"iperf3-0-{n}-"))
    server_node = next(n for n in nodes if n != client_node)
    port = int(start["connecting_to"]["port"])
    seconds = int(start["test_start"]["duration"])
    client = iperf3.client_argv(connected["local_host"], connected["remote_host"], port, seconds=seconds, core=0)
    server = iperf3.server_argv(connected["remote_host"], port)
    return {"server": {"node": server_node, "argv": server}, "client": {"node": client_node, "argv": client}}


# ------------------------------------------------------------------------------------------------------- main
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="node,pipeline,observer")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs of each measurement")
    parser.add_argument("--seconds", type=float, default=8.0, help="steady window of each CPU measurement")
    parser.add_argument("--interval", type=float, default=0.01, help="sampling interval of the pipeline")
    parser.add_argument("--tcp-seconds", type=int, default=8)
    parser.add_argument("--tcp-repeats", type=int, default=5)
    parser.add_argument("--no-live-arm", action="store_true", help="observer: plain lines and by hand only")
    parser.add_argument("--no-plain-arm", action="store_true", help="observer: live view and by hand only")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_instrument: needs root (namespaces and testbeds)", file=sys.stderr)
        return 2
    only = set(args.only.split(","))
    if args.no_live_arm and args.no_plain_arm:
        print("bench_instrument: --no-live-arm and --no-plain-arm leave nothing to compare", file=sys.stderr)
        return 2
    sys.path.insert(0, str(SRC))
    report: dict[str, Any] = {"benchmark": "instrument", "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count()}
    rusage0 = resource.getrusage(resource.RUSAGE_SELF)
    del rusage0
    if "node" in only:
        node = report["node"] = bench_node(args.repeats, args.seconds)
        print(f"1. node side, one sample of {node['interfaces']} interfaces (CPU us, median [min-max])")
        reader = "compiled reader" if node["compiled_reader"] else "NO compiler: Python"
        for name, label in (("veth", f"agent sample, 8 veths ({reader})"),
                            ("veth-python", "the same, every line from Python"),
                            ("mlx5", f"agent sample, {node['mlx5_names']} mlx5-sized stats ({reader})"),
                            ("mlx5-python", "the same, every line from Python"),
                            ("ethtool", "ethtool -S x8 + parse")):  # fmt: skip
            m, lo, hi = node[name]["cpu_us"]
            size = f"  {node[name]['line_bytes']:.0f} B/line" if "line_bytes" in node[name] else ""
            print(f"   {label:50} {m:9.1f}  [{lo:.1f}-{hi:.1f}]{size}")
        arms = ("veth", "veth-python", "mlx5", "mlx5-python")
        ratios = ", ".join(f"{n} {node['ratio_' + n.replace('-', '_')]:.0f}x" for n in arms)
        print(f"   ratio ethtool/agent: {ratios}")
    if "pipeline" in only:
        pipe = report["pipeline"] = bench_pipeline(args.repeats, args.seconds, args.interval)
        print(f"2. whole pipeline at {args.interval:g} s, 2 nodes x 4 halves, {pipe['samples_per_s']:.0f} samples/s "
              "(CPU us per node-sample, median [min-max])")  # fmt: skip
        for name in ("agents", "sshd", "ssh", "controller", "total_us"):
            m, lo, hi = pipe[name]
            print(f"   {name:12} {m:9.1f}  [{lo:.1f}-{hi:.1f}]")
    if "observer" in only:
        obs = report["observer"] = bench_observer(
            args.tcp_repeats, args.tcp_seconds, live_arm=not args.no_live_arm, plain_arm=not args.no_plain_arm
        )
        print(f"3. observer effect, tcp-single {args.tcp_seconds} s on unshaped halves, A/B x{args.tcp_repeats} (Gb/s)")
        for name in ("wirespeed_gbps", "wirespeed_live_gbps", "by_hand_gbps", "wirespeed_wire_gbps"):
            if name in obs:
                m, lo, hi = obs[name]
                print(f"   {name:22} {m:8.2f}  [{lo:.2f}-{hi:.2f}]")
        for key, label in (("paired", "plain lines"), ("paired_live", "live view")):
            if key in obs:
                p = obs[key]
                print(
                    f"   wirespeed/by hand, {label}: median of {p['rounds']} rounds {p['median']:.3f}"
                    f" (95% interval {p['low']:.3f}-{p['high']:.3f})"
                )
    print(json.dumps(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
