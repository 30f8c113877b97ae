"""The cluster inventory: cluster files and --hosts lists in, validated nodes out; errors name file and line."""

from __future__ import annotations

import pytest

from wirespeed.core.cluster.inventory import (
    DEFAULT_AGENT,
    Cluster,
    Node,
    local_cluster,
    parse_cluster_toml,
    parse_host_list,
    render_cluster_toml,
)
from wirespeed.core.errors import InventoryError

FULL = """\
[cluster]
name = "lab"
ssh_config = "~/.ssh/config"

[[nodes]]
name = "spark-1"
host = "198.18.0.11"
user = "alice"
port = 2222
ssh_options = ["-i", "~/.ssh/id_wirespeed"]
agent = ["/opt/wirespeed/bin/wirespeed"]

[[nodes]]
name = "spark-2"
host = "spark-2.lab"
"""


def parse_error(text: str, source: str = "lab.toml") -> InventoryError:
    with pytest.raises(InventoryError) as info:
        parse_cluster_toml(text, source)
    return info.value


# ------------------------------------------------------------------------------------------------- valid files
def test_parse_full_cluster_file() -> None:
    cluster = parse_cluster_toml(FULL, "lab.toml")
    assert cluster.name == "lab"
    assert cluster.source == "lab.toml"
    assert cluster.ssh_config == "~/.ssh/config"
    assert cluster.names == ("spark-1", "spark-2")
    first, second = cluster.nodes
    assert first == Node(
        name="spark-1",
        host="198.18.0.11",
        user="alice",
        port=2222,
        ssh_options=("-i", "~/.ssh/id_wirespeed"),
        agent=("/opt/wirespeed/bin/wirespeed",),
    )
    assert second == Node(name="spark-2", host="spark-2.lab")
    assert second.user is None
    assert second.port is None
    assert second.ssh_options == ()
    assert second.agent == DEFAULT_AGENT == ("wirespeed",)


def test_minimal_file_defaults_host_to_name_and_cluster_name() -> None:
    cluster = parse_cluster_toml('[[nodes]]\nname = "spark-1"\n', "c.toml")
    assert cluster.name == "cluster"
    assert cluster.ssh_config is None
    assert cluster.extra == {}
    assert cluster.nodes == (Node(name="spark-1", host="spark-1"),)


def test_nodes_keep_file_order() -> None:
    text = "".join(f'[[nodes]]\nname = "n{i}"\nhost = "10.0.0.{i}"\n' for i in (3, 1, 2))
    assert parse_cluster_toml(text, "c.toml").names == ("n3", "n1", "n2")


def test_extra_cluster_keys_are_kept_as_strings() -> None:
    text = '[cluster]\nname = "lab"\nsite = "b12"\nracks = 3\n\n[[nodes]]\nname = "a"\n'
    assert parse_cluster_toml(text, "c.toml").extra == {"site": "b12", "racks": "3"}


def test_ipv6_and_ssh_alias_hosts_are_accepted() -> None:
    text = '[[nodes]]\nname = "a"\nhost = "fe80::1%eth0"\n[[nodes]]\nname = "b"\nhost = "my_alias"\n'
    assert [n.host for n in parse_cluster_toml(text, "c.toml").nodes] == ["fe80::1%eth0", "my_alias"]


def test_cluster_node_lookup() -> None:
    cluster = parse_cluster_toml(FULL, "lab.toml")
    assert cluster.node("spark-2").host == "spark-2.lab"
    with pytest.raises(InventoryError) as info:
        cluster.node("spark-9")
    assert "lab.toml" in info.value.message
    assert "'spark-9'" in info.value.message
    assert info.value.hint is not None
    assert "spark-1, spark-2" in info.value.hint


# ---------------------------------------------------------------------------------------------------- errors
def test_invalid_toml_names_file_and_line() -> None:
    error = parse_error('[cluster]\nname = "lab"\nthis is not toml\n')
    assert error.message.startswith("lab.toml: not valid TOML")
    assert "line 3" in error.message
    assert error.hint is not None
    assert error.exit_status == 2


