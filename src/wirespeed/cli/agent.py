"""`wirespeed agent ...`: what runs on the nodes on the controller's behalf (and `agent check`, run here)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from wirespeed import __version__
from wirespeed.cli.common import (
    CONTEXT,
    Count,
    Ctx,
    Seconds,
    cluster_options,
    json_option,
    pass_ctx,
    resolve_remote,
)
from wirespeed.core.errors import ExitStatus, UsageError, WirespeedError
from wirespeed.engine.remote import check_agents


@click.group("agent", context_settings=CONTEXT)
def agent() -> None:
    """What runs on the nodes on the controller's behalf."""


@agent.command("check")
@cluster_options
@json_option
@pass_ctx
def agent_check(
    ctx: Ctx, cluster_file: Path | None, hosts: str | None, user: str | None, json_mode: bool
) -> ExitStatus:
    """Check that every node runs wirespeed at this version, shipping this controller's own where it is missing
    (a zipapp in the node's ~/.cache/wirespeed, run by its python3 3.11+), unless the cluster file sets
    agent = [...] for the node."""
    out = ctx.output(json_mode)
    remote = resolve_remote(out, cluster_file, hosts, user)
    checks = check_agents(remote, say=lambda line: out.message(f"wirespeed: {line}"))
    if json_mode:
        out.data(
            [
                {
                    "node": c.node,
                    "ok": c.ok,
                    "version": c.version,
                    "agent": c.agent,
                    "file": c.file,
                    "python": c.python,
                    "message": c.message,
                }
                for c in checks
            ]
        )
    else:
        for check in checks:
            out.console.print(("ok    " if check.ok else "FAIL  ") + check.message, markup=False)
    return ExitStatus.OK if all(c.ok for c in checks) else ExitStatus.FINDING


@agent.command("facts")
@click.option("--node", required=True, help="The name the controller knows this node by.")
@click.option("--root-parts", is_flag=True, help="Only what needs root to read: kernel log, firewall, fix's files.")
@pass_ctx
def agent_facts(ctx: Ctx, node: str, root_parts: bool) -> None:
    """Print this node's facts as JSON (what `discover` reads on every node); with --root-parts only what needs
    root to read (the kernel log, the firewall), for `--become` to read through sudo."""
    from wirespeed.adapters.source import LiveSource
    from wirespeed.core.fabric.facts import to_jsonable
    from wirespeed.engine.collect import collect, collect_root_parts

    if root_parts:
        ctx.output(True).data(to_jsonable(collect_root_parts(LiveSource())))
        return
    ctx.output(True).data(collect(LiveSource(), node).to_json())


@agent.command("probe")
@click.option("--node", required=True)
@click.option("--ifaces", required=True, help="Comma-separated fabric interfaces.")
@click.option("--duration", type=Seconds(60), default=2.0, show_default=True, help="Seconds to beacon and listen.")
@click.option("--token", required=True, help="Identifies this probe run; other runs' frames are ignored.")
@pass_ctx
def agent_probe(ctx: Ctx, node: str, ifaces: str, duration: float, token: str) -> None:
    """Beacon and listen on the fabric interfaces; print what was heard as JSON (needs root)."""
    from wirespeed.adapters import l2probe

    if not l2probe.can_probe():
        raise UsageError("the cabling probe needs root (raw L2 frames)", hint="--become, or --no-probe")
    result = l2probe.probe(node, [i for i in ifaces.split(",") if i], token, duration)
    ctx.output(True).data(result.to_json())


@agent.command("lock", hidden=True)
@click.option("--holder", "holder_json", required=True, help="Who asks, as JSON (what, user, host, pid, since_utc).")
@click.option("--wait", is_flag=True, help="Queue behind the holder instead of refusing.")
@click.option("--wait-limit", "wait_s", type=Seconds(86400), default=3600.0, show_default=True,
              help="Seconds --wait queues at most; then it says busy (exit 3).")  # fmt: skip
def agent_lock(holder_json: str, wait: bool, wait_s: float) -> None:
    """Hold this node's bench lock until stdin closes: one JSON line says `locked`, or `busy` (exit 3) with the
    holder, or `waiting` for it first (with --wait)."""
    import json

    from wirespeed.adapters.benchlock import hold
    from wirespeed.core.cluster.benchlock import Holder

    try:
        holder = Holder.from_json(json.loads(holder_json))
    except ValueError:
        holder = None
    if holder is None:
        raise UsageError("--holder: not a holder", hint='{"what": ..., "user": ..., "host": ..., "pid": ..., ...}')
    sys.exit(hold(holder, wait, wait_s))


