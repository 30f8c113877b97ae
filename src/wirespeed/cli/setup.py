"""`wirespeed setup`: show what every node lacks for the ladder, and with --yes install and build it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from wirespeed.cli.bench import parse_env
from wirespeed.cli.common import Ctx, cluster_options, json_option, pass_ctx, resolve_remote
from wirespeed.core.errors import ExitStatus, UsageError


@click.command("setup")
@cluster_options
@click.argument("what", required=False, default="ladder")
@click.option("--yes", is_flag=True, help="Apply the plan (without it, only show it).")
@click.option(
    "--nccl",
    "nccl_mode",
    type=click.Choice(["auto", "source"]),
    default="auto",
    show_default=True,
    help="auto: the node's own NCCL where it has kernels for the GPU; source: build the pinned release anyway.",
)
@click.option(
    "--from",
    "from_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="A directory of source tarballs (nccl-RELEASE.tar.gz, nccl-tests-RELEASE.tar.gz) for nodes without "
    "internet; they are copied over the same ssh.",
)
@click.option("--env", "env", multiple=True, metavar="NAME[=VALUE]", help="For every rank of the smoke run.")
@click.option("--no-smoke", is_flag=True, help="Skip the small all_reduce across the nodes after the builds.")
@json_option
@pass_ctx
def setup_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    what: str,
    yes: bool,
    nccl_mode: str,
    from_dir: Path | None,
    env: tuple[str, ...],
    no_smoke: bool,
    json_mode: bool,
) -> ExitStatus:
    """Put what the ladder's rungs need on every node: perftest, iperf3, sockperf, OpenMPI (apt, as root with
    --become), an NCCL with kernels for the node's GPU (the node's own, else NCCL built from source for that
    architecture) and nccl-tests built with MPI against it, in one directory that is the same on every node.
    WHAT is `ladder` (the default), a layer (tcp, rdma, nccl) or a rung. A second run finds everything in place."""
    from wirespeed.core.toolchain import SetupOptions
    from wirespeed.engine import rungs
    from wirespeed.engine import setup as setting_up

    out = ctx.output(json_mode)

    def say(text: str) -> None:
        out.message(f"wirespeed: {text}")

    if what not in rungs.names():
        raise UsageError(f"setup {what!r}: not a rung or a layer", hint=f"one of {', '.join(rungs.names())}")
    pairs = parse_env(env)
    if from_dir is not None and not from_dir.is_dir():
        raise UsageError(f"--from {from_dir}: not a directory", hint="a directory of the source tarballs")
    options = SetupOptions(layers=setting_up.layers(what), nccl=nccl_mode)
    remote = resolve_remote(out, cluster_file, hosts, user)
    plan = setting_up.probe(remote, options, say)
    if json_mode and not yes:
        out.data(setting_up.SetupOutcome().record(plan).to_json())
        return ExitStatus.FINDING if plan.errors else ExitStatus.OK
    for line in setting_up.plan_lines(plan):
        out.message(line)
    outcome = setting_up.run(remote, plan, say, confirm=(lambda _: True) if yes else _confirm, from_dir=from_dir,
                             smoke_env=None if no_smoke else tuple(pairs),
                             show_only=not yes and not sys.stdin.isatty())  # fmt: skip
    if json_mode:
        out.data(outcome.record(plan).to_json())
    return ExitStatus.FINDING if outcome.failed else ExitStatus.OK


def _confirm(count: int) -> bool:
    return click.confirm(f"Apply these {count} step(s) on the nodes?")