@pytest.mark.parametrize(
    "text",
    ['[cluster]\nname = "lab"\n', "", "nodes = []\n", 'nodes = "spark-1"\n', "[nodes]\nname = 'a'\n"],
)
def test_missing_nodes(text: str) -> None:
    error = parse_error(text)
    assert error.message == "lab.toml: no [[nodes]] entries"
    assert error.hint is not None
    assert "[[nodes]]" in error.hint


def test_cluster_must_be_a_table() -> None:
    error = parse_error('cluster = "lab"\n[[nodes]]\nname = "a"\n')
    assert error.message.startswith("lab.toml:")
    assert "[cluster] must be a table" in error.message


def test_node_entry_must_be_a_table() -> None:
    error = parse_error('nodes = [{name = "a"}, "b"]\n')
    assert error.message == "lab.toml: nodes entry 2 must be a table"


def test_unknown_key_names_file_line_and_key() -> None:
    text = '[cluster]\nname = "lab"\n\n[[nodes]]\nname = "spark-1"\nhots = "10.0.0.1"\nusr = "x"\n'
    error = parse_error(text)
    assert error.message.startswith("lab.toml:5: ")
    assert "unknown key(s) hots, usr" in error.message
    assert error.hint is not None
    assert "host" in error.hint


def test_unknown_key_without_a_name_names_the_entry() -> None:
    error = parse_error('[[nodes]]\nname = "a"\n\n[[nodes]]\nname = 7\nbogus = 1\n')
    assert error.message.startswith("lab.toml:5: ")
    assert "bogus" in error.message


def test_missing_name() -> None:
    error = parse_error('[[nodes]]\nhost = "10.0.0.1"\n')
    assert error.message.startswith("lab.toml:1: ")
    assert "name must be a non-empty string" in error.message


@pytest.mark.parametrize("port", ['"22"', "22.0", "true", "[22]"])
def test_bad_port_type(port: str) -> None:
    error = parse_error(f'[[nodes]]\nname = "a"\nhost = "h"\n\n[[nodes]]\nname = "spark-2"\nport = {port}\n')
    assert error.message.startswith("lab.toml:6: node spark-2: port must be an integer")


@pytest.mark.parametrize("port", [0, -1, 65536])
def test_port_out_of_range(port: int) -> None:
    error = parse_error(f'[[nodes]]\nname = "a"\nport = {port}\n')
    assert error.message == f"lab.toml:2: node a: port {port} is out of range"


def test_duplicate_names() -> None:
    error = parse_error('[[nodes]]\nname = "a"\nhost = "h1"\n[[nodes]]\nname = "b"\n[[nodes]]\nname = "a"\n')
    assert error.message.startswith("lab.toml")
    assert "'a' is used twice" in error.message


@pytest.mark.parametrize("host", ["-oProxyCommand=touch /tmp/pwned", "-x", "a b", "h;id", "$(id)", "h/x", ""])
def test_bad_host(host: str) -> None:
    error = parse_error(f'[[nodes]]\nname = "n1"\n\n[[nodes]]\nname = "spark-2"\nhost = "{host}"\n')
    assert error.message.startswith("lab.toml:5: ")
    assert "spark-2" in error.message or "host" in error.message


def test_host_starting_with_dash_is_refused_with_its_value() -> None:
    error = parse_error('[[nodes]]\nname = "spark-1"\nhost = "-oProxyCommand=id"\n')
    assert error.message == "lab.toml:2: node spark-1: host '-oProxyCommand=id' is not a host name or address"


@pytest.mark.parametrize("user", ["-oProxyCommand=id", "al ice", "9lives", "a@b", "x" * 33, "root;id"])
def test_bad_user(user: str) -> None:
    error = parse_error(f'[[nodes]]\nname = "spark-1"\nuser = "{user}"\n')
    assert error.message.startswith("lab.toml:2: node spark-1: user ")
    assert "is not a valid user name" in error.message


def test_empty_user_is_refused() -> None:
    error = parse_error('[[nodes]]\nname = "spark-1"\nuser = ""\n')
    assert error.message.startswith("lab.toml:2: ")
    assert "user must be a non-empty string" in error.message


