"""Parsers of sysfs values and tool outputs, on the formats the kernel and the tools print."""

from __future__ import annotations

import json

import pytest

from wirespeed.core.parsers import sysfs_values as sv
from wirespeed.core.tools import iperf3, perftest


@pytest.mark.parametrize(
    ("text", "state"),
    [("4: ACTIVE", "ACTIVE"), ("1: DOWN\n", "DOWN"), ("5: LinkUp", "LinkUp"), ("3: Disabled", "Disabled")],
)
def test_port_state(text: str, state: str) -> None:
    assert sv.port_state(text) == state


def test_port_state_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        sv.port_state("ACTIVE")


@pytest.mark.parametrize(
    ("text", "gbps", "width", "speed"),
    [
        ("200 Gb/sec (2X NDR)", 200.0, 2, "NDR"),
        ("200 Gb/sec (4X HDR)", 200.0, 4, "HDR"),
        ("100 Gb/sec (4X EDR)", 100.0, 4, "EDR"),
        ("2.5 Gb/sec (1X SDR)", 2.5, 1, "SDR"),
        ("10 Gb/sec (1X)", 10.0, 1, ""),
    ],
)
def test_port_rate(text: str, gbps: float, width: int, speed: str) -> None:
    assert sv.port_rate(text) == sv.Rate(gbps, width, speed)


@pytest.mark.parametrize(("text", "gts"), [("32.0 GT/s PCIe", 32.0), ("8 GT/s", 8.0), ("16.0 GT/s PCIe\n", 16.0)])
def test_pcie_speed(text: str, gts: float) -> None:
    assert sv.pcie_speed_gts(text) == gts


def test_pcie_speed_unknown_raises() -> None:
    with pytest.raises(ValueError):
        sv.pcie_speed_gts("Unknown")


def test_gid_ipv4() -> None:
    assert sv.gid_ipv4("0000:0000:0000:0000:0000:ffff:c0a8:640a") == "192.168.100.10"
    assert sv.gid_ipv4("fe80:0000:0000:0000:3e6d:66ff:fecc:b3b7") is None
    assert sv.gid_ipv4("0000:0000:0000:0000:0000:0000:0000:0000") is None


def test_rocev2_index_matches_the_netdevs_address() -> None:
    gids = [
        (0, "fe80:0000:0000:0000:4ebb:47ff:fe00:0001", "IB/RoCE v1", "enp1s0f1np1"),
        (1, "fe80:0000:0000:0000:4ebb:47ff:fe00:0001", "RoCE v2", "enp1s0f1np1"),
        (2, "0000:0000:0000:0000:0000:ffff:c0a8:640a", "IB/RoCE v1", "enp1s0f1np1"),
        (3, "0000:0000:0000:0000:0000:ffff:c0a8:640a", "RoCE v2", "enp1s0f1np1"),
    ]
    assert sv.rocev2_ipv4_index(gids, {"enp1s0f1np1": {"192.168.100.10"}}) == 3
    # The address moved (re-addressed): no GID carries it, so no index is claimed.
    assert sv.rocev2_ipv4_index(gids, {"enp1s0f1np1": {"192.168.100.99"}}) is None
    # Addresses unreadable: the lowest RoCE v2 IPv4-mapped GID is the best guess show_gids would print.
    assert sv.rocev2_ipv4_index(gids, {}) == 3


def test_rocev2_index_shifted_by_ipv6() -> None:
    gids = [
        (i, f"fe80:0000:0000:0000:0000:0000:0000:{i:04x}", "RoCE v2" if i % 2 else "IB/RoCE v1", "e") for i in range(6)
    ]
    gids += [
        (6, "0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1", "e"),
        (7, "0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2", "e"),
    ]
    assert sv.rocev2_ipv4_index(gids, {"e": {"10.0.0.1"}}) == 7


def test_ip_addr_json_and_default_route() -> None:
    addr = json.dumps(
        [
            {"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]},
            {
                "ifname": "enp1s0f1np1",
                "addr_info": [
                    {"family": "inet", "local": "192.168.100.10", "prefixlen": 24},
                    {"family": "inet6", "local": "fe80::1", "prefixlen": 64},
                ],
            },
        ]
    )
    parsed = sv.ip_addr_json(addr)
    assert parsed.ipv4["enp1s0f1np1"] == ("192.168.100.10/24",)
    assert parsed.ipv6["enp1s0f1np1"] == ("fe80::1/64",)
    routes = json.dumps(
        [{"dst": "default", "gateway": "10.0.0.1", "dev": "enP7s7"}, {"dst": "10.0.0.0/24", "dev": "enP7s7"}]
    )
    assert sv.default_route_iface(routes) == "enP7s7"
    assert sv.default_route_iface("[]") is None


@pytest.mark.parametrize(
    ("parse", "text", "expected"),
    [
        (iperf3.parse_version, "iperf 3.16 (cJSON 1.7.15)\nLinux spark-1 6.17.0", "3.16"),
        (iperf3.parse_version, "iperf 3.12 (cJSON 1.7.15)", "3.12"),
        (
            sv.mpirun_version,
            "mpirun (Open MPI) 4.1.6\n\nReport bugs to http://www.open-mpi.org/community/help/",
            "Open MPI 4.1.6",
        ),
        (perftest.parse_version, "Version: 6.06\n", "6.06"),
        (sv.nccl_version, "\tlibnccl.so.2 (libc6,AArch64) => /usr/lib/aarch64-linux-gnu/libnccl.so.2.28.9\n", "2.28.9"),
        (sv.nccl_version, "2.30.3\n", "2.30.3"),
    ],
)
def test_tool_versions(parse: object, text: str, expected: str) -> None:
    assert parse(text) == expected  # type: ignore[operator]


def test_tool_versions_refuse_unrelated_text() -> None:
    for parse in (iperf3.parse_version, sv.mpirun_version, perftest.parse_version, sv.nccl_version):
        with pytest.raises(ValueError):
            parse("command not found")


def test_nvidia_smi_csv() -> None:
    rows = sv.nvidia_smi_csv("NVIDIA GB10, 12.1, 580.95.05\nNVIDIA H100 80GB HBM3, [N/A], 580.95.05\n")
    assert rows == [
        sv.GpuRow("NVIDIA GB10", "12.1", "580.95.05"),
        sv.GpuRow("NVIDIA H100 80GB HBM3", None, "580.95.05"),
    ]


def test_ethtool_info() -> None:
    text = (
        "driver: mlx5_core\nversion: 6.17.0-1014-nvidia\n"
        "firmware-version: 28.45.4028 (NVD0000000087)\nbus-info: 0000:01:00.0\n"
    )
    info = sv.ethtool_info(text)
    assert (
        info["driver"] == "mlx5_core"
        and info["firmware-version"].startswith("28.45.4028")
        and info["bus-info"] == "0000:01:00.0"
    )


def test_a_tbf_root_qdisc_is_the_interfaces_real_line_rate() -> None:
    from wirespeed.core.parsers.sysfs_values import tc_shaped_bps

    # `tc -n NS -j qdisc show dev qa` after `tc qdisc replace dev qa root tbf rate 1000000000bit ...` (iproute2 6.1)
    text = (
        '[{"kind":"tbf","handle":"88d7:","root":true,"refcnt":3,'
        '"options":{"rate":125000000,"burst":262125,"lat":50000}}]'
    )
    assert tc_shaped_bps(text) == 10**9
    assert tc_shaped_bps('[{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}]') is None
    assert tc_shaped_bps("") is None
    import pytest

    with pytest.raises(ValueError, match="not JSON"):
        tc_shaped_bps("qdisc tbf 8001: root")
