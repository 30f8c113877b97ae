"""GPUDirect RDMA, explained: what NCCL's `GDR` lines mean on the platform that printed them. Pure.

NCCL says per HCA whether GPUDirect RDMA is possible (src/graph/topo.cc: `NET/IB : GPU Direct RDMA Enabled|Disabled
for HCA n 'dev'`, Enabled when the plugin can take CUDA pointers: a peer-memory module, nvidia_peermem or the legacy
nv_peer_mem, per src/transport/net_ib/gdr.cc; or dma-buf on both the NIC and the GPU side), and per channel whether
it used it (src/transport/net.cc: `via NET/IB/0/GDRDMA`, or `via NET/IB/0` without); `Connected all rings, use ring
PXN 0 GDR 0` sums it up. An HCA that could but a channel that did not is the GPU-NIC distance beyond
`NCCL_NET_GDR_LEVEL` (src/graph/paths.cc, ncclTopoCheckGdr).

What `GDR 0` means depends on the GPU. GB10 (DGX Spark and its siblings: "NVIDIA GB10", compute capability 12.1)
has one LPDDR5x pool shared by CPU and GPU over NVLink-C2C: no separate device memory, so no peer-memory provider
exists to publish it (`modprobe nvidia_peermem` fails there) and NCCL's buffers are host memory already. A public
burn-in tool (baldwinSPC/glimmer-burnin, `runners/gpudirect-rdma/README.md`) reports GPUDirect RDMA on GB10 as "not
applicable", a skip and never a failure. On a discrete GPU, `GDR 0` with RDMA devices in use stages every message
through host memory (GPU -> CPU memory -> NIC and back): a finding, with its fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from wirespeed.core.parsers.nccl_info import NcclHost

UNIFIED = "unified"  # GB10: CPU and GPU share one memory
DISCRETE = "discrete"  # a GPU with its own memory on PCIe or NVLink
UNIFIED_GPU = re.compile(r"\bGB10\b")
UNIFIED_COMPUTE_CAPABILITIES = frozenset({"12.1"})  # GB10 (sm_121)

PEERMEM_FIX = (
    "`sudo modprobe nvidia_peermem` on every node (NCCL looks for /sys/module/nvidia_peermem; make it load at boot), "
    "or a kernel and NVIDIA driver with dma-buf (Linux 5.12 or newer; NCCL uses it unless NCCL_DMABUF_ENABLE=0)"
)
GB10_NOT_APPLICABLE = (
    "not applicable on GB10 (DGX Spark): CPU and GPU share one memory over NVLink-C2C, so there is no device memory "
    "for a peer-memory provider to publish and NCCL's buffers are host memory already; GDR 0 is expected there, "
    "not a finding (glimmer-burnin's gpudirect-rdma runner marks it not applicable)"
)


@dataclass(frozen=True)
class GdrVerdict:
    """One line that says what NCCL's GPUDirect RDMA state means here, and whether it is a finding to fix."""

    line: str
    finding: bool = False


def platform(gpus: Iterable[tuple[str, str | None]]) -> str | None:
    """UNIFIED when every GPU is a GB10 (by name, or compute capability 12.1), DISCRETE when none is, None when
    there is no GPU to judge or the nodes are mixed. `gpus` is (name, compute capability or None) per GPU."""
    kinds = {
        UNIFIED if UNIFIED_GPU.search(name) or capability in UNIFIED_COMPUTE_CAPABILITIES else DISCRETE
        for name, capability in gpus
    }
    return kinds.pop() if len(kinds) == 1 else None


def platform_in_text(text: str) -> str | None:
    """UNIFIED where a pasted output names a GB10 (nccl-tests' `# Rank 0 ... NVIDIA GB10`, nvidia-smi); else None:
    an NCCL log alone does not say which GPU it ran on."""
    return UNIFIED if UNIFIED_GPU.search(text) else None