@pytest.mark.parametrize("name", ["-spark", ".a", "a b", "a/b", "x" * 64])
def test_bad_node_name(name: str) -> None:
    error = parse_error(f'[[nodes]]\nname = "{name}"\nhost = "h"\n')
    assert error.message.startswith("lab.toml:2: ")
    assert "is not valid" in error.message
    assert error.hint is not None


@pytest.mark.parametrize(
    ("key", "value"),
    [("ssh_options", '"-v"'), ("ssh_options", '["-v", ""]'), ("ssh_options", "[1]"), ("agent", '"wirespeed"')],
)
def test_string_lists_are_checked(key: str, value: str) -> None:
    error = parse_error(f'[[nodes]]\nname = "a"\n{key} = {value}\n')
    assert error.message.startswith(f"lab.toml:2: {key} must be a list of non-empty strings")


def test_empty_agent_is_refused() -> None:
    error = parse_error('[[nodes]]\nname = "a"\nagent = []\n')
    assert "agent must name a command" in error.message


def test_bad_cluster_name_and_ssh_config() -> None:
    assert "cluster.name" in parse_error('[cluster]\nname = 3\n[[nodes]]\nname = "a"\n').message
    assert "cluster.ssh_config" in parse_error('[cluster]\nssh_config = ""\n[[nodes]]\nname = "a"\n').message


def test_error_line_is_the_nodes_own_line() -> None:
    text = '[[nodes]]\nname = "a"\nhost = "b"\n\n[[nodes]]\nname = "b"\nhost = "-x"\n'
    assert parse_error(text).message.startswith("lab.toml:6: ")


# ------------------------------------------------------------------------------------------------ host lists
def test_host_list_plain() -> None:
    cluster = parse_host_list("a,b,c")
    assert cluster.names == ("a", "b", "c")
    assert cluster.source == "--hosts"
    assert all(n.host == n.name and n.user is None and n.port is None for n in cluster.nodes)


def test_host_list_user_host_port_forms() -> None:
    cluster = parse_host_list(" alice@spark-1:2222 , spark-2:22,bob@10.0.0.3 ", user="carol")
    assert cluster.nodes == (
        Node(name="spark-1", host="spark-1", user="alice", port=2222),
        Node(name="spark-2", host="spark-2", user="carol", port=22),
        Node(name="10.0.0.3", host="10.0.0.3", user="bob"),
    )


def test_host_list_accepts_ipv6_addresses() -> None:
    (node,) = parse_host_list("::1").nodes
    assert node.host == "::1"
    assert node.port is None


def test_host_list_skips_empty_items() -> None:
    assert parse_host_list("a,,b,").names == ("a", "b")


@pytest.mark.parametrize("spec", ["", " ", ",", " , ,"])
def test_host_list_empty(spec: str) -> None:
    with pytest.raises(InventoryError) as info:
        parse_host_list(spec)
    assert info.value.message == "--hosts: no hosts given"
    assert info.value.hint is not None


@pytest.mark.parametrize("spec", ["a,b,a", "alice@a,bob@a", "a:22,a:2222"])
def test_host_list_duplicates(spec: str) -> None:
    with pytest.raises(InventoryError, match="listed twice"):
        parse_host_list(spec)


@pytest.mark.parametrize("spec", ["a:", "a:ssh", "a:-1", "a:2x"])
def test_host_list_bad_port(spec: str) -> None:
    with pytest.raises(InventoryError, match="is not a port number"):
        parse_host_list(spec)


@pytest.mark.parametrize("spec", ["a:0", "a:70000"])
def test_host_list_port_out_of_range(spec: str) -> None:
    with pytest.raises(InventoryError, match="out of range"):
        parse_host_list(spec)


@pytest.mark.parametrize("spec", ["-oProxyCommand=id", "-oProxyCommand=id@host", "a b", "alice@", "a;b"])
def test_host_list_hostile_entries(spec: str) -> None:
    with pytest.raises(InventoryError) as info:
        parse_host_list(spec)
    assert info.value.message.startswith("--hosts: ")


def test_host_list_default_user_is_validated() -> None:
    with pytest.raises(InventoryError, match="not a valid user name"):
        parse_host_list("a", user="-oX=y")


