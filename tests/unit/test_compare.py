"""Comparing two runs: per rung and per message size, what got worse by more than the threshold; and the
`runs`, `baseline set` and `compare` commands on run directories as `wirespeed bench` writes them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from wirespeed.cli.app import main
from wirespeed.cli.output import Environment
from wirespeed.core.compare import compare_runs, regressions


def rung(name: str, forward: float | None, status: str = "ran", busbw: dict[int, float] | None = None) -> dict:  # type: ignore[type-arg]
    data: dict = {"rung": name, "status": status, "forward_gbps": forward, "reverse_gbps": None,  # type: ignore[type-arg]
                  "ceiling": {"name": "wire", "evidence": ["x"]} if status == "ran" else None}  # fmt: skip
    if busbw is not None:
        data["collective"] = {"rows": [{"size_bytes": s, "busbw_GBps": b} for s, b in busbw.items()]}
    return data


def test_a_drop_past_the_threshold_is_worse_and_a_small_one_is_not() -> None:
    before = {"tcp-halves": rung("tcp-halves", 100.0), "tcp-single": rung("tcp-single", 50.0)}
    after = {"tcp-halves": rung("tcp-halves", 80.0), "tcp-single": rung("tcp-single", 48.0)}
    changes = compare_runs(before, after)
    by_rung = {c.rung: c for c in changes}
    assert by_rung["tcp-halves"].percent == pytest.approx(-20.0)
    assert by_rung["tcp-single"].percent == pytest.approx(-4.0)
    assert [c.rung for c in regressions(changes, 5.0)] == ["tcp-halves"]
    assert regressions(changes, 25.0) == []


def test_per_message_size_busbw_and_a_rung_that_stopped_running() -> None:
    before = {"nccl-all_reduce": rung("nccl-all_reduce", 160.0, busbw={1 << 20: 5.0, 1 << 30: 20.0}),
              "rdma-bw": rung("rdma-bw", 190.0)}  # fmt: skip
    after = {"nccl-all_reduce": rung("nccl-all_reduce", 160.0, busbw={1 << 20: 2.0, 1 << 30: 20.0}),
             "rdma-bw": rung("rdma-bw", None, status="failed")}  # fmt: skip
    worse = regressions(compare_runs(before, after), 5.0)
    assert {(c.rung, c.measure) for c in worse} == {
        ("nccl-all_reduce", "busbw_GBps @ 1048576 B"),
        ("rdma-bw", "forward_gbps"),
    }


def write_run(root: Path, name: str, rungs: list[dict]) -> Path:  # type: ignore[type-arg]
    run = root / name
    run.mkdir(parents=True)
    (run / "discovery.json").write_text(json.dumps({"nodes": {"s1": {}, "s2": {}}}))
    for r in rungs:
        (run / f"{r['rung']}.json").write_text(json.dumps(r))
    (run / "takeaway.json").write_text("[]")
    return run


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def test_runs_baseline_and_compare_commands(tmp_path: Path) -> None:
    write_run(tmp_path, "20261101T000000Z", [rung("tcp-halves", 3.97)])
    write_run(tmp_path, "20261102T000000Z", [rung("tcp-halves", 3.10)])
    code, out, _ = cli("runs", "--runs", str(tmp_path), "--json")
    listed = json.loads(out)
    assert code == 0 and [r["run"] for r in listed] == ["20261101T000000Z", "20261102T000000Z"]
    assert listed[0]["nodes"] == ["s1", "s2"] and listed[0]["rungs"]["tcp-halves"]["forward_gbps"] == 3.97
    assert cli("baseline", "set", "20261101T000000Z", "--runs", str(tmp_path))[0] == 0
    code, out, _ = cli("compare", str(tmp_path / "20261102T000000Z"), "--runs", str(tmp_path), "--json")
    data = json.loads(out)
    assert code == 1 and data["changes"][0]["worse"] is True
    assert data["changes"][0]["change_percent"] == pytest.approx(100 * (3.10 - 3.97) / 3.97)
    code, _, _ = cli("compare", str(tmp_path / "20261101T000000Z"), str(tmp_path / "20261102T000000Z"),
                     "--threshold", "30", "--runs", str(tmp_path))  # fmt: skip
    assert code == 0
    code, out, _ = cli("runs", "--runs", str(tmp_path))
    assert "(baseline)" in out and "tcp-halves 3.97 Gb/s (wire)" in out


def test_compare_errors_are_one_line(tmp_path: Path) -> None:
    code, _, err = cli("compare", str(tmp_path / "nope"), "--runs", str(tmp_path))
    assert code == 2 and "no baseline" in err and "Traceback" not in err
    write_run(tmp_path, "a", [rung("tcp-single", 1.0)])
    code, _, err = cli("compare", str(tmp_path / "a"), str(tmp_path / "missing"), "--runs", str(tmp_path))
    assert code == 2 and "missing: no such run directory" in err
    (tmp_path / "a" / "tcp-single.json").write_text("{cut")
    code, _, err = cli("compare", str(tmp_path / "a"), str(tmp_path / "a"), "--runs", str(tmp_path))
    assert code == 2 and "tcp-single.json: not valid JSON" in err
