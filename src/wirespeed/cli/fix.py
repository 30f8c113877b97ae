"""`wirespeed fix`: show the plan the engine makes from the checks, apply it with --yes, undo it with --revert."""

from __future__ import annotations

from pathlib import Path

import click

from wirespeed.cli.common import Ctx, cluster_options, json_option, pass_ctx, resolve_remote
from wirespeed.core.become import HOW
from wirespeed.core.errors import ExitStatus, WirespeedError


@click.command("fix")
@cluster_options
@click.option("--yes", is_flag=True, help="Apply the plan (without it, only show it).")
@click.option("--revert", is_flag=True, help="Restore what the last `fix --yes` replaced.")
@click.option(
    "--record",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the replaced values are kept (default ~/.local/state/wirespeed/last-fix.json).",
)
@click.option(
    "--rollback-after",
    type=float,
    default=20.0,
    show_default=True,
    help="Seconds a node waits for confirmation before undoing a network change by itself.",
)
@json_option
@pass_ctx
def fix_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    yes: bool,
    revert: bool,
    record: Path | None,
    rollback_after: float,
    json_mode: bool,
) -> ExitStatus:
    """Turn what the checks found into changes per node (sysctls, fabric MTU, IPv6, halves left down); apply them
    with --yes, keep the old values, and undo them with --revert."""
    from wirespeed.engine import fix as fixing
    from wirespeed.ui.fix import fix_plan_view

    out = ctx.output(json_mode)
    record_path = record or fixing.default_record()
    remote = resolve_remote(out, cluster_file, hosts, user)
    if revert:
        made = fixing.FixPlan(fixing.revert_plan(record_path))
    else:
        made = fixing.plan_fix(remote, lambda text: out.message(f"wirespeed: {text}"))
    plan, notes = made.operations, made.notes
    shown = {node: [op.to_json() for op in ops] for node, ops in plan.items()}
    if not json_mode:
        out.console.print(fix_plan_view(made))
    if not yes:
        if json_mode:
            out.data({"plan": shown, "notes": notes, "applied": False})
        elif plan:
            out.message("wirespeed: nothing applied; run again with --yes to apply")
        return ExitStatus.OK
    refused = fixing.needs_root(plan, made.unprivileged)
    if refused:  # nothing is applied anywhere: half a fix is worse than none
        for line in refused:
            out.message(f"wirespeed: {line}")
        raise WirespeedError(f"nothing applied: {len(refused)} node(s) need root for this plan", hint=HOW)
    outcomes = fixing.apply_plan(remote, plan, rollback_s=rollback_after)
    if not revert:
        fixing.write_record(record_path, outcomes)
    failed = False
    for outcome in outcomes:
        if outcome.error:
            failed = True
            out.message(f"wirespeed: {outcome.error}")
        for entry in outcome.applied:
            if not entry["ok"]:
                failed = True
                out.message(f"wirespeed: {outcome.node}: {entry['op']['target']}: {entry['error']}")
        if outcome.rolled_back:
            failed = True
            out.message(f"wirespeed: {outcome.node}: not reachable after the change: it restored the old values itself")
    if json_mode:
        out.data(
            {
                "plan": shown,
                "applied": True,
                "record": str(record_path),
                "nodes": {
                    o.node: {
                        "applied": o.applied,
                        "error": o.error,
                        "confirmed": o.confirmed,
                        "rolled_back": o.rolled_back,
                    }
                    for o in outcomes
                },
            }
        )
    elif not revert:
        out.message(f"wirespeed: the replaced values are in {record_path}; `wirespeed fix --revert` restores them")
    return ExitStatus.FINDING if failed else ExitStatus.OK