# ------------------------------------------------------------------------------------------------- rendering
def roundtrip(cluster: Cluster) -> Cluster:
    return parse_cluster_toml(render_cluster_toml(cluster), cluster.source)


def test_render_round_trips_the_full_example() -> None:
    cluster = parse_cluster_toml(FULL, "lab.toml")
    assert roundtrip(cluster) == cluster


def test_render_round_trips_hostile_strings() -> None:
    cluster = Cluster(
        name='lab "one" \\ two',
        source="gen.toml",
        ssh_config='C:\\Users\\al "x"\\config',
        extra={"site": 'say "hi"\\n', "note": "tab\there\nnewline"},
        nodes=(
            Node(
                name="spark-1",
                host="10.0.0.1",
                user="alice",
                port=2200,
                ssh_options=("-oProxyCommand=ssh -W %h:%p \"jump\" 'x'", "-i", "~\\key", "a\\\\b", "é ü"),
                agent=("/opt/w s/bin/wirespeed", '--flag="q"', "back\\slash", "$(id); rm -rf /"),
            ),
            Node(name="spark-2", host="::1"),
            Node(name="spark-3", host="h3", agent=("python3", "-m", "wirespeed")),
        ),
    )
    assert roundtrip(cluster) == cluster


def test_render_leaves_out_defaults() -> None:
    text = render_cluster_toml(Cluster(name="c", source="s", nodes=(Node(name="a", host="a"),)))
    assert "user" not in text
    assert "port" not in text
    assert "ssh_options" not in text
    assert "agent" not in text
    assert "ssh_config" not in text


def test_render_comment_is_toml_comment() -> None:
    cluster = Cluster(name="c", source="s", nodes=(Node(name="a", host="b"),))
    text = render_cluster_toml(cluster, comment="written by wirespeed\nsecond line")
    assert text.startswith("# written by wirespeed\n# second line\n")
    assert parse_cluster_toml(text, "s") == cluster


def test_render_round_trips_characters_outside_the_bmp() -> None:
    cluster = Cluster(name="lab", source="s", nodes=(Node(name="a", host="a", agent=("/opt/\U0001f680/wirespeed",)),))
    assert roundtrip(cluster) == cluster


def test_render_round_trips_extra_keys_that_need_quoting() -> None:
    cluster = parse_cluster_toml('[cluster]\n"rack id" = "b12"\n[[nodes]]\nname = "a"\n', "s")
    assert roundtrip(cluster) == cluster


# ------------------------------------------------------------------------------------------------- is_local
@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "::1"])
def test_is_local(host: str) -> None:
    assert Node(name="n", host=host).is_local


@pytest.mark.parametrize(
    "node",
    [
        Node(name="n", host="spark-1"),
        Node(name="n", host="127.0.0.2"),
        Node(name="n", host="localhost", user="root"),
        Node(name="n", host="localhost", port=22),
        Node(name="n", host="localhost", ssh_options=("-v",)),
    ],
)
def test_is_not_local(node: Node) -> None:
    assert not node.is_local


def test_local_cluster() -> None:
    cluster = local_cluster()
    assert cluster.names == ("localhost",)
    assert cluster.nodes[0].is_local


def test_hosts_take_node_sets_as_users_type_them() -> None:
    cluster = parse_host_list("alice@spark-[1-3,7]:2222,[fe80::1]:22,gpu[01-02]")
    assert [(n.name, n.user, n.port) for n in cluster.nodes] == [
        ("spark-1", "alice", 2222), ("spark-2", "alice", 2222), ("spark-3", "alice", 2222), ("spark-7", "alice", 2222),
        ("fe80::1", None, 22), ("gpu01", None, None), ("gpu02", None, None),
    ]  # fmt: skip
    for bad, words in (
        ("spark-[3-1]", "runs backwards"),
        ("spark-[1-3", "unbalanced"),
        ("spark-[1-99999999]", "more than"),
    ):
        with pytest.raises(InventoryError, match=words) as err:
            parse_host_list(bad)
        assert str(err.value).startswith("--hosts: ")
