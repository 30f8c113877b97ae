"""Bad input from issue 21, through the CLI in-process (`main(argv, env)`): a FIFO, a device or a directory named
as a file is refused at once; a non-UTF-8 cluster file is one line naming the byte; an import past the size limit
is refused by its size; figures outside physical sense are named untrustworthy, never shown; out-of-range option
values are refused; names with a trailing newline or a control character are not valid; text the user gave is
printed verbatim (no Rich markup or emoji). Every failure is one line, never a traceback, never a wait."""

from __future__ import annotations

import io
import json
import math
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import Run, no_real_testbed  # noqa: F401 (an autouse fixture)
from test_cli import assert_one_line_error as one_line
from test_cli import cli as run_cli

from wirespeed.cli.output import Environment, Output
from wirespeed.core.cluster.inventory import Node, validate_node
from wirespeed.core.errors import InventoryError
from wirespeed.core.imports import importer
from wirespeed.core.records import figures
from wirespeed.core.tools import iperf3, nccl_tests, perftest, sockperf

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real"
PERFTEST = REAL / "perftest" / "ib_write_bw_spark_report_gbits_run_infinitely_client1.txt"
NCCL = REAL / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt"
NCCL_JSON = REAL / "nccl_tests_device" / "sendrecv_1node_2gpu_h200_socket_lo_v2.19.6.nccl-tests.json"
SOCKPERF = REAL / "sockperf" / "pingpong_tcp_1024B_half1_v3.7_testbed.txt"


def import_json(text: str, file_name: str) -> dict[str, Any]:
    """An import object as `import --json` prints it."""
    return importer.import_text(text, file_name).to_json()


def cli(*argv: str) -> Run:
    """test_cli's runner, and never a traceback whatever the input."""
    run = run_cli(*argv)
    assert "Traceback" not in run.stdout + run.stderr
    return run


