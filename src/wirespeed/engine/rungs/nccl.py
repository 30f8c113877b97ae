"""The NCCL rungs, one per collective: nccl-tests through mpirun from the first node, NCCL's environment derived
from discovery, the raw output written line by line as it comes, and nccl-tests' own JSON fetched back (its
environment dump filtered) as the figure of record. Files: `nccl-<collective>/command.txt`, `hostfile`,
`nccl-tests.out`, `nccl-tests.json`."""

from __future__ import annotations

import shlex
import threading
from dataclasses import replace

from wirespeed.adapters.files import Unwritable
from wirespeed.adapters.slurm import SrunTransport
from wirespeed.core.cluster.inventory import Node
from wirespeed.core.fabric.facts import Unknown
from wirespeed.core.fabric.gdr import platform
from wirespeed.core.ladder import diagnose_collective, rdma_reference
from wirespeed.core.mpi_failure import read_failure
from wirespeed.core.nccl import (
    NcclOptions,
    NcclPlan,
    for_slurm,
    forwarded_library_path,
    hostfile,
    mpirun_argv,
    node_memory,
    plan_nccl,
    read_run,
    stored_json,
)
from wirespeed.core.records.options import BenchOptions
from wirespeed.core.records.results import Ceiling, NotRunnable, RungResult
from wirespeed.core.tools import nccl_tests
from wirespeed.engine.remote import Remote
from wirespeed.engine.rungs.base import Measured, Rung, RungContext


def nccl_options(options: BenchOptions, cluster_env: tuple[tuple[str, str], ...] = ()) -> NcclOptions:
    """The rung's options; the cluster file's `[nccl.env]` first, so that `--env` wins over it."""
    return NcclOptions(options.collectives, options.min_bytes, options.max_bytes, options.iterations,
                       env=(*cluster_env, *options.env), timeout_s=options.nccl_timeout_s)  # fmt: skip


def _is_root(remote: Remote, node: Node) -> bool:
    result = remote.run(node, ["id", "-u"], timeout_s=10)
    return result.ok and result.stdout.strip() == "0"


