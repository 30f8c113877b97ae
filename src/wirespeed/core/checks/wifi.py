"""mgmt.wifi: the management path (the ssh session's interface, else the default route's) is not Wi-Fi with power
saving on.

Every node's rendezvous runs over the management path: ssh between the nodes, mpirun's launch, NCCL's and Gloo's
bootstrap when they are pinned there. A Spark's Wi-Fi (wlP9s9, MediaTek MT7925) with power saving on sleeps between
beacons, and the node drops out of the cluster (sparkring's ring doctor checks it; field problems 2026-11-26, 8).
`iw dev IF get power_save` prints "Power save: on|off" (iw's power_save.c). NetworkManager's per-connection
`802-11-wireless.powersave` is 0 default, 1 ignore, 2 disable, 3 enable; Ubuntu's default-wifi-powersave-on.conf
makes the default "enable". `connection.autoconnect-retries` -1 means NetworkManager's default of 4 tries, after
which a dropped node stays off the network; 0 retries forever.
"""

from __future__ import annotations

import shlex

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.facts import NodeFacts, Unknown

ID = "mgmt.wifi"


def wired_ports(facts: NodeFacts) -> list[str]:
    """PCI Ethernet interfaces that are neither fabric nor wireless: where management can move (enP7s7 on a Spark)."""
    return [
        n.name
        for n in facts.netdevs
        if n.kind == "pci" and n.link_type == 1 and n.name not in facts.fabric and not n.name.startswith("wl")
        and n.name != facts.management
    ]  # fmt: skip


def _fix(facts: NodeFacts, iface: str) -> Fix:
    connection = facts.management_connection
    name = shlex.quote(connection) if isinstance(connection, str) else "CONNECTION"
    commands = [f"sudo iw dev {iface} set power_save off   # now; NetworkManager sets it again on the next connect"]
    if not isinstance(connection, str):
        commands.append(f"nmcli -g GENERAL.CONNECTION device show {iface}   # the CONNECTION on {iface}")
    commands.append(f"sudo nmcli connection modify {name} 802-11-wireless.powersave 2   # 2 = disable, for good")
    commands.append(f"sudo nmcli connection modify {name} connection.autoconnect-retries 0   # 0 = retry forever")
    commands.append(f"sudo nmcli connection up {name}")
    wired = wired_ports(facts)
    move = (
        f", or better move management to the wired port ({', '.join(wired)}: cable it, address it, and reach the node "
        "there)"
        if wired
        else ", or better move management to a wired port"
    )
    return Fix(facts.node, f"turn Wi-Fi power saving off on {iface}{move}", tuple(commands))


def _node(facts: NodeFacts) -> tuple[str, Evidence | None, Fix | None]:
    """A note for the summary, and evidence and a fix when the management path is Wi-Fi with power saving on (or
    unread)."""
    iface = facts.management
    if isinstance(iface, Unknown):
        return f"management interface unknown ({iface.reason})", None, None
    wireless = facts.management_wireless
    if isinstance(wireless, Unknown):
        return f"{iface} (its radio: {wireless.reason})", None, None
    if not wireless:
        return f"{iface} (wired)", None, None
    power = facts.management_power_save
    if power == "off":
        return f"{iface} (Wi-Fi, power saving off)", None, None
    drops = "ssh, mpirun's launch and the rendezvous time out and the node drops out of the cluster"
    if isinstance(power, Unknown):
        what = (
            f"management path on Wi-Fi, power saving not read ({power.reason}); NetworkManager on Ubuntu turns it on "
            f"by default, and then {drops}"
        )
        value = "unread"
    else:
        what = f"management path on Wi-Fi with power saving on: the radio sleeps between beacons, so {drops}"
        value = f"Power save: {power}"
    return f"{iface} (Wi-Fi)", Evidence(facts.node, iface, what, value), _fix(facts, iface)


@check(ID, "the management path is not Wi-Fi with power saving on")
def mgmt_wifi(data: CheckInput) -> CheckResult:
    if not data.facts:
        return skip(ID, "no node was read")
    notes: list[str] = []
    evidence: list[Evidence] = []
    fixes: list[Fix] = []
    for node in sorted(data.facts):
        note, found, fix = _node(data.facts[node])
        notes.append(f"{node} {note}")
        if found is not None and fix is not None:
            evidence.append(found)
            fixes.append(fix)
    if not evidence:
        return result(ID, CheckStatus.PASS, f"management on {joined(notes, 4)}")
    names = joined([f"{e.node} {e.subject}" for e in evidence], 3)
    return result(ID, CheckStatus.WARN, f"management over Wi-Fi with power saving on: {names}", evidence, fixes)
