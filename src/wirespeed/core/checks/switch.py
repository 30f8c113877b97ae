"""switch.ports: every fabric port of the cluster's switch up at the expected rate, with an L2MTU that carries the
hosts' frames and the same FEC on every port (spark-facts section 6 and problems 4 and 5).

A breakout lane at RouterOS defaults negotiates no link or 100G; the default L2MTU 1584 drops every jumbo frame
silently; `fec-mode=auto` means off while the ConnectX-7 runs RS-FEC. The hosts see a link in each case, so only
the switch's own view tells. The state comes from the REST API (`wirespeed switch status` shows the same).
"""

from __future__ import annotations

from wirespeed.core.checks.common import cabled_ends
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.cluster.routeros import L2MTU_MIN_OVERHEAD, SwitchConfig
from wirespeed.core.cluster.switchstate import PortProblem, SwitchState, fec_modes, host_mtu_by_node, port_problems

PORTS = "switch.ports"


def host_mtus(data: CheckInput) -> dict[str, int]:
    """Per node, the largest MTU of its cabled halves: the frames its switch ports must carry."""
    return host_mtu_by_node([(node, d.mtu) for node, d in cabled_ends(data.facts) if isinstance(d.mtu, int)])


def switch_problems(data: CheckInput) -> tuple[SwitchConfig, SwitchState, list[PortProblem]] | None:
    """The switch's port problems against the hosts' MTUs; None when the switch was not read."""
    if data.switch is None or data.switch.state is None:
        return None
    config, state = data.switch.config, data.switch.state
    return config, state, port_problems(state, config, host_mtus(data))


def switch_fix(config: SwitchConfig, problems: list[PortProblem]) -> Fix:
    lines = tuple(dict.fromkeys(p.fix for p in problems if p.fix))
    return Fix(
        None,
        f"on the switch {config.address} (RouterOS); `wirespeed switch apply --cluster FILE --yes` makes the whole "
        "plan, with a diff first",
        lines,
    )


def switch_fixes(config: SwitchConfig, problems: list[PortProblem]) -> list[Fix]:
    """The settings to change, and for what no setting fixes (no link, error counters) what to look at."""
    fixes = [switch_fix(config, problems)] if any(p.fix for p in problems) else []
    cable = sorted({p.port for p in problems if p.what in ("link", "missing") and not p.fix})
    if cable:
        fixes.append(
            Fix(
                None,
                f"no link on {', '.join(cable)} with its settings right: check the port name, the cable (DAC or "
                "breakout) and the host's end (`ip link`, `ethtool IFACE`)",
                tuple(f"/interface/ethernet/monitor {port} once" for port in cable),
            )
        )
    counted = sorted({p.port for p in problems if p.what == "errors"})
    if counted:
        fixes.append(
            Fix(
                None,
                f"error counters above zero on {', '.join(counted)}: with FEC the same on both ends, reseat or replace "
                "the cable; reset the counters and watch whether they grow",
                (
                    *(f'/interface/ethernet/reset-counters [find default-name="{port}"]' for port in counted),
                    *(f'/interface/ethernet/print stats where default-name="{port}"' for port in counted),
                ),
            )
        )
    return fixes


@check(PORTS, "switch fabric ports up at full rate, L2MTU for jumbo frames, one FEC")
def switch_ports(data: CheckInput) -> CheckResult:
    if data.switch is None:
        return skip(PORTS, "no [switch] in the cluster file")
    if data.switch.state is None:
        return skip(PORTS, f"the switch could not be read: {data.switch.error or 'not asked'}")
    found = switch_problems(data)
    assert found is not None
    config, state, problems = found
    ports = sum(len(names) for names in config.ports.values())
    if not ports:
        return skip(PORTS, '[switch] names no ports (ports = { NODE = ["PORT"] })')
    evidence = [Evidence(p.node, p.port, f"{p.what} (expected {p.expected})", p.found) for p in problems]
    modes = fec_modes(state, config)
    if len(modes) > 1:
        seen = "; ".join(f"{mode or '?'} on {', '.join(names)}" for mode, names in sorted(modes.items()))
        evidence.append(Evidence(None, None, "FEC modes across the fabric ports", seen))
    failed = [p for p in problems if p.severity == "fail"]
    if not problems:
        mtus = host_mtus(data)
        need = f", L2MTU >= {max(mtus.values()) + L2MTU_MIN_OVERHEAD}" if mtus else ""
        summary = f"all {ports} fabric ports up at {config.speed.split('-')[0]}bps, FEC {config.fec_mode}{need}"
        return result(PORTS, CheckStatus.PASS, summary, evidence)
    shown = "; ".join(f"{p.port} ({p.node}) {p.what} {p.found}" for p in (failed or problems)[:4])
    more = f" and {len(failed or problems) - 4} more" if len(failed or problems) > 4 else ""
    status = CheckStatus.FAIL if failed else CheckStatus.WARN
    return result(PORTS, status, f"{len(failed or problems)} problem(s) on the switch: {shown}{more}", evidence,
                  switch_fixes(config, problems))  # fmt: skip