@pytest.fixture
def deadline() -> Iterator[None]:
    """A read that blocks (a FIFO with no writer) fails the test in 5 s instead of hanging the suite."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError("blocked reading a file that is not a regular file")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(5)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.fifo"
    os.mkfifo(path)
    return path


# ------------------------------------------------------------------------------------ 1. only regular files are read


def test_import_refuses_a_fifo_a_device_and_a_directory_at_once(fifo: Path, tmp_path: Path, deadline: None) -> None:
    run = cli("import", str(fifo), "/dev/zero", str(tmp_path))
    assert run.status == 1 and run.stdout == ""
    assert run.stderr.splitlines() == [
        f"wirespeed: {fifo}: not a regular file (a FIFO)",
        "wirespeed: /dev/zero: not a regular file (a character device)",
        f"wirespeed: {tmp_path}: not a regular file (a directory)",
    ]


@pytest.mark.parametrize("command", [("exec", "--", "true"), ("switch", "status"), ("check", "--no-active")])
def test_a_cluster_file_that_is_a_fifo_or_device_is_refused_at_once(
    command: tuple[str, ...], fifo: Path, deadline: None
) -> None:
    for path in (str(fifo), "/dev/zero"):
        kind = "a FIFO" if path == str(fifo) else "a character device"
        argv = (
            [*command[:-2], "--cluster", path, *command[-2:]] if command[0] == "exec" else [*command, "--cluster", path]
        )
        run = cli(*argv)
        assert run.status == 2
        assert one_line(run) == (
            f"wirespeed: error: {path}: cannot read cluster file: not a regular file ({kind}) "
            "(hint: give the path of the cluster file itself, as `wirespeed init` writes it)"
        )


def test_wirespeed_cluster_naming_a_fifo_is_refused_at_once(
    fifo: Path, deadline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIRESPEED_CLUSTER", str(fifo))
    run = cli("exec", "--", "true")
    assert run.status == 2 and "not a regular file (a FIFO)" in one_line(run)


# ------------------------------------------------------------------------------------------ 2. non-UTF-8 cluster file


def test_a_cluster_file_with_a_stray_byte_names_its_offset_and_line(tmp_path: Path) -> None:
    path = tmp_path / "cluster.toml"
    path.write_bytes(b'[cluster]\nname = "lab"\n\n[[nodes]]\nname = "n\xff1"\nhost = "10.0.0.1"\n')
    for argv in (("exec", "--cluster", str(path), "--", "true"), ("switch", "status", "--cluster", str(path))):
        run = cli(*argv)
        assert run.status == 2
        assert one_line(run) == (
            f"wirespeed: error: {path}: cannot read cluster file: not UTF-8 text: byte 0xff at offset 43 (line 5) "
            "(hint: save the cluster file as UTF-8 text)"
        )


# ------------------------------------------------------------------------------------------------ 3. a size limit


def test_an_import_past_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:  # sparse: the size is what is refused, before a byte is read
        handle.write(NCCL.read_bytes())
        handle.truncate(importer.MAX_IMPORT_BYTES + 1)
    run = cli("import", str(big), str(NCCL))
    assert run.status == 1
    assert one_line(run) == (
        f"wirespeed: {big}: 16.0 MiB ({importer.MAX_IMPORT_BYTES + 1} bytes), larger than the 16 MiB limit for an "
        "import: a tool's output is kilobytes; cut out the run to import (e.g. with sed -n)"
    )
    assert "all_reduce" in run.stdout  # the other file is still imported


def test_the_limit_is_far_above_every_real_output() -> None:
    largest = max(p.stat().st_size for p in REAL.glob("*/*.txt"))
    assert largest * 100 < importer.MAX_IMPORT_BYTES


def test_detection_reads_only_the_head_of_a_large_file(monkeypatch: pytest.MonkeyPatch) -> None:
    text = NCCL.read_text()
    rows = [line for line in text.splitlines(keepends=True) if line.strip() and not line.startswith("#")]
    big = text + "".join(rows) * (4 * importer.DETECT_CHARS // len("".join(rows)))
    seen: list[int] = []
    looks_like = nccl_tests.looks_like
    monkeypatch.setattr(nccl_tests, "looks_like", lambda t: seen.append(len(t)) or looks_like(t))
    assert importer.detect(big) == "nccl-tests"
    assert seen and max(seen) <= importer.DETECT_CHARS + 200


# ------------------------------------------------------------------------------------ 4. impossible figures


def _iperf3_json(sent: dict[str, Any] | None = None, **end: Any) -> str:
    block = {"start": 0, "end": 10.0, "seconds": 10.0, "bytes": 12_500_000_000, "bits_per_second": 1e10}
    data = {
        "start": {"version": "iperf 3.16", "test_start": {"protocol": "TCP", "num_streams": 1}, "connecting_to": {}},
        "intervals": [],
        "end": {"sum_sent": {**block, "retransmits": 0, **(sent or {})}, "sum_received": dict(block), **end},
    }
    return json.dumps(data, indent=1)


def test_a_sane_iperf3_json_imports() -> None:
    obj = importer.import_text(_iperf3_json(), "ok.json").to_json()
    assert obj["sent_bps"] == 1e10 and obj["received_bps"] == 1e10


@pytest.mark.parametrize(
    ("sent", "why"),
    [
        ({"bits_per_second": -1e308}, "sum_sent bits_per_second is -1e+299 Gb/s, negative"),
        ({"bits_per_second": math.nan}, "sum_sent bits_per_second is nan, not a finite number"),
        ({"bits_per_second": math.inf}, "sum_sent bits_per_second is inf, not a finite number"),
        ({"bits_per_second": 2e13, "bytes": 25_000_000_000_000}, "is 20000 Gb/s, above 10000 Gb/s"),
        ({"bits_per_second": 9e11}, "sum_sent says 900 Gb/s but 1.25e+10 bytes in 10 s is 10 Gb/s"),
        ({"bytes": -5}, "sum_sent bytes is -5, negative"),
        ({"retransmits": -1}, "sum_sent retransmits is -1, negative"),
    ],
)
def test_an_impossible_iperf3_figure_is_untrustworthy_never_shown(
    sent: dict[str, Any], why: str, tmp_path: Path
) -> None:
    path = tmp_path / "iperf3.json"
    path.write_text(_iperf3_json(sent))
    for argv in (("import", str(path)), ("import", "--json", str(path))):
        run = cli(*argv)
        assert run.status == 1 and run.stdout == ""
        line = one_line(run)
        assert line.startswith(f"wirespeed: {path}: line ") and why in line and "untrustworthy output" in line
        assert "9999" not in line


def test_the_bench_path_gets_no_figure_from_impossible_iperf3_output() -> None:
    from wirespeed.core.records.results import Flow

    flow = Flow(("a", "eth0"), ("b", "eth0"), "10.0.0.1", "10.0.0.2", 200.0)
    (result,) = iperf3.flow_results(flow, _iperf3_json({"bits_per_second": -1e308}), None)
    assert result.tool_gbps is None and result.error is not None and "untrustworthy" in result.error


def test_impossible_perftest_and_nccl_figures_are_untrustworthy(tmp_path: Path) -> None:
    cases = {
        "perftest.txt": PERFTEST.read_text().replace("92.57 ", "99999999.99 ", 1),
        "nccl.txt": NCCL.read_text().replace("  27.50  ", " -27.50  ", 1),
    }
    data = json.loads(NCCL_JSON.read_text())
    data["results"][0]["out_of_place"]["bus_bw"] = 1e300
    cases["nccl.json"] = json.dumps(data)
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        run = cli("import", str(path))
        assert run.status == 1 and run.stdout == "", name
        line = one_line(run)
        assert "untrustworthy output" in line and line.startswith(f"wirespeed: {path}: line "), line
    assert "line 44: out-of-place busbw is -27.5 GB/s, negative" in cli("import", str(tmp_path / "nccl.txt")).stderr
    with pytest.raises(
        ValueError, match=r"^line 25: BW average is 1e\+08 Gb/s, above 10000 Gb/s: untrustworthy output$"
    ):
        perftest.parse_text(cases["perftest.txt"])


def test_a_one_gpu_alltoall_imports_with_its_implausible_in_place_figures_named() -> None:
    """A real one-GPU all-to-all (43,046 GB/s and more in its in-place column: nothing moved) is no damage: the
    table is imported and each figure left out is one warning naming its line, column and why."""
    path = REAL / "nccl_tests_device" / "alltoall_1gpu_h100_v2.19.6.txt"
    run = cli("import", str(path))
    assert run.status == 0 and "alltoall" in run.stdout, run.stdout
    warnings = [line for line in run.stderr.splitlines() if "GB/s is above 12500 GB/s" in line]
    assert len(warnings) == 5 and "line 30: in-place algbw 20253 GB/s" in warnings[0], run.stderr
    assert "4 more figures left out (--json lists them all)" in run.stderr
    obj = json.loads(cli("import", "--json", str(path)).stdout)
    assert len(obj["implausible"]) == 9 and obj["rows"][-1]["in_place"] is None


def test_nccl_tests_own_nan_is_still_shown_as_none() -> None:
    data = json.loads(NCCL_JSON.read_text())
    data["results"][0]["out_of_place"]["alg_bw"] = "nan"
    assert import_json(json.dumps(data), "nan.json")["rows"][0]["out_of_place"]["algbw_GBps"] is None


def test_a_negative_sockperf_latency_is_untrustworthy() -> None:
    text = SOCKPERF.read_text()
    assert sockperf.parse(text).p50_us == 6.106
    with pytest.raises(figures.Untrustworthy, match=r"sockperf percentile 50\.000 is -6\.106, negative"):
        sockperf.parse(text.replace("percentile 50.000 =    6.106", "percentile 50.000 =   -6.106"))


@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf, -math.inf, 1e5, "12", None, True])
def test_the_shared_validator_refuses_what_no_link_measures(value: Any) -> None:
    with pytest.raises(figures.Untrustworthy, match="untrustworthy output"):
        figures.rate_gbps(value, "rate")


def test_the_shared_validator_passes_real_figures() -> None:
    assert figures.rate_gbps(0, "rate") == 0.0 and figures.rate_gbps(800, "rate") == 800.0
    figures.consistent_rate(1.25e9, 1.0, 10.0, "flow")
    with pytest.raises(figures.Untrustworthy, match="says 20 Gb/s but"):
        figures.consistent_rate(1.25e9, 1.0, 20.0, "flow")


# ------------------------------------------------------------------------------------ 5. out-of-range option values


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("agent", "sample", "--node", "n", "--ifaces", "lo", "--count", "-1"), "'--count': -1 is not in the range"),
        (
            ("agent", "sample", "--node", "n", "--ifaces", "lo", "--interval", "-1"),
            "'--interval': -1.0 is not in the range 0<x<=60",
        ),
        (
            ("agent", "sample", "--node", "n", "--ifaces", "lo", "--interval", "nan"),
            "'--interval': 'nan' is not a finite number",
        ),
        (
            ("agent", "sample", "--node", "n", "--ifaces", "lo", "--interval", "inf"),
            "'--interval': 'inf' is not a finite number",
        ),
        (
            ("agent", "sample", "--node", "n", "--ifaces", "lo", "--interval", "0"),
            "'--interval': 0.0 is not in the range 0<x<=60",
        ),
        (("agent", "sample", "--node", "n", "--ifaces", "../../etc"), "--ifaces: '../../etc' is not an interface"),
        (("agent", "sample", "--node", "n", "--ifaces", "eth0\n"), "--ifaces: 'eth0\\n' is not an interface"),
        (("agent", "sample", "--node", "n", "--ifaces", "a" * 16), "is not an interface name"),
        (("agent", "sample", "--node", "n\n", "--ifaces", "lo"), "--node 'n\\n': not a node name"),
        (("agent", "sample", "--node", "", "--ifaces", "lo"), "--node '': not a node name"),
        (("watch", "--hosts", "127.0.0.1", "--duration", "-1"), "'--duration': -1.0 is not in the range 0<x<=604800"),
        (("watch", "--hosts", "127.0.0.1", "--duration", "0"), "'--duration': 0.0 is not in the range 0<x<=604800"),
    ],
)
def test_out_of_range_values_are_refused_in_one_line(argv: tuple[str, ...], said: str) -> None:
    run = cli(*argv)
    assert run.status == 2 and run.stdout == ""
    assert said in one_line(run)


def test_agent_sample_with_a_count_stops_by_itself() -> None:
    run = cli("agent", "sample", "--node", "n", "--ifaces", "lo", "--count", "1", "--interval", "0.01")
    assert run.status == 0 and run.stderr == ""


# -------------------------------------------------------------------------- 6. full-match validation of names


BAD_ENDINGS = ["\n", "\r", "\t", "\x00", "\x1b[31m", " ", "\u2028"]


@pytest.mark.parametrize("ending", BAD_ENDINGS)
def test_a_host_name_or_user_with_a_control_character_is_not_valid(ending: str, tmp_path: Path) -> None:
    for field, node in (
        ("host", Node(name="n1", host=f"127.0.0.2{ending}")),
        ("node name", Node(name=f"n1{ending}", host="127.0.0.2")),
        ("user", Node(name="n1", host="127.0.0.2", user=f"bob{ending}")),
    ):
        with pytest.raises(InventoryError, match=field):
            validate_node(node, "test")
    path = tmp_path / "cluster.toml"
    path.write_text(f'[[nodes]]\nname = "n1"\nhost = {json.dumps("127.0.0.2" + ending)}\n')
    run = cli("exec", "--cluster", str(path), "--", "true")
    assert run.status == 2 and f"host {('127.0.0.2' + ending)!r} is not a host name or address" in one_line(run)


def test_hosts_with_a_port_that_is_not_ascii_digits_is_one_line() -> None:
    run = cli("exec", "--hosts", "a:\u00b2", "--", "true")
    assert run.status == 2 and "'\u00b2' is not a port number" in one_line(run)


@pytest.mark.parametrize(
    ("table", "value"),
    [("password_env", "WIRESPEED_PW\n"), ("bridge", "bridge1\n"), ("ports", '{ n1 = ["qsfp56-dd-1-1\\n"] }')],
)
def test_switch_names_are_full_matched(table: str, value: str, tmp_path: Path) -> None:
    path = tmp_path / "cluster.toml"
    shown = value if table == "ports" else json.dumps(value)
    path.write_text(f'[[nodes]]\nname = "n1"\nhost = "10.0.0.1"\n[switch]\nkind = "routeros"\naddress = "x"\n'
                    f"{table} = {shown}\n")  # fmt: skip
    run = cli("switch", "plan", "--cluster", str(path))
    assert run.status == 2 and f"[switch] {table}" in one_line(run)


# --------------------------------------------------------------------------------- 7. user text printed verbatim


@pytest.fixture
def odd_cluster(tmp_path: Path) -> Path:
    """One node named `a:b:c` (the `:b:` Rich would turn into an emoji), run here by the local agent."""
    path = tmp_path / "cluster.toml"
    agent = json.dumps([sys.executable, "-m", "wirespeed"])
    path.write_text(f'[[nodes]]\nname = "a:b:c"\nhost = "localhost"\nagent = {agent}\n')
    return path


def test_names_and_outputs_are_printed_without_markup_or_emoji(odd_cluster: Path) -> None:
    text = ":b: [red]red[/red] :thumbs_up: [bold]"
    run = cli("exec", "--cluster", str(odd_cluster), "--", "echo", text)
    assert run.status == 0, run.stderr
    assert "---- a:b:c (1)" in run.stdout and text in run.stdout
    assert "\U0001f171" not in run.stdout and "\U0001f44d" not in run.stdout


def test_the_output_channel_never_interprets_markup() -> None:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    out = Output(env, json_mode=False)
    out.console.print("--hosts a:b:c [red]x[/red]")
    out.message("a:b:c [red]x[/red] :smile:")
    out.warn("[bold]w[/bold]")
    assert isinstance(env.stdout, io.StringIO) and isinstance(env.stderr, io.StringIO)
    assert env.stdout.getvalue() == "--hosts a:b:c [red]x[/red]\n"
    assert env.stderr.getvalue() == "a:b:c [red]x[/red] :smile:\nwirespeed: warning: [bold]w[/bold]\n"


def test_an_imported_file_with_markup_in_its_name_and_content_is_shown_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "[red]x:b:.txt"
    path.write_text("mlx5_0 port 1 ==> en:b:p1 (Up)\nmlx5_1 port 1 ==> [red]p2 (Up)\n")
    run = cli("import", str(path))
    assert run.status == 0, run.stderr
    assert f"{path}: ibdev2netdev" in run.stdout and "en:b:p1" in run.stdout and "[red]p2" in run.stdout


# ------------------------------------------------------------------------------- found by the adversarial pass


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("switch", "status", "--timeout", "nan"), "'--timeout': 'nan' is not a finite number"),
        (("switch", "verify", "--wait", "nan"), "'--wait': 'nan' is not a finite number"),
        (("switch", "verify", "--mtu", "-5"), "'--mtu': -5 is not in the range 1280<=x<=9978"),
        (("switch", "apply", "--mtu", "0"), "'--mtu': 0 is not in the range 1280<=x<=9978"),
    ],
)
def test_switch_options_refuse_nan_and_impossible_mtus_before_any_connection(
    argv: tuple[str, ...], said: str, tmp_path: Path
) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text('[[nodes]]\nname = "n1"\nhost = "10.0.0.1"\n[switch]\nkind = "routeros"\naddress = "192.0.2.1"\n')
    run = cli(*argv, "--cluster", str(path))
    assert run.status == 2 and said in one_line(run)


def test_an_import_file_name_with_a_newline_stays_on_one_line(tmp_path: Path) -> None:
    name = tmp_path / "a\nb.txt"
    run = cli("import", str(name))
    assert run.status == 1 and one_line(run) == f"wirespeed: {str(name)!r}: no such file"


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_finite_range_refuses_what_no_bound_can(value: str) -> None:
    import click

    from wirespeed.cli.common import FiniteRange

    with pytest.raises(click.BadParameter, match="is not a finite number"):
        FiniteRange(0, 10, min_open=True).convert(value, None, None)
    assert FiniteRange(1, 3600).convert("20", None, None) == 20.0


# ------------------------------------------------------------ issue 35: every numeric option of every command


def _numeric_options() -> list[tuple[tuple[str, ...], click.Option]]:
    """Every option of every command (hidden ones included) that takes a number, from click's command tree: a new
    option is covered the day it is added."""
    from wirespeed.cli.main import cli as root

    found: list[tuple[tuple[str, ...], click.Option]] = []

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, NUMERIC_TYPES):
                found.append((path, param))
        if isinstance(command, click.Group):
            for name, sub in sorted(command.commands.items()):
                walk(sub, (*path, name))

    walk(root, ())
    return found


NUMERIC_TYPES = (click.types.FloatParamType, click.types.IntParamType)  # the ranges are subclasses
NUMERIC_OPTIONS = _numeric_options()
# Where 0 means something (and is accepted): every other numeric option refuses it. A new option that takes 0 must
# be named here, with what 0 means.
ZERO_MEANS = {
    ("agent", "sample", "--count"): "until stdin closes",
    ("compare", "--threshold"): "any change counts",
    ("switch", "apply", "--wait"): "do not wait for the links",
    ("switch", "verify", "--wait"): "do not wait for the links",
}
BAD_NUMBERS = ["nan", "inf", "-inf", "1e309", "-1", "0", "too-large"]


def _name(option: click.Option) -> str:
    return max(option.opts, key=len)  # the long form: `--nodes`, not `-n`


def _bad(option: click.Option, value: str) -> str:
    if value != "too-large":
        return value
    assert isinstance(option.type, click.types._NumberRangeBase) and option.type.max is not None
    return str(option.type.max + 1)


def _accepts(option: click.Option, value: str) -> bool:
    try:
        option.type.convert(value, option, None)
    except click.BadParameter:
        return False
    return True


def test_the_numeric_options_are_all_found() -> None:
    names = {(*path, _name(option)) for path, option in NUMERIC_OPTIONS}
    for expected in [
        ("watch", "--duration"),
        ("agent", "probe", "--duration"),
        ("exec", "--timeout"),
        ("bench", "--interval"),
        ("commission", "--interval"),
        ("compare", "--threshold"),
        ("agent", "apply", "--pause-after"),
        ("testbed", "up", "--nodes"),
        ("tune", "nccl", "--iters"),
    ]:
        assert expected in names  # fmt: skip
    assert len(names) >= 30


@pytest.mark.parametrize(
    ("path", "option"), NUMERIC_OPTIONS, ids=[" ".join((*p, _name(o))) for p, o in NUMERIC_OPTIONS]
)
def test_every_numeric_option_has_a_finite_documented_range(path: tuple[str, ...], option: click.Option) -> None:
    """One of wirespeed's own types (cli.common: Seconds, Percent, Count), both bounds set: --help shows them."""
    from wirespeed.cli.common import Count, FiniteRange

    assert isinstance(option.type, FiniteRange | Count), (path, option.opts, option.type)
    assert option.type.min is not None and option.type.max is not None
    assert math.isfinite(option.type.max) and option.type.max < 10**10
    zero_ok = _accepts(option, "0")
    assert zero_ok == ((*path, _name(option)) in ZERO_MEANS), "0 accepted where it means nothing (or not where named)"
    extra = option.get_help_extra(click.Context(click.Command("x")))
    assert "range" in extra and str(option.type.max).removesuffix(".0") in extra["range"]


