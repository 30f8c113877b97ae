"""bootstrap.iface: the interfaces NCCL, OpenMPI, Gloo and Ray pick to find each other, pinned to the fabric.

Unpinned, each picks an interface of its own: OpenMPI every up interface but loopback, Gloo the one of the host
name, Ray the default route's address. Docker's docker0 holds 172.17.0.1/16 on every node, so a node that
advertises it sends its peers to themselves; a Wi-Fi or other interface whose subnet no peer shares reaches
nobody. mpirun then hangs at wire-up, NCCL at bootstrap, Ray waits for a placement group (field problems 10).
NVIDIA's playbooks pin them all to one interface: NCCL_SOCKET_IFNAME, OMPI_MCA_btl_tcp_if_include,
GLOO_SOCKET_IFNAME, TP_SOCKET_IFNAME and VLLM_HOST_IP (spark-facts 1.7).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from wirespeed.core.checks.common import NcclList, joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.facts import Netdev, NodeFacts
from wirespeed.core.parsers import jobconf

ID = "bootstrap.iface"
OMPI_PARAMS = ("btl_tcp_if_include", "btl_tcp_if_exclude", "oob_tcp_if_include", "oob_tcp_if_exclude")


def is_up(netdev: Netdev) -> bool:
    return netdev.kind != "loopback" and netdev.carrier is True and netdev.operstate != "down"


def _v4(netdev: Netdev) -> list[ipaddress.IPv4Interface]:
    found = []
    for cidr in netdev.ipv4:
        try:
            found.append(ipaddress.IPv4Interface(cidr))
        except ValueError:
            continue
    return [a for a in found if not a.ip.is_loopback]


def _up_addresses(facts: NodeFacts) -> list[tuple[Netdev, ipaddress.IPv4Interface]]:
    return [(n, a) for n in facts.netdevs if is_up(n) for a in _v4(n)]


def suspects(all_facts: Mapping[str, NodeFacts]) -> dict[tuple[str, str], str]:
    """(node, interface) -> why a bootstrap on it would fail: an up interface whose address another node holds too,
    or whose subnets hold no other node's address (the management interface, the ssh path, excepted)."""
    holders: dict[ipaddress.IPv4Address, set[str]] = {}
    for node, facts in all_facts.items():
        for _, address in _up_addresses(facts):
            holders.setdefault(address.ip, set()).add(node)
    found: dict[tuple[str, str], str] = {}
    for node, facts in sorted(all_facts.items()):
        peers = [a for other, f in all_facts.items() if other != node for _, a in _up_addresses(f)]
        for netdev in (n for n in facts.netdevs if is_up(n) and _v4(n)):
            addresses = _v4(netdev)
            shared = [a for a in addresses if len(holders.get(a.ip, set())) > 1]
            if shared:
                others = sorted(holders[shared[0].ip] - {node})
                found[(node, netdev.name)] = f"{shared[0]} is on {joined(others)} too: the same address on each node"
            elif netdev.name != facts.management and not any(p.ip in a.network for a in addresses for p in peers):
                nets = ", ".join(str(a.network) for a in addresses)
                found[(node, netdev.name)] = f"reaches no peer: no other node has an address on {nets}"
    return found


@dataclass(frozen=True)
class Target:
    iface: str
    address: ipaddress.IPv4Interface

    @property
    def subnet(self) -> str:
        return str(self.address.network)


def target(all_facts: Mapping[str, NodeFacts], node: str) -> Target | None:
    """The interface to pin on `node`: the first up fabric half (port by port) whose subnet holds an address of
    every other node, else the management interface if it does."""
    facts = all_facts[node]
    others = [[a for _, a in _up_addresses(f)] for other, f in sorted(all_facts.items()) if other != node]
    names = [h for port in facts.ports for h in port.halves] + list(facts.fabric)
    if isinstance(facts.management, str):
        names.append(facts.management)
    for name in dict.fromkeys(names):
        netdev = facts.netdev(name)
        if netdev is None or not is_up(netdev):
            continue
        for address in _v4(netdev):
            if others and all(any(p.ip in address.network for p in peer) for peer in others):
                return Target(name, address)
    return None


def nccl_socket_ifname(facts: NodeFacts) -> tuple[str, str] | None:
    """NCCL_SOCKET_IFNAME as NCCL sees it: (value, where: "environment" or FILE:LINE), None when unset."""
    if facts.environment.get("NCCL_SOCKET_IFNAME", "").strip():
        return facts.environment["NCCL_SOCKET_IFNAME"], "environment"
    layers = [jobconf.nccl_conf(facts.job_files[p], p) for p in nccl_paths(facts) if p in facts.job_files]
    setting = jobconf.merged(facts.environment, layers).get("NCCL_SOCKET_IFNAME")
    return (setting.value, setting.where) if setting and setting.value.strip() else None


def nccl_paths(facts: NodeFacts) -> list[str]:
    home = facts.home if isinstance(facts.home, str) else None
    return jobconf.nccl_files(home, facts.environment)


def openmpi_params(facts: NodeFacts) -> dict[str, tuple[str, str]]:
    """btl/oob tcp_if_include/exclude as OpenMPI sees them: name -> (value, where)."""
    home = facts.home if isinstance(facts.home, str) else None
    layers = [jobconf.mca_params(facts.job_files[p], p) for p in jobconf.openmpi_files(home) if p in facts.job_files]
    found = {n: (s.value, s.where) for n, s in jobconf.merged(facts.environment, layers, "OMPI_MCA_").items()}
    for name in OMPI_PARAMS:
        if facts.environment.get(f"OMPI_MCA_{name}", "").strip():
            found[name] = (facts.environment[f"OMPI_MCA_{name}"], "environment")
    return {n: v for n, v in found.items() if n in OMPI_PARAMS and v[0].strip()}


