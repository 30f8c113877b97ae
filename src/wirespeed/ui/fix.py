"""`wirespeed fix`'s plan for people: files as a diff against what the node has, then the changes made now, then
what is left out. Pure: it renders; the command prints."""

from __future__ import annotations

from rich.text import Text

from wirespeed.core.fixplan import FixPlan, file_diff


def fix_plan_view(plan: FixPlan) -> Text:
    """One line per change, each node's lines under its name; added diff lines green, removed red."""
    lines: list[Text] = []
    if not plan.operations and not plan.notes:
        lines.append(Text("nothing to change"))
    for node in sorted(set(plan.operations) | set(plan.notes)):
        lines.append(Text(f"{node}:"))
        for op in plan.operations.get(node, []):
            if op.kind == "file":
                lines.append(Text(f"  write {op.target}   [{op.reason}]"))
                for line in file_diff(op.target, plan.current.get(node, {}).get(op.target), op.value):
                    style = "green" if line.startswith("+") else ("red" if line.startswith("-") else "")
                    lines.append(Text(f"    {line}", style=style))
            elif op.kind == "unlink":
                lines.append(Text(f"  remove {op.target}   [{op.reason}]"))
            else:
                net = "  (network: rolled back unless confirmed)" if op.network else ""
                value = op.value or "(none)"
                lines.append(Text(f"  {op.kind} {op.target} -> {value}   [{op.reason}]{net}"))
        for note in plan.notes.get(node, []):
            lines.append(Text(f"  note: {note}"))
    return Text("\n").join(lines)