@pytest.mark.parametrize(
    ("path", "option", "value"),
    [(p, o, v) for p, o in NUMERIC_OPTIONS for v in BAD_NUMBERS],
    ids=[f"{' '.join((*p, _name(o)))}={v}" for p, o in NUMERIC_OPTIONS for v in BAD_NUMBERS],
)
def test_every_numeric_option_refuses_what_is_no_number_of_it(
    path: tuple[str, ...], option: click.Option, value: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """nan, the infinities, 1e309, -1, 0 (where it means nothing) and one past the maximum: refused by option
    parsing, through the real entry point, before the command acts: exit 2, one line naming the option."""
    monkeypatch.setenv("WIRESPEED_CLUSTER", str(tmp_path / "no-such-cluster.toml"))  # nothing real to act on
    bad = _bad(option, value)
    if value == "0" and (*path, _name(option)) in ZERO_MEANS:
        assert _accepts(option, bad)
        return
    assert not _accepts(option, bad)  # never run a command with a value it takes: it would act
    run = cli(*path, f"{_name(option)}={bad}")
    assert run.status == 2 and run.stdout == ""
    line = one_line(run)
    assert line.startswith(f"wirespeed: error: Invalid value for '{_name(option)}") and len(line) < 200, line


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    index=st.integers(0, len(NUMERIC_OPTIONS) - 1),
    value=st.one_of(
        st.floats().map(repr),
        st.integers(-(10**30), 10**30).map(str),
        st.sampled_from(["nan", "NaN", "-nan", "inf", "Infinity", "-inf", "1e309", "-1e309", "0x10", "1_0", " 5"]),
        st.text(max_size=12),
    ),
)
def test_any_value_of_any_numeric_option_is_in_its_range_or_refused_in_one_line(
    index: int, value: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Whatever text is given: the type takes it as a finite number within its documented bounds, or the real
    entry point refuses it (exit 2, one line naming the option, no traceback) before anything acts."""
    path, option = NUMERIC_OPTIONS[index]
    try:
        number = option.type.convert(value, option, None)
    except click.BadParameter:
        monkeypatch.setenv("WIRESPEED_CLUSTER", str(tmp_path / "no-such-cluster.toml"))
        run = cli(*path, f"{_name(option)}={value}")
        assert run.status == 2 and run.stdout == ""
        assert one_line(run).startswith(f"wirespeed: error: Invalid value for '{_name(option)}")
        return
    assert isinstance(option.type, click.types._NumberRangeBase)
    assert math.isfinite(number) and option.type.min <= number <= option.type.max
    assert number != 0 or (*path, _name(option)) in ZERO_MEANS


@pytest.mark.parametrize(
    "argv",
    [
        ("testbed", "shell", "--prefix", "P", "-oProxyCommand=sh -c 'touch /tmp/x' # h"),
        ("testbed", "exec", "--prefix", "P", "-oProxyCommand=sh"),
        ("exec", "-oProxyCommand=sh -c id # h"),
        ("watch", "-oProxyCommand=sh -c id # h"),
    ],
)
def test_an_argument_that_looks_like_an_option_is_refused_never_help(argv: tuple[str, ...]) -> None:
    """`ignore_unknown_options` read `-oProxyCommand=ssh ...` as short options and its `h` as -h: help, exit 0."""
    run = cli(*argv)
    assert run.status == 2 and run.stdout == ""
    assert one_line(run) == "wirespeed: error: No such option '-o'."


def test_a_command_after_the_node_keeps_its_own_options() -> None:
    """After NODE (or `--`), every argument is the command's, options included: nothing is read as wirespeed's."""
    run = cli("testbed", "shell", "--prefix", "nosuch-", "nosuch-1", "ls", "-la", "--help")
    assert run.status != 0 and "Usage" not in run.stdout
    assert one_line(run).startswith("wirespeed: error: testbed 'nosuch-' is not up")


@pytest.mark.parametrize("budget", ["1e309", "9" * 400, "100000000h", "inf", "nan"])
def test_a_tune_budget_past_a_week_or_not_a_number_is_refused(budget: str) -> None:
    run = cli("tune", "nccl", "--budget", budget, "--hosts", "localhost")
    assert run.status == 2 and "--budget" in one_line(run) and len(one_line(run)) < 200


def test_the_separator_after_the_node_is_not_the_commands_first_word() -> None:
    """`testbed shell P NODE -- wirespeed init --yes` (as the demo and README write it) runs `wirespeed init
    --yes`: options end at NODE, so click hands the `--` on with the command."""
    from wirespeed.cli.testbed import after_node

    assert after_node(("--", "wirespeed", "init", "--yes")) == ["wirespeed", "init", "--yes"]
    assert after_node(("wirespeed", "--", "x")) == ["wirespeed", "--", "x"]
    assert after_node(()) == []
