"""clock.skew: every node's wall clock agrees with the controller's.

A node whose clock is off makes its records lie about when things happened (run records, fix journals, kernel
log lines set against each other) and breaks what checks dates: apt refuses a repository whose Release file "is
not valid yet" (so `wirespeed setup` cannot install), TLS certificates read as not yet valid or expired. Measured
as the offset between `date` on the node and this controller's clock around it, less the round trip.
"""

from __future__ import annotations

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip

ID = "clock.skew"
WARN_S = 5.0  # beyond what NTP leaves after a boot
FAIL_S = 300.0  # dates are wrong enough that apt and TLS refuse them


def _fix(node: str) -> Fix:
    return Fix(
        node,
        "set the clock from NTP and keep it so (DGX OS and Ubuntu use systemd-timesyncd or chrony)",
        (
            "sudo timedatectl set-ntp true && timedatectl timesync-status",
            "sudo chronyc makestep   # where chrony keeps the time",
        ),
    )


@check(ID, "every node's clock agrees with the controller's")
def clock_skew(data: CheckInput) -> CheckResult:
    if data.active.clocks is None:
        return skip(ID, "not measured (a snapshot: clocks are compared on the live cluster)")
    unread = sorted(node for node, reading in data.active.clocks.items() if isinstance(reading, str))
    readings = {node: r for node, r in sorted(data.active.clocks.items()) if not isinstance(r, str)}
    note = f"; not read on {joined(unread)}" if unread else ""
    if not readings:
        return skip(ID, f"no node's clock read{note}")
    off = {node: (offset, error) for node, (offset, error) in readings.items() if abs(offset) - error > WARN_S}
    if not off:
        worst = max(abs(offset) for offset, _ in readings.values())
        return result(ID, CheckStatus.PASS, f"{len(readings)} node(s) within {worst:.1f} s of this clock{note}")
    evidence = [
        Evidence(node, "clock", "its clock minus this controller's", f"{offset:+.1f} s (±{error:.1f} s)")
        for node, (offset, error) in off.items()
    ]
    status = CheckStatus.FAIL if any(abs(o) - e > FAIL_S for o, e in off.values()) else CheckStatus.WARN
    names = joined([f"{node} {offset:+.0f} s" for node, (offset, _) in off.items()])
    return result(ID, status, f"clocks differ from this controller's: {names}{note}", evidence,
                  [_fix(node) for node in off])  # fmt: skip
