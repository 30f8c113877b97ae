"""Every check module, imported once so that each check registers itself (`wirespeed.engine.checks` imports this)."""

from __future__ import annotations

from wirespeed.core.checks import (  # noqa: F401 - imported for their @check registrations
    addressing,
    bootstrap,
    clock,
    fabric,
    firmware,
    fixstate,
    host,
    kernel,
    links,
    mtu,
    nccl,
    ncclconf,
    ncclversion,
    nic,
    pciepath,
    rails,
    rdma,
    ring,
    switch,
    sysctl,
    tools,
    wifi,
)
