"""nccl.version: on a switchless ring of Sparks, an NCCL that routes by subnet.

In a ring each node reaches its two neighbours on different subnets and no L2 path joins the others, so NCCL's
IB/RoCE transport must pick, for each peer, the local NIC on that peer's subnet: NCCL_IB_SUBNET_AWARE_ROUTING, read
from 2.30.7 (NVIDIA/nccl tag v2.30.7-1); before it the three-node ring needed NVIDIA's dgxspark-3node-ring branch.
NCCL's socket transport (no RDMA devices) goes through the kernel's routes and does not need it. Nodes that load
different NCCLs are tools.present's to name.
"""

from __future__ import annotations

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.nccl import RING_MIN_NCCL, nccl_version_tuple

ID = "nccl.version"
RING_RELEASE = "v2.30.7-1"
BUILD = (
    f"git clone -b {RING_RELEASE} --depth 1 https://github.com/NVIDIA/nccl.git ~/nccl",
    "cd ~/nccl && make -j src.build NVCC_GENCODE='-gencode=arch=compute_121,code=sm_121'   # GB10's sm_121",
    "cd ~/nccl-tests && make clean && make MPI=1 NCCL_HOME=$HOME/nccl/build   # then load it on every node",
)


@check(ID, "on a ring, an NCCL that routes by subnet (2.30.7 or later)")
def nccl_version(data: CheckInput) -> CheckResult:
    if data.cabling.topology not in ("ring", "chain") or len(data.cabling.order) < 3:
        return skip(ID, f"not a ring of three or more nodes (cabling: {data.cabling.topology})")
    versions = {n: f.nccl_version for n, f in sorted(data.facts.items()) if isinstance(f.nccl_version, str)}
    if not versions:
        return skip(ID, "no node's NCCL version was read (no NCCL found, or a snapshot without it)")
    shown = joined([f"{n} {v}" for n, v in versions.items()])
    if not any(f.rdma for f in data.facts.values()):
        return result(ID, CheckStatus.PASS, f"NCCL {shown}: no RDMA devices, so its socket transport, which the "
                      "kernel routes: subnet-aware routing does not apply")  # fmt: skip
    old = [n for n, v in versions.items() if (p := nccl_version_tuple(v)) is None or p < RING_MIN_NCCL]
    if not old:
        return result(ID, CheckStatus.PASS, f"NCCL {shown}: subnet-aware routing (NCCL_IB_SUBNET_AWARE_ROUTING)")
    evidence = [Evidence(n, "NCCL", f"version (a ring needs {RING_RELEASE} or later)", versions[n]) for n in old]
    why = (
        f"NCCL {RING_RELEASE} or later: before it NCCL cannot pick, per peer, the NIC on that peer's subnet "
        "(NCCL_IB_SUBNET_AWARE_ROUTING), and the ring's connections fail or fall back to TCP"
    )
    summary = f"NCCL below {RING_RELEASE} on {joined(old)} in a ring of {len(data.cabling.order)}"
    return result(ID, CheckStatus.WARN, summary, evidence, [Fix(n, why, BUILD) for n in old])
