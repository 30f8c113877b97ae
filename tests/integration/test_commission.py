"""`wirespeed commission` on the emulated cluster as a user meets it: two Sparks, two cables, wirespeed installed
on the first node only; `init` there, then the whole job in one command from a cluster file that names no agent:
the agent shipped, every runnable rung measured before and after the fixes, one report with both. Also: a tool
missing on one node is found before anything is measured, and the demo is the user's journey with no FAIL and
no error line."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.cluster.inventory import Cluster, render_cluster_toml
from wirespeed.engine.clusters import load_cluster_file
from wirespeed.engine.remote import Remote

from .helpers import running_testbed

if TYPE_CHECKING:
    from wirespeed.testbed.state import TestbedState

pytestmark = pytest.mark.root
PREFIX = "wcm-"


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def shell(state: TestbedState, node: str, *argv: str) -> subprocess.CompletedProcess[str]:
    from wirespeed.testbed.login import shell_argv

    return subprocess.run(shell_argv(state, node, list(argv), tty=False), capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip


def without_agent(cluster: Cluster, path: Path) -> Path:
    """The testbed's cluster file with no `agent` for any node: they start whatever `wirespeed` they can find."""
    from dataclasses import replace

    from wirespeed.core.cluster.inventory import DEFAULT_AGENT

    path.write_text(render_cluster_toml(replace(cluster, nodes=tuple(replace(n, agent=DEFAULT_AGENT)
                                                                     for n in cluster.nodes))))  # fmt: skip
    return path


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestbedState, Remote, Path]]:
    with running_testbed(PREFIX, nodes=2, topology="direct", cables=2) as (state, remote):
        plain = without_agent(remote.cluster, tmp_path_factory.mktemp("cluster") / "cluster.toml")
        yield state, remote, plain


def clear_shipped(remote: Remote) -> None:
    for node in remote.cluster.nodes:
        remote.run(node, ["sh", "-c", 'rm -rf "$HOME/.cache/wirespeed"'], timeout_s=30)


def test_init_then_commission_ships_the_agent_and_reports_before_and_after(
    bed: tuple[TestbedState, Remote, Path], tmp_path: Path
) -> None:
    state, remote, plain = bed
    first, second = remote.cluster.names
    assert shell(state, second, "sh", "-c", "command -v wirespeed").returncode != 0  # nothing of ours there
    done = shell(state, first, "wirespeed", "init", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    clear_shipped(remote)

    prom = tmp_path.parent / f"{tmp_path.name}-prom"
    code, out, err = cli("commission", "--cluster", str(plain), "--yes", "--seconds", "2", "--runs", str(tmp_path),
                         "--textfile", str(prom))  # fmt: skip
    assert code == 0, err
    assert re.search(rf"shipped agent-\S+\.pyz to {second}", err), err
    for number, name in enumerate(("discover", "preflight", "checks", "bench before", "fix", "checks after",
                                   "bench after", "report"), start=1):  # fmt: skip
        assert f"[{number}/8] {name}:" in err, (name, err)
    assert "Permission denied" not in out + err and "Traceback" not in out + err
    [run] = list(tmp_path.iterdir())
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "complete" and record["phases"] == ["before", "after"]
    assert [s["status"] for s in record["steps"]] == ["done"] * 8, record["steps"]
    for phase in ("before", "after"):
        for rung in ("tcp-single", "tcp-multi", "tcp-halves", "tcp-lat"):
            assert json.loads((run / phase / f"{rung}.json").read_text())["status"] == "ran", (phase, rung)
        assert json.loads((run / phase / "rdma-bw.json").read_text())["status"] == "skipped"
    from wirespeed.engine.runs import read_record, record_files

    kept = {str(f.relative_to(run)): read_record(run, f) for f in record_files(run)}  # every file of it, typed
    assert not [name for name, typed in kept.items() if isinstance(typed, dict)], kept
    assert {"run.json", "discovery.json", "fix.json", "fix-record.json", "before/checks.json",
            "after/checks.json", "after/discovery.json"} <= set(kept), sorted(kept)  # fmt: skip
    metrics = (prom / "wirespeed_bench.prom").read_text()  # both phases, for a dashboard's history
    for phase in ("before", "after"):
        line = rf'^wirespeed_bench_ceiling_info\{{ceiling="[\w-]+",phase="{phase}",rung="tcp-halves"\}} 1\.0$'
        assert re.search(line, metrics, re.MULTILINE), metrics
    page = (run / "report.html").read_text()
    takeaway = page[page.index('id="takeaway"') : page.index("</section>", page.index('id="takeaway"'))]
    assert "<th>before</th><th>after</th><th>change</th>" in takeaway and "tcp-halves" in takeaway
    assert 'id="steps"' in page and 'id="fixes"' in page
    assert "rung" in out and "before" in out and "after" in out  # the terminal ends with the same table


def test_a_tool_missing_on_one_node_is_named_before_anything_runs(
    bed: tuple[TestbedState, Remote, Path], tmp_path: Path
) -> None:
    """iperf3 hidden from node 2's wirespeed (its PATH without iperf3 and sockperf): bench tcp stops at once,
    naming the node and the install command, with no tool started on any node."""
    _, remote, _ = bed
    hidden = tmp_path / "bin"
    hidden.mkdir()
    for tool in Path("/usr/bin").iterdir():
        if tool.name not in ("iperf3", "sockperf"):
            (hidden / tool.name).symlink_to(tool)
    from dataclasses import replace

    first, second = remote.cluster.nodes
    agent = ("env", f"PATH={hidden}", sys.executable, "-m", "wirespeed")
    path = tmp_path / "cluster.toml"
    path.write_text(render_cluster_toml(replace(remote.cluster, nodes=(first, replace(second, agent=agent)))))
    assert load_cluster_file(path).node(second.name).agent == agent
    started = time.monotonic()
    code, _, err = cli("bench", "tcp", "--cluster", str(path), "--runs", str(tmp_path / "runs"))
    took = time.monotonic() - started
    assert code == 3, err  # nothing could be measured
    assert f"{second.name}: iperf3 not found" in err and "apt install iperf3" in err, err
    assert f"{second.name}: sockperf not found" in err and "apt install sockperf" in err, err
    [run] = list((tmp_path / "runs").iterdir())
    assert not list(run.glob("tcp-*/*"))  # no tool ever ran
    print(f"bench tcp with iperf3 missing on {second.name}: exit 3 after {took:.1f} s")


def test_the_demo_is_the_users_journey_with_no_fail_and_no_error_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, "-m", "wirespeed.demo"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=900, env=env, check=False)  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "demo: ok" in said, said[-4000:]
    bad = [
        line
        for line in said.splitlines()
        if re.search(r"\bFAIL\b|\berror:|\bERROR\b|Traceback|Permission denied", line)
    ]
    assert bad == [], bad
    assert list((tmp_path / "demo-out" / "runs").glob("*/report.html"))
    assert "wirespeed init" in said and "wirespeed commission" in said