def _ompi_selects(value: str, netdev: Netdev) -> bool:
    for item in (i.strip() for i in value.split(",") if i.strip()):
        if "/" in item:
            try:
                network = ipaddress.IPv4Network(item, strict=False)
            except ValueError:
                continue
            if any(a.ip in network for a in _v4(netdev)):
                return True
        elif item == netdev.name:
            return True
    return False


def _pinned_wrong(facts: NodeFacts, bad: list[Netdev]) -> list[Evidence]:
    """Pins that select an interface a bootstrap fails on."""
    wrong: list[Evidence] = []
    nccl = nccl_socket_ifname(facts)
    for value, where, name in [(*nccl, "NCCL_SOCKET_IFNAME")] if nccl else []:
        names = NcclList.parse(value)
        hit = [n.name for n in bad if names.selects(n.name)] if not names.exclude else []
        if hit:
            wrong.append(Evidence(facts.node, name, f"selects {', '.join(hit)} ({where})", value))
    gloo = facts.environment.get("GLOO_SOCKET_IFNAME", "").strip()
    if gloo and any(n.name in gloo.split(",") for n in bad):
        wrong.append(Evidence(facts.node, "GLOO_SOCKET_IFNAME", "names an interface listed here (environment)", gloo))
    for param, (value, where) in openmpi_params(facts).items():
        if param.endswith("_include") and (hit := [n.name for n in bad if _ompi_selects(value, n)]):
            wrong.append(Evidence(facts.node, param, f"includes {', '.join(hit)} ({where})", value))
    return wrong


def _unpinned(facts: NodeFacts) -> list[str]:
    missing = [] if nccl_socket_ifname(facts) else ["NCCL_SOCKET_IFNAME"]
    ompi = openmpi_params(facts)
    missing += [
        f"OpenMPI {kind}_tcp_if_include" for kind in ("btl", "oob") if not any(p.startswith(kind) for p in ompi)
    ]
    missing += [] if facts.environment.get("GLOO_SOCKET_IFNAME", "").strip() else ["GLOO_SOCKET_IFNAME"]
    return missing


def pin_fix(node: str, to: Target | None, why: str) -> Fix:
    if to is None:
        return Fix(
            node,
            f"{why}; no fabric interface here reaches every other node, so address the fabric halves first "
            "(see link.halves and addr.subnets), then pin NCCL, OpenMPI, Gloo and Ray to one of them",
        )
    ip = to.address.ip
    return Fix(
        node,
        f"{why}: pin every launcher to {to.iface} ({to.address}, subnet {to.subnet}, shared by every node)",
        (
            f"export NCCL_SOCKET_IFNAME={to.iface} GLOO_SOCKET_IFNAME={to.iface} TP_SOCKET_IFNAME={to.iface}"
            "   # in ~/.bashrc or the job script; mpirun -x passes them on",
            f"mkdir -p ~/.openmpi && printf 'btl_tcp_if_include = {to.subnet}\\noob_tcp_if_include = {to.subnet}\\n'"
            " >> ~/.openmpi/mca-params.conf   # OpenMPI (or mpirun --mca btl_tcp_if_include ...)",
            f"ray start --node-ip-address={ip} ...   # Ray; vLLM: export VLLM_HOST_IP={ip}",
        ),
    )


@check(ID, "NCCL, OpenMPI, Gloo and Ray bootstrap pinned away from repeated or isolated addresses")
def bootstrap_iface(data: CheckInput) -> CheckResult:
    if len(data.facts) < 2:
        return skip(ID, "one node: no bootstrap across nodes to judge")
    bad = suspects(data.facts)
    if not bad:
        return result(ID, CheckStatus.PASS, "no up interface with an address repeated across nodes or no peer")
    evidence: list[Evidence] = []
    fixes: list[Fix] = []
    failed = False
    for node in sorted({n for n, _ in bad}):
        facts = data.facts[node]
        netdevs = [d for (n, i) in bad if n == node and (d := facts.netdev(i)) is not None]
        here = [Evidence(node, d.name, bad[(node, d.name)], ", ".join(d.ipv4)) for d in netdevs]
        wrong = _pinned_wrong(facts, netdevs)
        missing = _unpinned(facts)
        if not wrong and not missing:
            continue
        evidence += here + wrong
        if missing:
            evidence.append(
                Evidence(node, "unset", "not pinned (a launcher may pick the interfaces above)", ", ".join(missing))
            )
        failed = failed or bool(wrong)
        why = f"{', '.join(d.name for d in netdevs)} can carry a bootstrap that hangs"
        fixes.append(pin_fix(node, target(data.facts, node), why))
    listed = joined(sorted(f"{n} {i}" for n, i in bad))
    if not fixes:
        return result(ID, CheckStatus.PASS, f"{listed} up, but NCCL, OpenMPI and Gloo are pinned elsewhere")
    status = CheckStatus.FAIL if failed else CheckStatus.WARN
    summary = f"bootstrap may pick {listed}: " + ("pinned to it" if failed else "NCCL/OpenMPI/Gloo/Ray not pinned")
    return result(ID, status, summary, evidence, fixes)