def explain(
    gdr: bool | None,
    transport: str | None,
    where: str | None,
    *,
    by_hca: Mapping[str, bool] | None = None,
    capability: Mapping[str, Sequence[str]] | None = None,
    no_module: bool = False,
) -> GdrVerdict | None:
    """What GPUDirect RDMA's state means. `gdr`: whether NCCL used it (a `/GDRDMA` channel, `GDR 1`), None when the
    log does not say; `transport`: NET/IB, NET/Socket, ...; `where`: UNIFIED, DISCRETE or None (unknown: both
    readings are given); `by_hca`: NCCL's Enabled/Disabled per HCA; `capability`: what a net plugin said it can
    register per HCA (`DMABUF`, `nvidia-peermem`); `no_module`: NCCL (2.12 and older) said `(no module)`."""
    hcas = dict(by_hca or {})
    if gdr is None and all(hcas.values()):  # nothing said, or every HCA Enabled and no channel seen: no verdict
        return None
    if gdr:
        return GdrVerdict("GPUDirect RDMA used: the HCAs read and write GPU memory directly (channels `/GDRDMA`)")
    if transport == "NET/Socket":
        return GdrVerdict("GPUDirect RDMA not used: NET/Socket moves every byte through the CPU whatever the GPU")
    if transport is not None and not transport.startswith("NET/"):
        return None  # no network in the path (P2P, SHM): GPUDirect RDMA does not apply
    said = _said(hcas, capability or {}, no_module)
    if where == UNIFIED:
        return GdrVerdict(f"GPUDirect RDMA off ({said}): {GB10_NOT_APPLICABLE}")
    enabled = sorted(h for h, on in hcas.items() if on)
    if enabled and gdr is False:
        why = (
            f"the HCAs allow it ({', '.join(enabled)} Enabled) but no channel used it: the GPU-NIC distance is beyond "
            "NCCL_NET_GDR_LEVEL (see `nvidia-smi topo -m`; NCCL_NET_GDR_LEVEL=SYS allows any distance)"
        )
    else:
        why = f"{said}: the peer-memory module (nvidia_peermem) or dma-buf support is missing; fix: {PEERMEM_FIX}"
    if where == DISCRETE:
        return GdrVerdict(
            f"GPUDirect RDMA off on a discrete GPU with RDMA devices in use: every message is staged through host "
            f"memory (GPU -> CPU memory -> NIC); {why}",
            finding=True,
        )
    return GdrVerdict(
        f"GPUDirect RDMA off ({said}): on GB10 (DGX Spark) expected, not applicable (one memory for CPU and GPU); "
        f"on a discrete GPU a finding: {why}"
    )


def _said(by_hca: Mapping[str, bool], capability: Mapping[str, Sequence[str]], no_module: bool) -> str:
    """What NCCL printed, in short: `GDR 0`, the HCAs it called Disabled, and a plugin's contrary claim."""
    parts = ["GDR 0"]
    disabled = sorted(h for h, on in by_hca.items() if not on)
    if disabled:
        parts.append(f"Disabled for {', '.join(disabled)}" + (" (no module)" if no_module else ""))
    offered = sorted(f"{h} {'/'.join(kinds)}" for h, kinds in capability.items() if kinds and h in disabled)
    if offered:
        parts.append(f"the net plugin offered {', '.join(offered)} yet NCCL disabled it: the GPU side lacks it")
    return "; ".join(parts)


def explain_hosts(
    hosts: Sequence[NcclHost], where: str | None, gdr: bool | None = None, transport: str | None = None
) -> GdrVerdict | None:
    """`explain` over what the NCCL INFO lines of one run or paste said, every host's lines together: an HCA is
    Enabled only where every host said so; `gdr` and `transport` (from nccl-tests' own reading) win when given."""
    by_hca: dict[str, bool] = {}
    capability: dict[str, list[str]] = {}
    for host in hosts:
        for device, enabled in host.gdr_by_hca.items():
            by_hca[device] = by_hca.get(device, True) and enabled
        for device, kinds in host.gdr_capability.items():
            known = capability.setdefault(device, [])
            known += [k for k in kinds if k not in known]
    if gdr is None:
        gdr = used(hosts)
    if transport is None:
        transport = next((host.transport for host in hosts if host.transport), None)
    return explain(
        gdr, transport, where, by_hca=by_hca, capability=capability, no_module=any(h.gdr_no_module for h in hosts)
    )


def used(hosts: Sequence[NcclHost]) -> bool | None:
    """Whether GPUDirect RDMA was used, by the INFO lines alone: a `/GDRDMA` channel or `GDR 1` on any host; no
    where every host that says says `GDR 0`, every HCA Disabled, or network channels without `/GDRDMA`."""
    said = {_host_used(host) for host in hosts} - {None}
    return True if True in said else (False if said else None)


def _host_used(host: NcclHost) -> bool | None:
    if host.gdr is not None:
        return host.gdr
    return False if any(name.startswith("NET/") for name in host.via) else None
