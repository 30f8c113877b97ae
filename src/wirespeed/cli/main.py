"""The command line's root: the `wirespeed` group, the commands it is made of, and `main`, the one place where
exceptions become a one-line message and every outcome an exit status (wirespeed.core.errors.ExitStatus).

Nothing imports this module but the entry points (console script, `python -m wirespeed`, tests): the command
modules take what they share from wirespeed.cli.common, so the imports only go one way."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import redirect_stdout

import click

from wirespeed import __version__
from wirespeed.cli.agent import agent
from wirespeed.cli.bench import bench_cmd
from wirespeed.cli.commission import commission_cmd
from wirespeed.cli.common import CONTEXT, Ctx
from wirespeed.cli.fix import fix_cmd
from wirespeed.cli.importing import import_cmd
from wirespeed.cli.init import init_cmd
from wirespeed.cli.nodes import check_cmd, discover_cmd, exec_cmd, snapshot_cmd
from wirespeed.cli.output import Environment
from wirespeed.cli.runs import baseline_group, compare_cmd, report_cmd, runs_cmd
from wirespeed.cli.setup import setup_cmd
from wirespeed.cli.switch import switch_group
from wirespeed.cli.testbed import testbed
from wirespeed.cli.tune import tune_group
from wirespeed.cli.watch import watch_cmd
from wirespeed.core.errors import ExitStatus, WirespeedError


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "--version", "-V", prog_name="wirespeed", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """wirespeed: commission and measure a GPU cluster's interconnect (TCP, RDMA, NCCL) at the wire."""
    if ctx.obj is None:
        ctx.obj = Ctx(Environment(), debug)
    else:
        ctx.obj.debug = ctx.obj.debug or debug


cli.add_command(exec_cmd)
cli.add_command(agent)
cli.add_command(fix_cmd)
cli.add_command(commission_cmd)
cli.add_command(bench_cmd)
cli.add_command(runs_cmd)
cli.add_command(baseline_group)
cli.add_command(compare_cmd)
cli.add_command(report_cmd)
cli.add_command(watch_cmd)
cli.add_command(discover_cmd)
cli.add_command(check_cmd)
cli.add_command(snapshot_cmd)
cli.add_command(testbed)
cli.add_command(import_cmd)
cli.add_command(init_cmd)
cli.add_command(setup_cmd)
cli.add_command(switch_group)
cli.add_command(tune_group)


def main(argv: Sequence[str] | None = None, env: Environment | None = None) -> int:
    """Run the CLI and return its exit status; the only place exceptions become messages.

    Commands return their status (an ExitStatus, or a command's own status for `exec`; None is OK): click hands
    it back from `cli.main` with standalone_mode=False, from nested groups too."""
    env = env or Environment()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    ctx_obj = Ctx(env, debug, tuple(args))
    try:
        # click writes --help and --version to sys.stdout; send them where this environment says.
        with redirect_stdout(env.stdout):
            status = cli.main(args=args, prog_name="wirespeed", standalone_mode=False, obj=ctx_obj)
    except SystemExit as exc:  # click's own way out after a broken pipe, or a library's sys.exit
        return exc.code if isinstance(exc.code, int) else (ExitStatus.OK if exc.code is None else ExitStatus.FINDING)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        env.stderr.write(f"wirespeed: error: {exc.format_message()}\n")
        return exc.exit_code
    except click.exceptions.Abort:
        env.stderr.write("wirespeed: aborted\n")
        return ExitStatus.INTERRUPTED
    except WirespeedError as exc:
        if ctx_obj.debug:
            raise
        env.stderr.write(f"wirespeed: error: {exc}\n")
        return exc.exit_status
    except KeyboardInterrupt:
        env.stderr.write("wirespeed: interrupted\n")
        return ExitStatus.INTERRUPTED
    except BrokenPipeError:
        return ExitStatus.BROKEN_PIPE
    return int(status) if isinstance(status, int) else ExitStatus.OK
