"""`make demo`: the user's journey on the emulated cluster, as a Spark owner makes it on real nodes.

Two Spark nodes and one cable come up as Sparks ship with NVIDIA's link-local netplan, which NVIDIA documents for
one cable (`testbed up --as-shipped --mdns`: one half of the port addressed link-local, its twin not, MTU 1500, the
kernel's socket buffers, ssh announced over mDNS); wirespeed is installed once, on the first node only (as pipx
leaves it); the user logs in there, runs `wirespeed init` (finds the other node, sets up ssh between them, writes
the cluster file) and `wirespeed commission --yes` (ships itself to the other node, checks, measures, fixes,
measures again, writes the report). The report is kept in `demo-out/` (it would vanish with the node's home), and
everything else is torn down; the last lines say what the fixes moved and why (`story`). Nothing here runs on the
emulated cluster that a user could not type.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from wirespeed.cli.main import main as cli
from wirespeed.core.errors import WirespeedError
from wirespeed.core.records.fixrecord import FixRecord
from wirespeed.core.records.report import RunReport
from wirespeed.core.records.results import RungResult, RungStatus
from wirespeed.engine.report import load_report
from wirespeed.testbed.state import load_state

OUT = Path("demo-out")


def step(title: str, *argv: str) -> int:
    print(f"\n=== {title}\n$ wirespeed {' '.join(argv)}", flush=True)
    code = cli(list(argv))
    sys.stdout.flush()
    return code


def _ran(report: RunReport, phase: str, rung: str) -> RungResult | None:
    found = report.run.rung(rung, phase)
    return found if found is not None and found.status is RungStatus.RAN and found.forward_gbps else None


def _halves(result: RungResult) -> int:
    """How many halves carried the rung's traffic: the distinct client ends of flows that moved data."""
    return len({f.flow.source for f in result.flows if not f.error and (f.tool_gbps or 0) > 0})


def _ceiling(result: RungResult) -> tuple[str, str]:
    ceiling = result.ceiling
    return (ceiling.name, (ceiling.evidence or ("",))[0]) if ceiling is not None else ("unknown", "")


def _fixed(fix: FixRecord | None) -> list[str]:
    """What the applied fix changed, in words: the kinds of operation in `fix.json`'s plan."""
    ops = [(node, op) for node, node_ops in (fix.plan.items() if fix is not None else ()) for op in node_ops]
    said: list[str] = []
    addressed = {(node, op.target) for node, op in ops if op.kind == "addr"}
    if addressed:
        said.append(f"gave every half an address on a subnet of its own ({len(addressed)} interfaces readdressed)")
    mtus = sorted({op.value for _, op in ops if op.kind == "mtu"})
    if mtus:
        said.append(f"raised the fabric MTU to {', '.join(mtus)} (fewer, larger packets)")
    if any(op.kind == "sysctl" for _, op in ops):
        said.append("enlarged the TCP socket buffers")
    return said


def story(run_dir: Path) -> list[str]:
    """The demo's closing lines: tcp-halves before and after the fixes, with its ceilings, and why it moved, in words
    a newcomer follows. Empty when the run has no tcp-halves in both phases."""
    try:
        report = load_report(run_dir)
    except WirespeedError:
        return []
    before, after = _ran(report, "before", "tcp-halves"), _ran(report, "after", "tcp-halves")
    if before is None or after is None or before.forward_gbps is None or after.forward_gbps is None:
        return []
    was, now = before.forward_gbps, after.forward_gbps
    (was_ceiling, was_why), (now_ceiling, now_why) = _ceiling(before), _ceiling(after)
    was_halves, now_halves = _halves(before), _halves(after)
    lines = [
        f"tcp-halves (TCP on every half at once): {was:.2f} Gb/s on {was_halves} half(s), ceiling {was_ceiling}"
        f" -> {now:.2f} Gb/s on {now_halves} half(s), ceiling {now_ceiling} ({now / was:.1f}x)",
        f"  before: {was_why}",
        f"  after:  {now_why}",
    ]
    if now_halves > was_halves:
        lines.append(
            f"Before the fixes, only {was_halves} of the {now_halves} halves carried traffic: a Spark ships with an "
            "address on one half of each port and none on its twin, so each port ran at half its capacity."
        )
    fixed = _fixed(report.fix)
    if fixed:
        lines.append(f"wirespeed's fixes {', '.join(fixed[:-1])}{' and ' if len(fixed) > 1 else ''}{fixed[-1]}.")
    if now_ceiling == "wire":
        lines.append("Now every half carries traffic and the cable's own line rate is the limit: nothing left to tune.")
    return lines


def run() -> int:
    prefix = "spark-" if load_state("spark-") is None else "demo-"  # never touch a testbed the user has up
    first = f"{prefix}1"
    runs = OUT.resolve() / "runs"  # the nodes share this machine's files, apart from their homes
    shutil.rmtree(runs, ignore_errors=True)
    failures = 0
    try:
        if step("two Spark nodes, one cable, as they ship; wirespeed on the first", "testbed", "up", "--prefix",
                prefix, "--cables", "1", "--as-shipped", "--mdns") != 0:  # fmt: skip
            return 1
        on_first = ("testbed", "shell", "--prefix", prefix, first, "--")
        # The checks come with commission, before and after its fixes: as shipped, init's own (link.halves) would
        # only say now what commission shows and mends next.
        failures += step(f"on {first}: find the other node, set up ssh between them", *on_first, "wirespeed", "init",
                         "--yes", "--no-check") != 0  # fmt: skip
        failures += step(f"on {first}: commission the cluster, fixes applied", *on_first, "wirespeed", "commission",
                         "--yes", "--seconds", "3", "--runs", str(runs)) != 0  # fmt: skip
        reports = sorted(runs.glob("*/report.html"))
        if reports:
            print(f"\n=== the report\n{reports[-1]}  (open it in a browser; `wirespeed report --runs {runs}` again)")
            lines = story(reports[-1].parent)
            if lines:
                print("\n=== what moved, and why\n" + "\n".join(lines))
        else:
            failures += 1
            print("\n=== the report\nno report was written")
    finally:
        failures += step("tear everything down", "testbed", "down", "--prefix", prefix) != 0
    print(f"\ndemo: {'ok' if not failures else f'{failures} step(s) failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(run())
