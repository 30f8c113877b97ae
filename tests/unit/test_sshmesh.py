"""The ssh mesh as text: mDNS answers, probe targets, ssh-keyscan output, fingerprints as ssh-keygen prints them,
addresses grouped into machines by host key, the management address, and the edits init makes and takes back."""

from __future__ import annotations

import pytest

from wirespeed.core.cluster import sshmesh
from wirespeed.core.errors import UsageError

KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIJzNEvB/Sk6xSKxsthgsfMFk6u3qbUEQSZqoIYiqYnRp"
KEY2 = "AAAAC3NzaC1lZDI1NTE5AAAAIKxVB8dFm7wNkOq8pT+7FqgT0mQ2n0y4XbQb8l9rD1aZ"


def test_avahi_browse_keeps_resolved_ipv4_on_fabric_halves_once_per_address() -> None:
    text = "\n".join(
        [
            "+;enp1s0f1np1;IPv4;spark-2;_ssh._tcp;local",
            "=;enp1s0f1np1;IPv4;spark-2;_ssh._tcp;local;spark-2.local;192.168.100.11;22;",
            "=;enP2p1s0f1np1;IPv4;spark-2;_ssh._tcp;local;spark-2.local;192.168.101.11;22;",
            "=;enp1s0f1np1;IPv4;spark-2;_ssh._tcp;local;spark-2.local;192.168.100.11;22;",  # seen twice
            "=;enP7s7;IPv4;laptop;_ssh._tcp;local;laptop.local;10.0.0.5;22;",  # not a fabric half
            "=;enp1s0f1np1;IPv6;spark-2;_ssh._tcp;local;spark-2.local;fe80::1;22;",
            "=;enp1s0f1np1;IPv4;odd;_ssh._tcp;local;odd.local;999.1.1.1;22;",
        ]
    )
    found = sshmesh.parse_avahi_browse(text, ["enp1s0f1np1", "enP2p1s0f1np1"])
    assert found == [
        sshmesh.MdnsPeer("enp1s0f1np1", "192.168.100.11", "spark-2.local"),
        sshmesh.MdnsPeer("enP2p1s0f1np1", "192.168.101.11", "spark-2.local"),
    ]


def test_probe_targets_are_every_host_but_this_one_and_a_big_subnet_is_refused() -> None:
    targets = sshmesh.probe_targets(["192.168.100.10/30", "192.168.101.10/30"], ["192.168.100.10", "192.168.101.10"])
    assert targets == ["192.168.100.9", "192.168.101.9"]
    assert len(sshmesh.probe_targets(["10.0.0.1/22"], [])) == 1022
    with pytest.raises(UsageError, match=r"10.0.0.1/16: 65536 addresses are too many") as err:
        sshmesh.probe_targets(["10.0.0.1/16"], [])
    assert err.value.hint and "--peers" in err.value.hint


def test_keyscan_and_fingerprint_as_openssh_prints_them() -> None:
    text = f"# 10.0.0.2:22 SSH-2.0-OpenSSH_9.2p1\n10.0.0.2 ssh-ed25519 {KEY}\n10.0.0.2 ssh-ed25519 {KEY}\n"
    text += "10.0.0.3 ssh-dss AAAA\nbroken\n"
    assert sshmesh.parse_keyscan(text) == {"10.0.0.2": [("ssh-ed25519", KEY)]}
    # `ssh-keygen -lf` of that key printed: 256 SHA256:uyPfG9YmBmV+0s+F+oYjq0Zr7lOsOSwlwwztlqHHQ/c x (ED25519)
    assert sshmesh.fingerprint(KEY) == "SHA256:uyPfG9YmBmV+0s+F+oYjq0Zr7lOsOSwlwwztlqHHQ/c"


