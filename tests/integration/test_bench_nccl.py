"""The nccl rung for real: nccl-tests through mpirun, two GPUs as two ranks on one host, the socket transport forced
(`NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1`). Runs on the GPU machine; skipped elsewhere with the reason."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment

pytestmark = pytest.mark.gpu

SOCKET_ONLY = ("NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_SOCKET_IFNAME=lo", "NCCL_NVLS_ENABLE=0")


def bench_nccl(runs: Path, *argv: str) -> tuple[int, dict[str, object]]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=160)
    code = main(["bench", "nccl", "--hosts", "localhost", "--json", "--runs", str(runs), *argv], env)
    return code, json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]


def left_running() -> list[str]:
    found = subprocess.run(["pgrep", "-af", "_perf|mpirun|agent sample"], capture_output=True, text=True, check=False)
    return [line for line in found.stdout.splitlines() if "pgrep" not in line]


def test_socket_transport_is_named_fallback_and_busbw_is_nccl_tests_own(tmp_path: Path) -> None:
    forced = [arg for item in SOCKET_ONLY for arg in ("--env", item)]
    code, data = bench_nccl(tmp_path, "--collectives", "sendrecv,all_reduce", "--max-size", "64M", *forced)
    assert code == 0, data
    run = Path(str(data["run"]))
    for rung in data["rungs"]:  # type: ignore[attr-defined]
        assert rung["status"] == "ran", rung
        collective = rung["collective"]
        assert collective["transport"] == "NET/Socket"
        assert collective["socket_interfaces"] == ["lo"]
        assert collective["ranks"] == 2
        assert collective["figures_from"] == "json"
        assert rung["ceiling"]["name"] == "fallback"
        assert "NET/Socket on lo" in rung["ceiling"]["evidence"][0]
        # busbw is what nccl-tests wrote in its own JSON, size by size
        written = json.loads((run / rung["rung"] / "nccl-tests.json").read_text())
        expected = [(int(r["size"]), r["out_of_place"]["bus_bw"]) for r in written["results"]]
        assert [(r["size_bytes"], r["busbw_GBps"]) for r in collective["rows"]] == expected
        assert collective["avg_busbw_GBps"] == written["average_bus_bandwidth"]["bandwidth"]
        assert rung["forward_gbps"] == pytest.approx(max(b for _, b in expected) * 8)
        assert rung["full_duplex_gbps"] == pytest.approx(2 * rung["forward_gbps"])
        # nothing but NCCL/UCX/transport variables of rank 0's environment is kept
        assert all(
            e.startswith(("NCCL_", "UCX_", "CUDA_VISIBLE", "NVIDIA_VISIBLE", "OMPI_MCA_")) for e in written["env"]
        )
        assert (run / rung["rung"] / "nccl-tests.out").read_text().count("NET/Socket") > 0
        assert (run / f"{rung['rung']}.samples.jsonl").exists()
    assert left_running() == []


def test_without_forcing_the_ranks_talk_over_p2p_and_no_network_is_named(tmp_path: Path) -> None:
    code, data = bench_nccl(tmp_path, "--collectives", "all_reduce", "--max-size", "64M", "--env", "NCCL_NVLS_ENABLE=0")
    assert code == 0, data
    rung = data["rungs"][0]  # type: ignore[index]
    assert rung["collective"]["transport"].startswith(("P2P/", "SHM/"))
    assert rung["ceiling"]["name"] == "unknown"
    assert "no network in the path" in rung["ceiling"]["evidence"][0]
    assert left_running() == []


def test_the_report_of_a_real_nccl_run_plots_busbw_against_message_size(tmp_path: Path) -> None:
    code, data = bench_nccl(tmp_path, "--collectives", "all_reduce", "--max-size", "64M", "--env", "NCCL_NVLS_ENABLE=0")
    assert code == 0, data
    run = Path(str(data["run"]))
    out = io.StringIO()
    assert main(["report", str(run), "--format", "md"], Environment(stdout=out, stderr=io.StringIO())) == 0
    text = out.getvalue()
    rows = data["rungs"][0]["collective"]["rows"]  # type: ignore[index]
    assert "| 64 MiB |" in text and f"{rows[-1]['busbw_GBps']:.2f}" in text
    assert main(["report", str(run)], Environment(stdout=io.StringIO(), stderr=io.StringIO())) == 0
    page = (run / "report.html").read_text()
    assert "NCCL bus bandwidth against message size" in page and "<polyline" in page
    assert "GPU 0" in page  # the environment names the GPUs and their driver
