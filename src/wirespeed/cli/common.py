"""What every command module shares: the per-invocation Ctx, the common options, the nodes a command acts on.

Command modules import from here (and from output), never from wirespeed.cli.main: main imports them all, so
anything they took from it would be an import cycle."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

import click

from wirespeed.adapters.slurm import SrunTransport
from wirespeed.cli.output import Environment, Output
from wirespeed.core.cluster.become import Become
from wirespeed.core.cluster.inventory import Cluster
from wirespeed.core.cluster.slurm import Launcher
from wirespeed.core.errors import InventoryError, UsageError
from wirespeed.engine.clusters import resolve_cluster
from wirespeed.engine.remote import Remote

CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 120}
# A command that passes a command line on (`exec`, `watch --run`, `testbed shell` and `exec`): wirespeed's options
# end at the first argument, and everything from there on is the command's, as it was given. An unknown option
# before it is refused: with click's `ignore_unknown_options`, `-oProxyCommand=ssh ...` was read as the short
# options -o -P -r ... and its `h` as -h (help, exit 0).
PASS_THROUGH: dict[str, Any] = {**CONTEXT, "allow_interspersed_args": False}


class Ctx:
    """Per-invocation state handed to every command."""

    def __init__(self, env: Environment, debug: bool, argv: tuple[str, ...] = ()) -> None:
        self.env = env
        self.debug = debug
        self.argv = argv  # the command line after `wirespeed`, for the records that say how they were made

    def output(self, json_mode: bool) -> Output:
        return Output(self.env, json_mode)


pass_ctx = click.make_pass_decorator(Ctx)


def runs_option(func: Any) -> Any:
    """Where run directories are written and read (`bench`, `commission`, `runs`, `compare`, `report`, ...)."""
    return click.option("--runs", "runs_dir", type=click.Path(path_type=Path), default=Path("runs"),
                        show_default=True, help="Where run directories are.")(func)  # fmt: skip


def json_option(func: Any) -> Any:
    return click.option("--json", "json_mode", is_flag=True, help="Machine output on stdout; messages on stderr.")(func)


LAUNCHER_META = "wirespeed.launcher"


def _remember_launcher(ctx: click.Context, _: click.Parameter, value: str) -> None:
    ctx.meta[LAUNCHER_META] = Launcher(value)


BECOME_META, ASK_META = "wirespeed.become", "wirespeed.ask_become_pass"


def _remember(key: str) -> Any:
    def remember(ctx: click.Context, _: click.Parameter, value: bool) -> None:
        ctx.meta[key] = ctx.meta.get(key, False) or value

    return remember


def cluster_options(func: Any) -> Any:
    func = click.option(
        "--ask-become-pass", is_flag=True, expose_value=False, callback=_remember(ASK_META),
        help="Ask once, on this terminal, for the sudo password of the nodes (implies --become). It goes to sudo's "
        "stdin on each node; it is never in a command line, a log or a file.",
    )(func)  # fmt: skip
    func = click.option(
        "--become", is_flag=True, expose_value=False, callback=_remember(BECOME_META),
        help="Run the steps that need root on the nodes (cabling probe, kernel log, firewall, fix) through sudo.",
    )(func)  # fmt: skip
    func = click.option(
        "--launcher",
        type=click.Choice([item.value for item in Launcher]),
        default=Launcher.AUTO.value,
        show_default=True,
        envvar="WIRESPEED_LAUNCHER",
        expose_value=False,
        callback=_remember_launcher,
        help="How processes start on the nodes: srun inside a Slurm allocation that holds them (auto), or ssh.",
    )(func)
    func = click.option("--user", "-l", help="User for --hosts entries without user@.")(func)
    func = click.option("--hosts", help="Comma-separated hosts (user@host:port allowed) instead of a cluster file.")(
        func
    )
    func = click.option(
        "--cluster",
        "cluster_file",
        type=click.Path(path_type=Path),
        help="Cluster file (TOML) naming the nodes.",
    )(func)
    return func


def resolve_remote(out: Output, cluster_file: Path | None, hosts: str | None, user: str | None) -> Remote:
    """The nodes a command acts on (`resolve_cluster`); a choice not made on the command line ($WIRESPEED_CLUSTER,
    Slurm, init's cluster file) is said on stderr, and with none of them the command stops with one line."""
    launcher = click.get_current_context().meta.get(LAUNCHER_META, Launcher.AUTO)

    def say(text: str) -> None:
        out.message(f"wirespeed: {text}")

    resolved = resolve_cluster(cluster_file, hosts, user, launcher)
    if resolved.note:
        say(resolved.note)
    meta = click.get_current_context().meta
    become = become_for(resolved.cluster, bool(meta.get(BECOME_META)), bool(meta.get(ASK_META)))
    if resolved.slurm is not None:
        transport = SrunTransport(resolved.slurm.job_id, resolved.slurm.slurm_names)
        return Remote(resolved.cluster, transport_factory=lambda node: transport, say=say, become=become)
    return Remote(resolved.cluster, say=say, become=become)


def become_for(cluster: Cluster, become: bool, ask: bool) -> Become | None:
    """sudo for the privileged steps when asked for (--become, --ask-become-pass) or when the cluster file says so:
    `become = "sudo"`, or `"sudoers"` after `init --sudoers` (its drop-in runs the root-owned agent, no password);
    the password asked for once here."""
    wanted = cluster.extra.get("become", "")
    if wanted not in ("", "sudo", "sudoers"):
        raise InventoryError(f'{cluster.source}: become = {wanted!r}: "sudo", or "sudoers" (written by init --sudoers)',
                             hint='become = "sudo"')  # fmt: skip
    if wanted == "sudoers" and not ask:
        from wirespeed.adapters.agentzip import agent_content

        return Become(system_agent=agent_content().name)
    if not (become or ask or wanted == "sudo"):
        return None
    if not ask:
        return Become()
    return Become(ask_become_pass(cluster.name))


def ask_become_pass(cluster: str) -> str:
    """The sudo password of the nodes, asked once on this terminal (never echoed, never kept beyond this process)."""
    try:
        with open("/dev/tty"):
            pass
    except OSError:
        raise UsageError("--ask-become-pass needs a terminal to ask on",
                         hint="NOPASSWD sudo on the nodes, or `wirespeed init --sudoers`") from None  # fmt: skip
    password = getpass.getpass(f"sudo password on the nodes of {cluster}: ")
    if not password:
        raise UsageError("no password given", hint="--become alone for sudo that asks for none")
    return password


class FiniteRange(click.FloatRange):
    """A number between two bounds, both required: every number a user gives wirespeed has a documented maximum,
    which `--help` shows beside the option (`[default: 0.5; 0<x<=60]`). It refuses `nan` (it compares false with
    every bound, so click.FloatRange lets it in) and the infinities (`1e309` is one: a timer of `inf` seconds never
    fires), each in one line naming the option."""

    name = "number"

    def __init__(self, min: float, max: float, *, min_open: bool = False, max_open: bool = False) -> None:
        super().__init__(min, max, min_open=min_open, max_open=max_open)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


class Seconds(FiniteRange):
    """A duration, interval, timeout or wait in seconds, at most `high`; above zero unless `zero_ok` (a wait of 0
    is "do not wait"; a timer, an interval or a duration of 0 is meaningless)."""

    name = "seconds"

    def __init__(self, high: float, *, low: float = 0, zero_ok: bool = False) -> None:
        super().__init__(low, high, min_open=low == 0 and not zero_ok)


class Percent(FiniteRange):
    """A percentage, 0 to 100 (a threshold of 0 counts every change)."""

    name = "percent"

    def __init__(self, low: float = 0, high: float = 100) -> None:
        super().__init__(low, high)


class Count(click.IntRange):
    """A whole number between two bounds, both required (repeats, iterations, streams, nodes, an MTU in bytes);
    `nan`, `inf` and `1e309` are not whole numbers, and click says so in one line naming the option."""

    name = "count"

    def __init__(self, low: int, high: int, unit: str = "count") -> None:
        super().__init__(low, high)
        self.unit = unit  # what --help names it: COUNT, or BYTES for an MTU

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        return self.unit.upper()