def test_addresses_sharing_a_host_key_are_one_machine() -> None:
    a, b = ("ssh-ed25519", KEY), ("ssh-ed25519", KEY2)
    scans = {"10.0.0.2": [a], "10.0.1.2": [a], "10.0.0.3": [b], "10.0.0.9": []}
    peers = sshmesh.group_peers(scans, {"10.0.0.2": "spark-2.local"})
    assert [p.addresses for p in peers] == [("10.0.0.2", "10.0.1.2"), ("10.0.0.3",)]
    assert peers[0].host_keys == (a,) and peers[0].names == ("spark-2.local",)
    assert peers[0].fingerprint == sshmesh.fingerprint(KEY)
    bridged = sshmesh.group_peers({"x": [a], "y": [b], "z": [a, b]})  # z shows both keys: all one machine
    assert [p.addresses for p in bridged] == [("x", "z", "y")]
    assert sshmesh.Peer((), ()).fingerprint == "-"


def test_management_address() -> None:
    ipv4 = {
        "lo": ("127.0.0.1/8",),
        "enp1s0f1np1": ("198.19.2.1/24",),
        "enP7s7": ("198.18.0.11/24",),
    }
    fabric = ["198.19.2.1/24"]
    assert sshmesh.management_address(ipv4, "enP7s7", fabric) == "198.18.0.11"
    assert sshmesh.management_address(ipv4, None, fabric) == "198.18.0.11"  # no default route: off the fabric
    assert sshmesh.management_address({"lo": ("127.0.0.1/8",), "enp1s0f1np1": ("198.19.2.1/24",)}, None, fabric) is None


NODES = [
    sshmesh.MeshNode("spark-1", "alice", "10.0.0.11", ("10.0.0.11", "198.19.2.1"), (("ssh-ed25519", KEY),), "k1"),
    sshmesh.MeshNode("spark-2", "alice", "10.0.0.12", ("10.0.0.12",), (("ssh-ed25519", KEY2),), "k2"),
]


def test_known_hosts_and_config_cover_every_name_and_address() -> None:
    known = sshmesh.known_hosts(NODES)
    assert f"spark-1,10.0.0.11,198.19.2.1 ssh-ed25519 {KEY}\n" in known
    assert f"spark-2,10.0.0.12 ssh-ed25519 {KEY2}\n" in known
    config = sshmesh.mesh_config(NODES)
    assert "Host spark-2\n    HostName 10.0.0.12\n    User alice\n" in config
    assert "Host spark-1 10.0.0.11 198.19.2.1 spark-2 10.0.0.12\n" in config
    for line in ("IdentityFile ~/.ssh/wirespeed_ed25519", "UserKnownHostsFile ~/.ssh/wirespeed_known_hosts"):
        assert line in config
    assert "StrictHostKeyChecking yes" in config  # pinned, never accept-new


def test_readdressed_nodes_are_pinned_at_their_new_addresses_and_keep_the_old() -> None:
    known, config = sshmesh.known_hosts(NODES), sshmesh.mesh_config(NODES)
    assert sshmesh.with_addresses(known, config, {}) == (known, config)  # read back exactly as written
    grown = sshmesh.with_addresses(known, config, {"spark-2": ["198.19.2.2", "10.0.0.12"], "stranger": ["1.2.3.4"]})
    assert grown is not None
    known2, config2 = grown
    assert f"spark-2,10.0.0.12,198.19.2.2 ssh-ed25519 {KEY2}\n" in known2
    assert f"spark-1,10.0.0.11,198.19.2.1 ssh-ed25519 {KEY}\n" in known2
    assert "Host spark-1 10.0.0.11 198.19.2.1 spark-2 10.0.0.12 198.19.2.2\n" in config2
    assert "1.2.3.4" not in known2 + config2  # only the mesh's own nodes
    assert sshmesh.with_addresses(known2, config2, {"spark-2": ["198.19.2.2"]}) == grown  # a second run: no change


@pytest.mark.parametrize(
    ("known", "config"),
    [("", ""), ("example.com ssh-ed25519 AAAA\n", "Host *\n"), ("# wirespeed-mesh: x\n", "# wirespeed-mesh: y\n")],
)
def test_files_init_did_not_write_are_left_alone(known: str, config: str) -> None:
    assert sshmesh.with_addresses(known, config, {"spark-1": ["10.0.0.99"]}) is None


MESH_KEYS = [f"ssh-ed25519 {KEY} wirespeed-mesh@spark-1", f"ssh-ed25519 {KEY2} wirespeed-mesh@spark-2"]


