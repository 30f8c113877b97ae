"""The emulated nodes' own account (`testbed up --user NAME --sudo ...`): the lines added to each node's private
passwd, shadow, group, gshadow and hosts, its sudoers drop-in, its password hash, and the plan that records it."""

from __future__ import annotations

import pytest

from wirespeed.core.errors import UsageError
from wirespeed.testbed.account import (
    Account,
    SudoMode,
    free_id,
    hosts_text,
    name_taken,
    node_etc,
    sha512_crypt,
    sudoers_name,
    sudoers_text,
    validate_user,
)
from wirespeed.testbed.plan import Topology, make_plan, plan_from_json

HOST_PASSWD = """root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
alice:x:1000:1000::/home/alice:/bin/bash
"""
HOST_GROUP = """root:x:0:
sudo:x:27:alice
alice:x:1000:
staff:x:1001:
"""
HOST_SHADOW = "root:*:19000:0:99999:7:::\nalice:!:19000:0:99999:7:::\n"
HOST_GSHADOW = "root:*::\nsudo:*::alice\nalice:!::\nstaff:*::\n"
SPARK = Account(name="spark", uid=1002, gid=1002, sudo=SudoMode.PASSWORD)


def test_sha512_crypt_matches_the_specifications_vectors() -> None:
    """Drepper's SHA-crypt test vectors: what glibc's crypt(3), and so pam_unix, compute."""
    assert sha512_crypt("Hello world!", "saltstring") == (
        "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1"
    )
    assert sha512_crypt("Hello world!", "saltstringsaltstring", rounds=10000) == (
        "$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBm"
        "SK6H9qs/y3RnOaw5v."
    )
    assert sha512_crypt("we have a short salt string but not a short password", "short", rounds=77777) == (
        "$6$rounds=77777$short$WuQyW2YR.hBNpjjRhpYD/ifIw05xdfeEyQoMxIXbkvr0gge1a1x3yRULJ5CCaUeOxFmtlcGZelFl5CxtgfiAc0"
    )


def test_the_first_id_from_1000_free_as_uid_and_gid() -> None:
    assert free_id(HOST_PASSWD, HOST_GROUP) == 1002  # 1000 is alice's, 1001 the staff group's
    assert free_id("root:x:0:0::/root:/bin/sh\n", "root:x:0:\n") == 1000


def test_a_name_this_host_uses_is_taken() -> None:
    assert name_taken("alice", HOST_PASSWD, HOST_GROUP)
    assert name_taken("staff", HOST_PASSWD, HOST_GROUP)  # a group of that name too
    assert not name_taken("spark", HOST_PASSWD, HOST_GROUP)


def test_the_nodes_files_are_the_hosts_with_the_account_added() -> None:
    host = {"passwd": HOST_PASSWD, "shadow": HOST_SHADOW, "group": HOST_GROUP, "gshadow": HOST_GSHADOW}
    files = node_etc(host, SPARK, "$6$salt$hash", today_days=20000)
    assert files["passwd"] == HOST_PASSWD + "spark:x:1002:1002:,,,:/home/spark:/bin/bash\n"
    # Last changed today (0 would make sudo and sshd demand a new password), never expiring.
    assert files["shadow"] == HOST_SHADOW + "spark:$6$salt$hash:20000:0:99999:7:::\n"
    assert files["group"] == "root:x:0:\nsudo:x:27:alice,spark\nalice:x:1000:\nstaff:x:1001:\nspark:x:1002:\n"
    assert files["gshadow"] == "root:*::\nsudo:*::alice,spark\nalice:!::\nstaff:*::\nspark:!::\n"
    assert "gshadow" not in node_etc({"passwd": HOST_PASSWD}, SPARK, "h", 1)  # only where the host has one
    empty_sudo = node_etc({"group": "sudo:x:27:\n"}, SPARK, "h", 1)["group"]
    assert empty_sudo == "sudo:x:27:spark\nspark:x:1002:\n"
    assert node_etc({"passwd": "root:x:0:0::/root:/bin/sh"}, SPARK, "h", 1)["passwd"].count("\n") == 2  # no last \n


def test_hosts_gives_the_node_its_own_name() -> None:
    assert hosts_text("127.0.0.1 localhost\n", "spark-1") == "127.0.0.1 localhost\n127.0.1.1\tspark-1\n"


def test_sudoers_drop_in_for_each_sudo_variant() -> None:
    asks = sudoers_text(SPARK, "/run/wirespeed/testbed/t/nodes/t1/sudo")
    assert "\nspark ALL=(ALL:ALL) ALL\n" in asks and "NOPASSWD" not in asks
    free = sudoers_text(Account("spark", 1002, 1002, SudoMode.NOPASSWD), "/d")
    assert "\nspark ALL=(ALL:ALL) NOPASSWD: ALL\n" in free
    # The node's own sudo state, and `sudo wirespeed` keeping the node's config root.
    assert 'Defaults:spark timestampdir="/d/ts", lecture_status_dir="/d/lectured"\n' in free
    assert 'Defaults:spark env_keep += "WIRESPEED_EMULATED WIRESPEED_CONFIG_ROOT"\n' in free
    assert sudoers_text(SPARK, 'a"b').count('"a\\"b/ts"') == 1
    assert "." not in sudoers_name(SPARK) and not sudoers_name(SPARK).endswith("~")  # @includedir reads it


def test_account_names() -> None:
    assert validate_user("spark") == "spark"
    for bad in ("root", "Spark", "1spark", "a b", "x" * 33, ""):
        with pytest.raises(UsageError):
            validate_user(bad)


def test_the_plan_records_the_account_and_its_sudo() -> None:
    plan = make_plan(prefix="wua-", nodes=2, topology=Topology.DIRECT, user="spark", sudo="nopasswd")
    assert (plan.user, plan.sudo, plan.login_user) == ("spark", "nopasswd", "spark")
    assert plan_from_json(plan.to_json()) == plan
    default = make_plan(prefix="wua-", nodes=2, user="spark")
    assert default.sudo == "password" and default != plan  # another account setting: another testbed
    root = make_plan(prefix="wua-", nodes=2)
    assert (root.user, root.login_user) == (None, "root")
    old = root.to_json()
    del old["user"], old["sudo"]
    assert plan_from_json(old) == root  # a state file from before --user
    with pytest.raises(UsageError, match="--sudo needs --user"):
        make_plan(prefix="wua-", nodes=2, sudo="nopasswd")
    with pytest.raises(UsageError, match="--sudo 'maybe'"):
        make_plan(prefix="wua-", nodes=2, user="spark", sudo="maybe")
