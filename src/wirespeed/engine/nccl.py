"""The NCCL rung on the nodes: nccl-tests through mpirun from the first node, NCCL's environment derived from
discovery, the wire sampled on every node while it runs, the raw output written line by line as it comes, and
nccl-tests' own JSON fetched back (its environment dump filtered) as the figure of record.
"""

from __future__ import annotations

import shlex
import threading
import time
from dataclasses import replace

from wirespeed.adapters.slurm import SrunTransport
from wirespeed.core.inventory import Node
from wirespeed.core.ladder import RungResult, diagnose_collective
from wirespeed.core.meter import layout_from_facts
from wirespeed.core.nccl import (
    NcclOptions,
    NcclPlan,
    NodeMemory,
    NotRunnable,
    for_slurm,
    hostfile,
    mpirun_argv,
    parse_gpu_free,
    parse_meminfo_available,
    plan_nccl,
    read_run,
    stored_json,
    supports_json_output,
)
from wirespeed.engine.bench import RunDirectory, WireRecorder
from wirespeed.engine.discover import Discovery
from wirespeed.engine.remote import Remote


def rung_name(collective: str) -> str:
    return f"nccl-{collective}"


def _memory(remote: Remote, node: Node) -> NodeMemory:
    smi = remote.run(node, ["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits"], timeout_s=30)
    meminfo = remote.run(node, ["cat", "/proc/meminfo"], timeout_s=10)
    return NodeMemory(
        parse_gpu_free(smi.stdout) if smi.ok else (),
        parse_meminfo_available(meminfo.stdout) if meminfo.ok else None,
    )


def _is_root(remote: Remote, node: Node) -> bool:
    result = remote.run(node, ["id", "-u"], timeout_s=10)
    return result.ok and result.stdout.strip() == "0"


def prepare(remote: Remote, discovery: Discovery, collective: str, options: NcclOptions) -> NcclPlan | NotRunnable:
    """The plan for one collective, with the message sizes capped from each node's free memory right now."""
    first = plan_nccl(discovery.facts, discovery.cabling, collective, options)
    if isinstance(first, NotRunnable):
        return first
    memory = {name: _memory(remote, remote.cluster.node(name)) for name in first.nodes}
    return plan_nccl(discovery.facts, discovery.cabling, collective, options, memory)


def run_collective(
    remote: Remote,
    discovery: Discovery,
    collective: str,
    options: NcclOptions,
    run_dir: RunDirectory,
    interval: float = 0.5,
) -> RungResult:
    """One nccl-tests collective across every node; skipped with the reason and fix when it cannot run."""
    rung = rung_name(collective)
    plan = prepare(remote, discovery, collective, options)
    if isinstance(plan, NotRunnable):
        return RungResult(rung, "skipped", plan.reason, plan.fix)
    launcher = remote.cluster.node(plan.launcher)
    transport = remote.transport(launcher)
    if isinstance(transport, SrunTransport):
        names = {name: transport.slurm_name(remote.cluster.node(name)) for name in plan.nodes}
        plan = for_slurm(plan, names, transport.job_id)
    usage = remote.run(launcher, [plan.binary, "-h"], timeout_s=60)
    json_path = None
    if supports_json_output(usage.stdout + usage.stderr):
        json_path = f"/tmp/wirespeed-{run_dir.path.name}-{collective}.json"
        remote.run(launcher, ["rm", "-f", json_path], timeout_s=10)
    argv = mpirun_argv(plan, options, json_path, as_root=_is_root(remote, launcher))
    run_dir.write_text(f"{rung}/command.txt", shlex.join(argv) + "\n")
    run_dir.write_text(f"{rung}/hostfile", hostfile(plan))
    layouts = [layout_from_facts(discovery.facts[n]) for n in plan.nodes]
    started = time.monotonic()
    raw = (run_dir.path / rung / "nccl-tests.out").open("w", encoding="utf-8")
    lines: list[str] = []
    with WireRecorder(remote, layouts, interval, run_dir.path / f"{rung}.samples.jsonl") as recorder:
        # stderr joins stdout (mpirun's own errors) so neither pipe can fill unread; argv stays a list.
        process = remote.start(launcher, ["sh", "-c", 'exec "$@" 2>&1', "sh", *argv])

        def pump() -> None:
            for line in process.lines():
                lines.append(line)
                raw.write(line + "\n")
                raw.flush()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        reader.join(timeout=options.timeout_s)
        timed_out = reader.is_alive()
        outcome = process.stop(grace_s=2.0 if timed_out else 10.0)
        reader.join(timeout=5)
        raw.close()
    stdout = "\n".join(lines) + "\n"
    json_text = None
    if json_path is not None:
        fetched = remote.run(launcher, ["cat", json_path], timeout_s=30)
        remote.run(launcher, ["rm", "-f", json_path], timeout_s=10)
        if fetched.ok and fetched.stdout.strip():
            json_text = fetched.stdout
            try:
                run_dir.write_text(f"{rung}/nccl-tests.json", stored_json(json_text))
            except ValueError:
                run_dir.write_text(f"{rung}/nccl-tests.json.unreadable", "nccl-tests JSON was not valid JSON\n")
    reading = read_run(collective, stdout, json_text)
    notes = tuple(
        n
        for n in (
            *plan.notes,
            plan.capped,
            *reading.notes,
            "environment: " + " ".join(f"{k}={v}" if v is not None else k for k, v in plan.env),
            None if json_path else "this nccl-tests has no -J: figures from its text table",
        )
        if n
    )
    result = RungResult(
        rung,
        "ran",
        wire=recorder.figures(since=1.0),
        seconds=time.monotonic() - started,
        collective=reading.summary,
        notes=notes,
    )
    if timed_out:
        return replace(result, status="failed", reason=f"stopped after {options.timeout_s:.0f} s (--nccl-timeout)")
    if reading.summary is None:
        return replace(result, status="failed", reason=reading.error or outcome.message)
    if not outcome.ok:
        return replace(result, status="failed", reason=f"mpirun: {outcome.message}")
    if reading.summary.wrong:
        return replace(result, status="failed", reason=f"nccl-tests found {reading.summary.wrong} wrong elements")
    ceiling = diagnose_collective(result, plan.rdma_devices, plan.fabric_interfaces, plan.line_rate_gbps)
    return replace(result, ceiling=ceiling)