@agent.command("sample")
@click.option("--node", required=True, help="The name the controller knows this node by.")
@click.option("--ifaces", required=True, help="Comma-separated interfaces to read.")
@click.option("--interval", type=Seconds(60), default=0.5, show_default=True, help="Seconds between samples.")
@click.option("--count", type=Count(0, 10**9), default=0, help="Stop after this many samples (0: until stdin closes).")
def agent_sample(node: str, ifaces: str, interval: float, count: int) -> None:
    """Stream this node's NIC counters and per-core CPU as JSON lines until stdin closes (used by `watch`)."""
    import re

    from wirespeed.engine.sampling import stream_samples

    if not node or not node.isprintable() or node != node.strip():
        raise UsageError(f"--node {node!r}: not a node name", hint="the name the cluster file gives the node")
    names = [i for i in ifaces.split(",") if i]
    # A Linux interface name: 1-15 printable bytes without a space, `/` or `:` (and never `.` or `..`, which would
    # make /sys/class/net/NAME a directory above the interfaces).
    bad = [i for i in names if not re.fullmatch(r"(?:(?![/:])[!-~]){1,15}", i) or i in (".", "..")]
    if bad:  # none at all is fine: the node's CPU is still sampled
        raise UsageError(f"--ifaces: {bad[0]!r} is not an interface name", hint="--ifaces enp1s0f0np0,enp1s0f1np1")
    stream_samples(node, names, interval, count)


@agent.command("snapshot")
@click.option("--node", required=True)
@pass_ctx
def agent_snapshot(ctx: Ctx, node: str) -> None:
    """Record this node's snapshot and print it as base64 tar.gz in JSON (used by `wirespeed snapshot`)."""
    import base64
    import datetime
    import io
    import tarfile
    import tempfile

    from wirespeed.adapters.source import LiveSource, RecordingSource
    from wirespeed.engine.collect import collect

    with tempfile.TemporaryDirectory(prefix="wirespeed-agent-") as work:
        root = Path(work) / node
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        facts = collect(RecordingSource(LiveSource(), root, node, stamp, __version__), node)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            archive.add(root, arcname=node)
    ctx.output(True).data(
        {"node": node, "facts": facts.to_json(), "tar_gz_b64": base64.b64encode(buffer.getvalue()).decode()}
    )


@agent.command("apply")
@click.option("--token", required=True, help="Names this fix's journal on the node (a new one for every apply).")
@click.option("--ops", "ops_json", required=True, help="JSON list of operations.")
@click.option("--rollback-after", type=Seconds(3600), default=20.0, show_default=True)
@click.option("--kind", type=click.Choice(["fix", "revert"]), default="fix", show_default=True)
@click.option("--reverts", default=None, help="The token of the fix this revert undoes (marked reverted on confirm).")
@click.option("--pause-after", type=Count(1, 10**6), hidden=True, help="Tests only: stop after N operations.")
@pass_ctx
def agent_apply(
    ctx: Ctx, token: str, ops_json: str, rollback_after: float, kind: str, reverts: str | None, pause_after: int | None
) -> None:
    """Journal the old values (in /var/lib/wirespeed/fix-journal), start the rollback timer, then apply the
    operations; the timer restores every one of them unless `agent confirm` comes in time."""
    import json

    from wirespeed.core.fixplan import operation_from_json
    from wirespeed.engine import fixjournal

    try:
        ops = [operation_from_json(item) for item in json.loads(ops_json)]
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--ops: not a list of operations ({exc})") from None
    fixjournal.check_token(token)
    answer = fixjournal.apply_journaled(token, ops, rollback_after, kind=kind, reverts=reverts, pause_after=pause_after)
    ctx.output(True).data(answer.to_json())


@agent.command("confirm")
@click.option("--token", required=True)
def agent_confirm(token: str) -> None:
    """Tell a pending rollback timer that the controller still reaches this node: the changes stay."""
    from wirespeed.engine import fixjournal

    fixjournal.confirm(fixjournal.check_token(token))


@agent.command("rollback")
@click.option("--token", required=True)
@pass_ctx
def agent_rollback(ctx: Ctx, token: str) -> None:
    """Restore what a fix not yet confirmed changed, now (the controller gives up on it)."""
    from wirespeed.engine import fixjournal

    ctx.output(True).data(fixjournal.rollback(fixjournal.check_token(token)).to_json())


