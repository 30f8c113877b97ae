"""The ioctl statistics reader and the node sampler on real veth interfaces in a namespace of the test's own:
the same numbers as `ethtool -S`, an interface that disappears and one that comes back under another name."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.adapters.ethtool_ioctl import decode_names

pytestmark = pytest.mark.root
SRC = str(Path(__file__).resolve().parents[2] / "src")


def ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True)


@pytest.fixture
def netns() -> Iterator[str]:
    name = f"wsn-{uuid.uuid4().hex[:6]}"
    ip("netns", "add", name)
    try:
        ip("-n", name, "link", "add", "name", "wsa0", "type", "veth", "peer", "name", "wsb0")
        for iface in ("wsa0", "wsb0", "lo"):
            ip("-n", name, "link", "set", iface, "up")
        ip("-n", name, "addr", "add", "198.18.254.1/24", "dev", "wsa0")
        # A neighbour that does not answer: frames to it leave through wsa0 (a local address would use lo).
        ip("-n", name, "neigh", "add", "198.18.254.9", "lladdr", "02:00:00:00:00:09", "dev", "wsa0", "nud", "permanent")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def inside(netns: str, code: str) -> object:
    """Run Python inside the namespace; it prints one JSON value."""
    out = subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": SRC, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
    )
    return json.loads(out.stdout)


def test_the_ioctl_reads_what_ethtool_prints(netns: str) -> None:
    code = """
import json, subprocess
from wirespeed.adapters.ethtool_ioctl import StatsReader, EthtoolError

def read_stats(iface):
    with StatsReader(iface) as reader:
        return reader.read()
from wirespeed.core.parsers.ethtool import parse_stats
ours = read_stats("wsa0")
with StatsReader("wsa0") as reader:
    view = dict(zip(reader.names, reader.values_view()))  # the same u64s, seen in place
theirs = parse_stats(subprocess.run(["ethtool", "-S", "wsa0"], capture_output=True, text=True).stdout)
errors = []
for name in ("nope0", "lo"):
    try:
        errors.append([name, read_stats(name)])
    except EthtoolError as exc:
        errors.append([name, str(exc)])
print(json.dumps({"ours": ours, "theirs": theirs, "errors": errors, "view": view}))
"""
    data = inside(netns, code)
    assert isinstance(data, dict)
    assert data["ours"] == data["theirs"] and "peer_ifindex" in data["ours"]
    assert data["view"] == data["ours"]
    assert data["errors"] == [["nope0", "[Errno 19] nope0: no such interface"], ["lo", {}]]


def test_the_sampler_counts_traffic_and_survives_a_vanishing_and_renamed_interface(netns: str) -> None:
    code = """
import json, subprocess
from wirespeed.adapters.nicsampler import NodeSampler
from wirespeed.core.fabric.meter import sample_to_json
s = NodeSampler("n1", ["wsa0", "wsb0"])
first = s.sample()
subprocess.run(["ping", "-c", "3", "-i", "0.01", "-s", "1000", "-I", "wsa0", "198.18.254.9"], capture_output=True)
second = s.sample()
subprocess.run(["ip", "link", "set", "wsb0", "down"], check=True)
subprocess.run(["ip", "link", "set", "wsb0", "name", "wsc0"], check=True)
third = s.sample()
import time; time.sleep(1.1)
s.sample()
fourth = s.sample()
print(json.dumps([sample_to_json(x) for x in (first, second, third, fourth)]))
"""
    first, second, third, fourth = inside(netns, code)  # type: ignore[misc]
    sent = second["ifaces"]["wsa0"]["netdev"]["tx_bytes"] - first["ifaces"]["wsa0"]["netdev"]["tx_bytes"]
    received = second["ifaces"]["wsb0"]["netdev"]["rx_bytes"] - first["ifaces"]["wsb0"]["netdev"]["rx_bytes"]
    assert sent >= 3 * 1000 and received >= 3 * 1000
    assert first["cpu"] and len(first["cpu"][0]) == 8
    assert third["missing"] == ["wsb0"] and "wsb0" not in third["ifaces"]  # gone: no invented reading
    # veths have no PCI function to follow, so a renamed veth stays missing; the sampler goes on
    assert fourth["missing"] == ["wsb0"] and "wsa0" in fourth["ifaces"]


def test_steady_lines_count_traffic_as_full_readings_do(netns: str) -> None:
    code = """
import json, subprocess
from wirespeed.adapters.nicsampler import NodeSampler
s = NodeSampler("n1", ["wsa0", "wsb0"])
lines = [s.line(), s.line()]
steady = s._steady is not None
subprocess.run(["ping", "-c", "3", "-i", "0.01", "-s", "1000", "-I", "wsa0", "198.18.254.9"], capture_output=True)
lines.append(s.line())
s._steady = None
lines.append(s.line())
print(json.dumps({"steady": steady, "lines": [json.loads(x) for x in lines]}))
"""
    data = inside(netns, code)
    assert isinstance(data, dict) and data["steady"]
    first, _, steady, full = (line["ifaces"]["wsa0"]["netdev"]["tx_bytes"] for line in data["lines"])
    assert steady - first >= 3 * 1000 and full >= steady
    assert [sorted(line["ifaces"]) for line in data["lines"]] == [["wsa0", "wsb0"]] * 4


def test_names_are_decoded_from_a_gstrings_reply() -> None:
    reply = bytes(12) + b"tx_bytes_phy".ljust(32, b"\0") + b"rx_bytes_phy".ljust(32, b"\0")
    assert decode_names(reply, 2) == ("tx_bytes_phy", "rx_bytes_phy")
