"""Collect one node's facts through a `NodeSource` (live, snapshot or recording): the same code for all three.

The probes (`engine/probes/`) read the node; this module only says which reading fills which field of `NodeFacts`,
so that a field added to the record is one line here and mypy checks each one."""

from __future__ import annotations

from wirespeed.adapters.source import NodeSource
from wirespeed.core.fabric.facts import NodeFacts
from wirespeed.core.fabric.ports import group_ports
from wirespeed.engine.probes import config, hardware, host, net, tools
from wirespeed.engine.probes.config import ConfigFiles


def collect(source: NodeSource, node: str) -> NodeFacts:
    """Everything discovery reports for one node, read through `source`."""
    addresses = net.addresses(source)
    netdevs = [net.netdev(source, iface, addresses) for iface in net.interfaces(source)]
    rdma = net.rdma(source, net.ipv4_by_netdev(netdevs))
    netdevs = net.with_rdma_devices(netdevs, rdma.devices)
    management = net.management(source, netdevs)
    fabric_netdevs = net.fabric(source, netdevs, management)
    fabric = [n.name for n in fabric_netdevs]
    bdfs = sorted({n.pci for n in netdevs if n.pci} | {d.pci for d in rdma.devices if d.pci})
    privileged = host.privileged(source)
    environment = host.environment(source)
    nic = net.nic_state(source, fabric)
    memory = host.meminfo(source)
    job = host.job_files(source, environment)
    configured = config.config_files(source)
    radio = net.management_radio(source, management)
    return NodeFacts(
        node=node,
        hostname=host.hostname(source),
        netdevs=tuple(netdevs),
        rdma=rdma.devices,
        rdma_absent_reason=rdma.absent_reason,
        pci=tuple(hardware.pci_function(source, bdf) for bdf in bdfs),
        ports=group_ports([(n.name, n.pci) for n in fabric_netdevs]),
        management=management,
        fabric=tuple(fabric),
        gpus=hardware.gpus(source),
        nccl_version=tools.nccl_version(source),
        tools=tools.versions(source),
        emulated=source.emulated,
        source=source.description,
        nccl_archs=tools.nccl_archs(source),
        privileged=privileged,
        offloads=nic.offloads,
        nic_counters=nic.counters,
        firewall=config.firewall(source),
        shaped_bps=nic.shaped_bps,
        sysctls=config.sysctls(source, fabric),
        memlock_bytes=host.memlock(source),
        kernel_messages=host.kernel_messages(source, privileged),
        kernel_messages_previous=host.previous_kernel_messages(source, privileged),
        dmi=hardware.dmi(source),
        root_ports=hardware.root_ports(source),
        pending_fixes=host.pending_fixes(source, privileged),
        routes=config.routes(source),
        environment=environment,
        in_container=host.in_container(source),
        dev_infiniband=host.dev_infiniband(source),
        kernel_cmdline=memory.kernel_cmdline,
        cma_total_kb=memory.cma_total_kb,
        cma_free_kb=memory.cma_free_kb,
        mem_available_kb=memory.mem_available_kb,
        home=job.home,
        job_files=job.files,
        job_file_errors=job.errors,
        cpus=host.cpus(source),
        config_files=configured.files if isinstance(configured, ConfigFiles) else {},
        netplan=configured.netplan if isinstance(configured, ConfigFiles) else configured,
        management_wireless=radio.wireless,
        management_power_save=radio.power_save,
        management_connection=radio.connection,
        packages=tools.packages(source),
    )


def collect_root_parts(source: NodeSource) -> dict[str, object]:
    """What only root may read, for the controller to lay over the facts the user read (`agent facts
    --root-parts`, run through sudo with --become): the kernel log, the firewall, the files `fix` manages (netplan's
    are root's alone). Everything else stays the user's own reading: its environment, its ssh session, its home.
    A key left out keeps the user's reading: the managed files, where they could not be read."""
    privileged = host.privileged(source)
    parts: dict[str, object] = {
        "privileged": privileged,
        "kernel_messages": host.kernel_messages(source, privileged),
        "kernel_messages_previous": host.previous_kernel_messages(source, privileged),
        "firewall": config.firewall(source),
        "pending_fixes": host.pending_fixes(source, privileged),
    }
    configured = config.config_files(source)
    if isinstance(configured, ConfigFiles):
        parts["config_files"] = configured.files
        parts["netplan"] = configured.netplan
    else:
        parts["netplan"] = configured
    return parts
