"""fabric.present: a cluster with no fabric must not pass.

Rebuilt from a real report (one node's CX-7 gone from the PCI bus after boot, the other's halves without carrier),
every other check skipped for want of a fabric, a link or an RDMA device, and `check` passed while `discover` said
"no fabric link between any two nodes" (issue 36). Here the absence is the finding: no fabric link anywhere in a
cluster of two or more, a node with no fabric interface (or none with carrier) while its peers have them, and a
node whose model ships a ConnectX-7 (a DGX Spark, an ASUS GX10, another GB10 machine: DMI) that shows none.
"""

from __future__ import annotations

from wirespeed.core.checks.common import fabric_netdevs, joined, rdma_port
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.checks.pciepath import has_nic, missing_evidence, missing_fix, missing_nic, model, ships_cx7
from wirespeed.core.fabric.facts import Netdev, NodeFacts

PRESENT = "fabric.present"


def _state(facts: NodeFacts, netdev: Netdev) -> str:
    carrier = "carrier" if netdev.carrier is True else ("no carrier" if netdev.carrier is False else "carrier unread")
    operstate = netdev.operstate if isinstance(netdev.operstate, str) else "?"
    port = rdma_port(facts, netdev)
    rdma = ""
    if port is not None:
        state = port.state if isinstance(port.state, str) else "?"
        phys = port.phys_state if isinstance(port.phys_state, str) else "?"
        rdma = f"; RDMA {', '.join(netdev.rdma_devices)} {state}/{phys}"
    return f"{carrier} (operstate {operstate}){rdma}"


def _no_link_fix(node: str, names: list[str]) -> Fix:
    return Fix(
        node,
        "no fabric interface of this node has a link: no cable, a cable not latched, or the far end down. Seat a "
        "QSFP cable from this node's port to a peer's (or to the switch), pushed in until the latch clicks, and "
        "bring the interfaces up; an approved 200G DAC (Amphenol NJAAKK-N911/NJAAKK0006, Luxshare LMTQF022-SD-R) "
        "links at 200000 Mb/s",
        (
            *(f"ethtool {name} | grep -E 'Speed|Link detected'   # want: Link detected: yes" for name in names[:4]),
            f"sudo ip link set {names[0]} up" if names else "ip -br link",
            "wirespeed discover   # the cabling map: which half is cabled to which",
        ),
    )


def _no_interface_fix(node: str, peers: list[str]) -> Fix:
    return Fix(
        node,
        f"this node has no fabric interface{f' while {joined(peers)} have' if peers else ''}: it cannot take part. "
        "Find whether the NIC is on the PCI bus and bound to its driver",
        (
            "lspci -nn | grep -i -E 'mellanox|15b3'   # the NIC's functions",
            "ls /sys/class/infiniband /sys/class/net",
            "sudo dmesg | grep -E 'mlx5_core|cx7-pcie-hotplug|E-Switch'",
        ),
    )


@check(PRESENT, "every node has its fabric interfaces and a link to the cluster")
def fabric_present(data: CheckInput) -> CheckResult:
    nodes = dict(sorted(data.facts.items()))
    if not nodes:
        return skip(PRESENT, "no node was read")
    fabric = {n: fabric_netdevs(f) for n, f in nodes.items()}
    linked = {n: [d for d in found if d.carrier is True] for n, found in fabric.items()}
    with_fabric = [n for n, found in fabric.items() if found]
    evidence: list[Evidence] = []
    fixes: list[Fix] = []
    problems: list[str] = []
    for node, facts in nodes.items():
        names = [d.name for d in fabric[node]]
        lonely = not names and len(nodes) > 1 and bool(with_fabric)
        if (ships_cx7(facts) or lonely) and (missing := missing_nic(facts)) is not None:
            what = (
                "shows no ConnectX-7"
                if ships_cx7(facts)
                else f"has no fabric NIC (its peers have: {joined(with_fabric)})"
            )
            problems.append(f"{node} ({model(facts)}) {what}: {missing.reason}")
            evidence.append(Evidence(node, None, "fabric interfaces", ", ".join(names) or "none"))
            evidence += missing_evidence(node, facts, missing)
            fixes.append(missing_fix(node, missing))
        elif lonely:
            problems.append(f"{node} has no fabric interface (its peers have: {joined(with_fabric)})")
            evidence.append(Evidence(node, None, "fabric interfaces", "none"))
            evidence.append(Evidence(node, "DMI", "machine model", model(facts)))
            fixes.append(_no_interface_fix(node, with_fabric))
        elif names and not linked[node] and len(nodes) > 1:
            problems.append(f"{node}: none of its {len(names)} fabric interfaces has carrier")
            evidence += [Evidence(node, d.name, "link", _state(facts, d)) for d in fabric[node]]
            fixes.append(_no_link_fix(node, names))
    if len(nodes) > 1 and not any(linked.values()):
        problems.insert(0, "no fabric link between any two nodes")
        for node in [n for n in nodes if n not in {e.node for e in evidence}]:  # no node has a fabric interface
            evidence.append(Evidence(node, None, "fabric interfaces", "none"))
            evidence.append(Evidence(node, "DMI", "machine model", model(nodes[node])))
            fixes.append(_no_interface_fix(node, with_fabric))
    if not with_fabric and len(nodes) == 1 and not problems:
        node, facts = next(iter(nodes.items()))
        return skip(PRESENT, f"one node ({node}, {model(facts)}) with no fabric interface, and its model ships none")
    if problems:
        return result(PRESENT, CheckStatus.FAIL, "; ".join(problems), evidence, fixes)
    counts = ", ".join(f"{n} {len(linked[n])} of {len(fabric[n])}" for n in nodes)
    nic = "" if all(has_nic(f) or f.emulated for f in nodes.values()) else " (no RDMA NIC on some nodes)"
    return result(PRESENT, CheckStatus.PASS, f"fabric interfaces with carrier: {counts}{nic}")
