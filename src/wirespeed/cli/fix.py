"""`wirespeed fix`: show the plan the engine makes from the checks, apply it with --yes, undo it with --revert."""

from __future__ import annotations

from pathlib import Path

import click

from wirespeed.cli.common import Ctx, Seconds, cluster_options, json_option, pass_ctx, resolve_remote
from wirespeed.core.cluster.become import HOW
from wirespeed.core.errors import ExitStatus, WirespeedError


@click.command("fix")
@cluster_options
@click.option("--yes", is_flag=True, help="Apply the plan (without it, only show it).")
@click.option(
    "--revert",
    is_flag=True,
    help="Restore what the last `fix --yes` replaced: from the record, else from each node's own fix journal.",
)
@click.option(
    "--record",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the replaced values are kept (default ~/.local/state/wirespeed/last-fix.json).",
)
@click.option(
    "--rollback-after",
    type=Seconds(3600, low=1),
    default=20.0,
    show_default=True,
    help="Seconds a node waits for confirmation before undoing the changes by itself.",
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
    """Turn what the checks found into changes per node (sysctls, fabric MTU, IPv6, halves left down, a ring's
    routes); apply them with --yes, keep the old values (here and in each node's journal), and undo them with
    --revert."""
    from wirespeed.engine import fix as fixing
    from wirespeed.ui.fix import fix_plan_view

    out = ctx.output(json_mode)

    def say(text: str) -> None:
        out.message(f"wirespeed: {text}")

    record_path = record or fixing.default_record()
    remote = resolve_remote(out, cluster_file, hosts, user)
    if revert:
        made = fixing.plan_revert(remote, record_path, say)
        for node, source in sorted(made.sources.items()):
            say(f"{node}: the old values come from {source}")
    else:
        made = fixing.plan_fix(remote, say)
    plan, notes = made.operations, made.notes
    shown = {node: [op.to_json() for op in ops] for node, ops in plan.items()}
    if not json_mode:
        out.console.print(fix_plan_view(made))
    # A node that could not be read is not in the plan: the answer is incomplete (its line was said above).
    incomplete = ExitStatus.NOT_MEASURED if made.unread else ExitStatus.OK
    if not yes:
        if json_mode:
            out.data({"plan": shown, "notes": notes, "applied": False, "unread": list(made.unread)})
        elif plan:
            out.message("wirespeed: nothing applied; run again with --yes to apply")
        return incomplete
    refused = fixing.needs_root(plan, made.unprivileged)
    if refused:  # nothing is applied anywhere: half a fix is worse than none
        for line in refused:
            out.message(f"wirespeed: {line}")
        raise WirespeedError(f"nothing applied: {len(refused)} node(s) need root for this plan", hint=HOW)
    outcomes = fixing.apply_plan(
        remote,
        plan,
        rollback_s=rollback_after,
        kind="revert" if revert else "fix",
        reverts=made.reverts,
        say=say,
        on_applied=None if revert else (lambda applied: fixing.write_record(record_path, applied, confirmed=False)),
    )
    if not revert:
        fixing.write_record(record_path, outcomes)
        fixing.pin_new_addresses(remote, {o.node: plan[o.node] for o in outcomes if o.confirmed}, say)
    failed = False
    for outcome in outcomes:
        for line in outcome.failures():
            failed = True
            out.message(f"wirespeed: {line}")
        if revert and not outcome.error and not outcome.rolled_back:
            restored = len(outcome.changed())
            say(f"{outcome.node}: restored {restored} value(s) and file(s) from {made.sources.get(outcome.node)}")
    if json_mode:
        out.data(
            {
                "plan": shown,
                "applied": True,
                "record": str(record_path),
                "unread": list(made.unread),
                "nodes": {
                    o.node: {**o.to_json(), **({"restored_from": made.sources.get(o.node)} if revert else {})}
                    for o in outcomes
                },
            }
        )
    elif not revert:
        out.message(f"wirespeed: the replaced values are in {record_path}; `wirespeed fix --revert` restores them")
    if made.unread:  # as `check`: 3 before 1, what was not read may be what failed
        return incomplete
    return ExitStatus.FINDING if failed else ExitStatus.OK