@pytest.mark.parametrize("original", ["", "ssh-rsa AAAA bob@laptop", "ssh-rsa AAAA bob@laptop\n", "# keys\n\n"])
def test_authorized_keys_edits_are_idempotent_and_reversible(original: str) -> None:
    added = sshmesh.authorized_keys_with(original, MESH_KEYS)
    assert added.endswith(MESH_KEYS[1] + "\n") and all(key in added for key in MESH_KEYS)
    assert sshmesh.authorized_keys_with(added, MESH_KEYS) == added  # a second run changes nothing
    replaced = sshmesh.authorized_keys_with(added, MESH_KEYS[:1])  # a node left the mesh
    assert MESH_KEYS[1] not in replaced
    without = sshmesh.authorized_keys_without(added)
    assert sshmesh.undo_text(added, original, without) == original  # byte for byte, newline or not


def test_a_users_line_that_only_mentions_the_marker_is_kept() -> None:
    text = "# wirespeed-mesh@x is what init writes\nssh-rsa AAAA wirespeed-mesh-lookalike\n"
    assert sshmesh.authorized_keys_without(text) == text


def test_config_include_goes_first_once_and_comes_out_again() -> None:
    original = "Host *\n    ServerAliveInterval 5\n"
    added = sshmesh.config_with_include(original)
    assert added.splitlines()[0] == sshmesh.INCLUDE_LINE and added.endswith(original)
    assert sshmesh.config_with_include(added) == added
    assert sshmesh.config_without_include(added) == original


def test_undo_text() -> None:
    # no file before init, and nothing but init's lines now: the file goes away
    assert sshmesh.undo_text("init's\n", None, "") is None
    # the user added something since: only init's lines go, theirs stay
    assert sshmesh.undo_text("a\nmine\ninit\n", "a", "a\nmine\n") == "a\nmine\n"
    assert sshmesh.undo_text("x\n", None, "x\n") == "x\n"
    assert sshmesh.undo_text(None, "a", None) is None  # removed by hand since: nothing to do


@pytest.mark.parametrize(
    "line",
    [
        f"ssh-rsa {KEY} wirespeed-mesh@spark-1",
        f'command="rm -rf ~" ssh-ed25519 {KEY} wirespeed-mesh@spark-1',
        f"ssh-ed25519 {KEY} someone@else",
        f"ssh-ed25519 {KEY} wirespeed-mesh@spark-1\nssh-ed25519 {KEY2} x",
    ],
)
def test_only_a_plain_mesh_key_goes_into_authorized_keys(line: str) -> None:
    with pytest.raises(UsageError, match=r"spark-1: ~/\.ssh/wirespeed_ed25519\.pub is not a wirespeed mesh key"):
        sshmesh.check_public_key(line, "spark-1")
    assert sshmesh.check_public_key(f"ssh-ed25519 {KEY} wirespeed-mesh@spark-1\n", "spark-1").endswith("spark-1")


def test_a_half_whose_subnet_no_other_node_shares_leads_to_a_node_not_reached() -> None:
    halves = ("enp1s0f0np0", "enp1s0f1np1")
    members = {  # spark-1 with its two neighbours of a ring of four: spark-3 is not among them
        "spark-1": {"enp1s0f0np0": ["198.19.0.1/24"], "enp1s0f1np1": ["198.19.6.1/24"], "docker0": ["172.17.0.1/16"]},
        "spark-2": {"enp1s0f0np0": ["198.19.2.2/24"], "enp1s0f1np1": ["198.19.0.2/24"]},
        "spark-4": {"enp1s0f0np0": ["198.19.6.4/24"], "enp1s0f1np1": ["198.19.4.4/24"]},
    }
    assert sshmesh.lone_halves(members, halves) == [
        ("spark-2", "enp1s0f0np0", "198.19.2.0/24"),
        ("spark-4", "enp1s0f1np1", "198.19.4.0/24"),
    ]
    shipped = {n: {"enp1s0f1np1": [f"169.254.3.{i}/16"]} for i, n in enumerate(("spark-1", "spark-2"), 1)}
    assert sshmesh.lone_halves(shipped, halves) == []  # one link-local subnet for every half