@agent.command("fix-journal")
@click.option("--settle", is_flag=True, help="First wait for every pending rollback timer to decide.")
@pass_ctx
def agent_fix_journal(ctx: Ctx, settle: bool) -> None:
    """Print, as JSON, the state of each of this node's fix journals and the latest fix `fix --revert` would undo."""
    from wirespeed.engine import fixjournal

    ctx.output(True).data(fixjournal.query(settle=settle).to_json())


@agent.command("rollback-timer", hidden=True)
@click.option("--token", required=True)
def agent_rollback_timer(token: str) -> None:
    """Restore from the journal unless confirmed in time (started, detached, by `agent apply`)."""
    from wirespeed.engine import fixjournal

    fixjournal.run_timer(fixjournal.check_token(token))


@agent.command("unsudoers", hidden=True)
@click.option("--user", "user", required=True)
def agent_unsudoers(user: str) -> None:
    """Remove init's sudoers drop-in and the root-owned agents (run as root, by that drop-in; `init --undo`)."""
    from wirespeed.core.cluster.become import SUDOERS_MARK, SYSTEM_AGENT_DIR, sudoers_path

    path = Path(sudoers_path(user))
    if path.exists():
        first = path.read_text(errors="replace").splitlines()[:1]
        if not first or not first[0].startswith(SUDOERS_MARK):
            raise WirespeedError(f"{path} is not wirespeed's: left alone")
        path.unlink()
    agents = Path(SYSTEM_AGENT_DIR)
    for old in agents.glob("agent-*.pyz") if agents.is_dir() else ():
        old.unlink()
    if agents.is_dir() and not any(agents.iterdir()):
        agents.rmdir()


@agent.group("toolchain", hidden=True)
def agent_toolchain() -> None:
    """The node's side of `wirespeed setup`."""


@agent_toolchain.command("probe")
@pass_ctx
def toolchain_probe(ctx: Ctx) -> None:
    """What this node has for the ladder, as JSON: packages, GPUs, nvcc, OpenMPI, NCCLs, setup's builds."""
    from wirespeed.adapters import toolchain_node

    ctx.output(True).data(toolchain_node.probe())


@agent_toolchain.command("packages")
@click.argument("packages", nargs=-1, required=True)
def toolchain_packages(packages: tuple[str, ...]) -> None:
    """apt-get install these (run as root, through --become)."""
    from wirespeed.adapters import toolchain_node
    from wirespeed.core.toolchain import KNOWN_PACKAGES

    unknown = [p for p in packages if p not in KNOWN_PACKAGES]
    if unknown:
        raise UsageError(f"not a package setup installs: {', '.join(unknown)}")
    sys.exit(toolchain_node.install_packages(packages))


@agent_toolchain.command("receive")
@click.option("--name", required=True, help="The tarball's file name (nccl-2.28.9-1.tar.gz).")
def toolchain_receive(name: str) -> None:
    """Keep a source tarball sent on stdin (base64) for a build: for nodes without internet."""
    from wirespeed.adapters import toolchain_node

    sys.exit(toolchain_node.receive(name, sys.stdin))


@agent_toolchain.command("build")
@click.option("--step", type=click.Choice(["nccl", "nccl-tests", "select"]), required=True)
@click.option("--release", default="")
@click.option("--arch", default="")
@click.option("--key", default="")
@click.option("--nccl-home", default="")
@click.option("--nccl-library", default="")
@click.option("--nccl-version", default="")
def toolchain_build(
    step: str, release: str, arch: str, key: str, nccl_home: str, nccl_library: str, nccl_version: str
) -> None:
    """Build NCCL or nccl-tests (or select a built tree), saying every two seconds how far it is; the last line is
    `done ...` or `failed ...` (with the kept log)."""
    import os

    from wirespeed.adapters import toolchain_node as node

    try:
        if step == "nccl":
            cuda_home, _, _ = node.find_cuda()
            if cuda_home is None:
                raise node.BuildError("no nvcc (CUDA_HOME, /usr/local/cuda, PATH)")
            built = node.build_nccl(release, arch, cuda_home, os.cpu_count() or 1)
            print(f"done nccl {built['library']}", flush=True)
        elif step == "nccl-tests":
            made = node.build_nccl_tests(release, arch, key, nccl_home, nccl_library, nccl_version,
                                         os.cpu_count() or 1)  # fmt: skip
            print(f"done nccl-tests {node.root() / 'nccl-tests' / key} against {made['nccl_library']}", flush=True)
        else:
            why = node.select(key)
            if why is not None:
                raise node.BuildError(why)
            print(f"done select {node.root() / 'nccl-tests' / key}", flush=True)
    except node.BuildError as exc:
        print(f"failed {exc}", flush=True)
        sys.exit(1)