class NcclRung(Rung):
    layer = "nccl"

    def __init__(self, collective: str) -> None:
        self.collective = collective
        self.name = f"nccl-{collective}"

    def plan(self, ctx: RungContext) -> NcclPlan | NotRunnable:
        """One rank per GPU on every node, the message sizes capped from each node's free memory as discovery read
        it (no command runs here: a plan is pure over the facts)."""
        options = nccl_options(ctx.options, ctx.remote.cluster.nccl_env)
        facts, cabling = ctx.discovery.facts, ctx.discovery.cabling
        first = plan_nccl(facts, cabling, self.collective, options)
        if isinstance(first, NotRunnable):
            return first
        memory = {name: node_memory(facts[name]) for name in first.nodes}
        plan = plan_nccl(facts, cabling, self.collective, options, memory)
        if isinstance(plan, NotRunnable):
            return plan
        transport = ctx.remote.transport(ctx.remote.cluster.node(plan.launcher))
        if ctx.remote.cluster.nccl_env:
            shown = " ".join(f"{k}={v}" for k, v in ctx.remote.cluster.nccl_env)
            plan = replace(plan, notes=(*plan.notes, f"from the cluster file's [nccl.env]: {shown}"))
        if isinstance(transport, SrunTransport):
            names = {name: transport.slurm_name(ctx.remote.cluster.node(name)) for name in plan.nodes}
            plan = for_slurm(plan, names, transport.job_id)
        return plan

    def run(self, ctx: RungContext, plan: NcclPlan, measured: Measured) -> None:
        remote, run_dir, options = ctx.remote, ctx.run_dir, nccl_options(ctx.options)
        launcher = remote.cluster.node(plan.launcher)
        library_path = dict(plan.env).get("LD_LIBRARY_PATH") or forwarded_library_path(plan)
        loads = ["env", f"LD_LIBRARY_PATH={library_path}"] if library_path else []  # as its rank will load it
        usage = remote.run(launcher, [*loads, plan.binary, "-h"], timeout_s=60)
        json_path = None
        if nccl_tests.supports_json_output(usage.stdout + usage.stderr):
            json_path = f"/tmp/wirespeed-{run_dir.name}-{self.collective}.json"
            remote.run(launcher, ["rm", "-f", json_path], timeout_s=10)
        argv = mpirun_argv(plan, options, json_path, as_root=_is_root(remote, launcher))
        run_dir.write_text(f"{self.name}/command.txt", shlex.join(argv) + "\n")
        run_dir.write_text(f"{self.name}/hostfile", hostfile(plan))
        lines: list[str] = []
        unwritten: list[Unwritable] = []  # the disk filled: the output is still read (and judged), no longer kept
        with run_dir.open_text(f"{self.name}/nccl-tests.out") as raw:
            # stderr joins stdout (mpirun's own errors) so neither pipe can fill unread; argv stays a list.
            process = remote.start(launcher, ["sh", "-c", 'exec "$@" 2>&1', "sh", *argv])

            def pump() -> None:
                for line in process.lines():
                    lines.append(line)
                    if not unwritten:
                        try:
                            raw.write(line + "\n")
                        except Unwritable as exc:
                            unwritten.append(exc)

            reader = threading.Thread(target=pump, daemon=True)
            reader.start()
            reader.join(timeout=options.timeout_s)
            timed_out = reader.is_alive()
            outcome = process.stop(grace_s=2.0 if timed_out else 10.0)
            reader.join(timeout=5)
        if unwritten:
            raise unwritten[0]
        json_text = None
        if json_path is not None:
            fetched = remote.run(launcher, ["cat", json_path], timeout_s=30)
            remote.run(launcher, ["rm", "-f", json_path], timeout_s=10)
            if fetched.ok and fetched.stdout.strip():
                json_text = fetched.stdout
                try:
                    run_dir.write_text(f"{self.name}/nccl-tests.json", stored_json(json_text))
                except ValueError:
                    run_dir.write_text(f"{self.name}/nccl-tests.json.unreadable", "nccl-tests JSON was not JSON\n")
        output = "\n".join(lines) + "\n"
        reading = read_run(self.collective, output, json_text, _platform(ctx, plan))
        measured.collective = reading.summary
        environment = " ".join(f"{k}={v}" if v is not None else k for k, v in plan.env)
        measured.notes += [
            n
            for n in (
                *plan.notes,
                plan.capped,
                *reading.notes,
                f"environment: {environment}",
                None if json_path else "this nccl-tests has no -J: figures from its text table",
            )
            if n
        ]
        launch = read_failure(output)  # what OpenMPI (4.1 or 5) said of a launch that failed, if it said it
        if timed_out:
            stopped = f"stopped after {options.timeout_s:.0f} s (--nccl-timeout)"
            measured.failure = f"{stopped}; {launch.line}" if launch else stopped
        elif reading.summary is None:
            measured.failure = reading.error or outcome.message
        elif not outcome.ok:
            measured.failure = launch.line if launch else f"mpirun: {outcome.message}"
        elif reading.summary.wrong:
            measured.failure = f"nccl-tests found {reading.summary.wrong} wrong elements"

    def diagnose(self, ctx: RungContext, plan: NcclPlan, result: RungResult) -> Ceiling:
        rdma = rdma_reference(ctx.earlier, ctx.discovery.facts)
        return diagnose_collective(result, plan.rdma_devices, plan.fabric_interfaces, plan.line_rate_gbps, rdma)


def _platform(ctx: RungContext, plan: NcclPlan) -> str | None:
    """GB10's unified memory or discrete GPUs, from the GPUs discovery found on the rung's nodes (what GPUDirect
    RDMA's state means there); None when a node's GPUs are unknown or the nodes differ."""
    gpus: list[tuple[str, str | None]] = []
    for name in plan.nodes:
        found = ctx.discovery.facts[name].gpus if name in ctx.discovery.facts else Unknown("not discovered")
        if isinstance(found, Unknown):
            return None
        gpus += [(g.name, g.compute_capability if isinstance(g.compute_capability, str) else None) for g in found]
    return platform(gpus)
