"""`tune nccl`: the per-version table, the candidates, the noise rule, the exact rank test, the record, the
cluster file's [nccl.env], and the search itself against a scripted launcher that answers with real nccl-tests
output (the two-node socket run from the GPU machine) whose busbw depends on the settings."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from wirespeed.core.cluster.inventory import Cluster, Node, parse_cluster_toml, with_nccl_env
from wirespeed.core.nccl import NcclPlan
from wirespeed.core.records.options import RunOptions
from wirespeed.core.records.tune import (
    IB,
    SOCKET,
    Trial,
    TuneResult,
    coarse_candidates,
    combined,
    judge,
    rank_test_p,
    settings_for,
)
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.tune import Search, TuneOptions

REAL = Path(__file__).parents[1] / "fixtures/real/nccl_tests_device/sendrecv_2nodes_1gpu_h100_socket_4halves_2gbit.txt"


def test_settings_follow_the_transport_and_the_nccl_version() -> None:
    socket, left = settings_for(SOCKET, (2, 28, 9))
    assert [s.name for s in socket] == ["NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_MIN_NCHANNELS"]
    assert left == []
    ib, left = settings_for(IB, (2, 19, 3))
    assert [s.name for s in ib] == ["NCCL_MIN_NCHANNELS", "NCCL_NCHANNELS_PER_NET_PEER", "NCCL_IB_QPS_PER_CONNECTION"]
    assert left == ["NCCL_IB_MERGE_NICS: NCCL 2.19.3 predates it (since 2.20.3)"]
    assert settings_for("P2P/CUMEM", (2, 28, 9)) == ([], [])
    old, left = settings_for(IB, (2, 12, 6))  # per-peer channels arrived in 2.12.7, QPs per connection in 2.10.3
    assert [s.name for s in old] == ["NCCL_MIN_NCHANNELS", "NCCL_IB_QPS_PER_CONNECTION"] and len(left) == 2


def test_socket_candidates_pair_threads_with_sockets_up_to_64_and_vary_the_rest_alone() -> None:
    socket, _ = settings_for(SOCKET, (2, 28, 9))
    candidates = coarse_candidates(socket)
    pairs = [dict(c) for c in candidates if len(c) == 2]
    assert len(pairs) == 15 and {"NCCL_SOCKET_NTHREADS": "1", "NCCL_NSOCKS_PERTHREAD": "1"} not in pairs
    assert all(int(p["NCCL_SOCKET_NTHREADS"]) * int(p["NCCL_NSOCKS_PERTHREAD"]) <= 64 for p in pairs)
    assert [c for c in candidates if len(c) == 1] == [(("NCCL_MIN_NCHANNELS", v),) for v in ("2", "4", "8", "16")]
    assert () not in candidates


def test_winners_of_different_settings_are_combined() -> None:
    a, b = (("NCCL_SOCKET_NTHREADS", "4"), ("NCCL_NSOCKS_PERTHREAD", "2")), (("NCCL_MIN_NCHANNELS", "8"),)
    assert combined([a, b]) == (("NCCL_MIN_NCHANNELS", "8"), ("NCCL_NSOCKS_PERTHREAD", "2"),
                                ("NCCL_SOCKET_NTHREADS", "4"))  # fmt: skip
    assert combined([a]) is None
    assert combined([a, (("NCCL_SOCKET_NTHREADS", "8"), ("NCCL_NSOCKS_PERTHREAD", "1"))]) is None  # same variables


def test_a_gain_counts_only_beyond_the_defaults_own_spread() -> None:
    defaults = [1.00, 1.02, 0.98, 1.01, 0.99]  # median 1.00, spread 0.04
    won = judge(defaults, [1.05, 1.06, 1.07])
    assert won.beats and won.gain_GBps == pytest.approx(0.06) and won.spread_GBps == pytest.approx(0.04)
    assert won.gain_percent == pytest.approx(6.0) and won.gain_gbps == pytest.approx(0.48)
    assert won.p_value == pytest.approx(1 / math.comb(8, 3))  # every run above every default run
    inside = judge(defaults, [1.03, 1.02, 1.04])
    assert not inside.beats and inside.gain_GBps == pytest.approx(0.03)
    assert not judge(defaults, [1.5]).beats  # one screening run is no evidence


def test_exact_rank_test() -> None:
    assert rank_test_p([1.0, 2.0], [3.0, 4.0]) == pytest.approx(1 / 6)
    assert rank_test_p([3.0, 4.0], [1.0, 2.0]) == pytest.approx(1.0)
    assert rank_test_p([1.0, 1.0], [1.0, 1.0]) == pytest.approx(1.0)  # ties: no evidence either way
    assert rank_test_p([], [1.0]) is None


def _result(defaults: list[float], best: list[float]) -> TuneResult:
    env = (("NCCL_SOCKET_NTHREADS", "4"), ("NCCL_NSOCKS_PERTHREAD", "2"))
    trials = (Trial((), 0.5, 5.0, "warm-up"), *(Trial((), v, 5.0, "defaults") for v in defaults),
              *(Trial(env, v, 5.0, "fine") for v in best),
              Trial(env, None, 1.0, "fine", "mpirun: exit status 1"))  # fmt: skip
    return TuneResult("sendrecv", 1 << 28, SOCKET, "2.28.9", 600.0, 3, trials, best=env, finished=True)


def test_the_answer_says_the_gain_its_noise_and_its_chance_or_that_nothing_won() -> None:
    result = _result([1.00, 1.02, 0.98, 1.01, 0.99], [1.25, 1.26, 1.24])
    assert result.defaults == [1.00, 1.02, 0.98, 1.01, 0.99]  # the warm-up left out
    assert result.answer() == (
        "NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=2: busbw 1.250 GB/s against 1.000 GB/s, +0.250 GB/s (+25%, "
        "+2.00 Gb/s per direction), 6.2x the defaults' spread 0.040 GB/s over 5 runs, p = 0.018 by an exact rank test"
    )
    nothing = TuneResult("sendrecv", 1 << 28, SOCKET, "2.28.9", 600.0, 3, result.trials[:6], finished=True)
    assert nothing.answer() == (
        "no setting beat the defaults beyond noise (the defaults' spread 0.040 GB/s over 5 runs; median 1.000 GB/s)"
    )


def test_the_record_reads_back() -> None:
    result = _result([1.00, 1.02, 0.98], [1.25, 1.26, 1.24])
    data = json.loads(json.dumps(result.to_json()))
    assert data["kind"] == "tune" and data["best"] == {"NCCL_SOCKET_NTHREADS": "4", "NCCL_NSOCKS_PERTHREAD": "2"}
    assert [c["label"] for c in data["candidates"]] == ["defaults", "NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=2"]
    assert data["candidates"][1]["beats"] is True and data["candidates"][0]["gain_GBps"] is None
    again = TuneResult.from_json(data, "tune-nccl.json")
    assert again == result
    with pytest.raises(ValueError, match=r"tune-nccl\.json: schema version 99"):
        TuneResult.from_json({**data, "schema_version": 99}, "tune-nccl.json")


def test_the_cluster_file_keeps_its_comments_and_gains_nccl_env() -> None:
    text = '# my sparks\n[cluster]\nname = "lab"\n\n[[nodes]]\nname = "a"\nhost = "10.0.0.1"  # left\n'
    once = with_nccl_env(text, (("NCCL_SOCKET_NTHREADS", "4"),), "c.toml")
    assert once.startswith(text) and once.endswith('[nccl.env]\nNCCL_SOCKET_NTHREADS = "4"\n')
    twice = with_nccl_env(once, (("NCCL_SOCKET_NTHREADS", "8"), ("NCCL_MIN_NCHANNELS", "4")), "c.toml")
    assert parse_cluster_toml(twice, "c.toml").nccl_env == (("NCCL_SOCKET_NTHREADS", "8"), ("NCCL_MIN_NCHANNELS", "4"))
    assert twice.count("[nccl.env]") == 1 and "# left" in twice
    with pytest.raises(Exception, match=r"c.toml: \[nccl.env\] bad-name"):
        parse_cluster_toml(text + '[nccl.env]\n"bad-name" = "1"\n', "c.toml")


@dataclass
class Answer:
    ok: bool
    stdout: str
    message: str = ""


class ScriptedLauncher:
    """Stands in for Remote: `id -u` says root; mpirun answers with the real two-node output, its busbw set by
    `busbw(env)` (the settings read back from the -x arguments), and every call takes `seconds` of the clock."""

    def __init__(self, busbw: object, clock: list[float], seconds: float = 5.0) -> None:
        self.cluster = Cluster("lab", (Node("wgn-1", "198.18.0.11"), Node("wgn-2", "198.18.0.12")), "test")
        self.busbw, self.clock, self.seconds, self.calls = busbw, clock, seconds, 0
        self.text = REAL.read_text()

    def run(self, node: Node, argv: list[str], timeout_s: float = 60.0) -> Answer:
        if argv == ["id", "-u"]:
            return Answer(True, "0\n")
        self.calls += 1
        self.clock[0] += self.seconds
        env = dict(a.split("=", 1) for a in argv[argv.index("mpirun") :] if "=" in a and a.startswith("NCCL_"))
        value = self.busbw(env, self.calls)  # type: ignore[operator]
        # the out-of-place time, algbw and busbw of the one row (sendrecv: busbw = algbw = size / time)
        row = re.compile(r"^(\s+268435456\s+67108864\s+float\s+sum\s+-1\s+)\S+\s+\S+\s+\S+", re.MULTILINE)
        time_us = 268435456 / (value * 1e9) * 1e6
        return Answer(True, row.sub(lambda m: f"{m.group(1)}{time_us:.1f}  {value:.2f}  {value:.2f}", self.text))


def _search(
    tmp_path: Path, busbw: object, budget_s: float, monkeypatch: pytest.MonkeyPatch
) -> tuple[TuneResult, int, Path, list[str]]:
    clock = [0.0]
    monkeypatch.setattr("wirespeed.engine.tune.time.monotonic", lambda: clock[0])
    launcher = ScriptedLauncher(busbw, clock)
    plan = NcclPlan("wgn-1", ("wgn-1", "wgn-2"), (("198.19.0.1", 1), ("198.19.0.2", 1)), "/opt/sendrecv_perf",
                    (("NCCL_DEBUG", "INFO"), ("NCCL_SOCKET_IFNAME", "=enp1s0f0np0")), (), 1 << 28, 1 << 28)  # fmt: skip
    said: list[str] = []
    run_dir = RunDirectory(tmp_path)
    search = Search(launcher, plan, TuneOptions(budget_s=budget_s), run_dir, said.append)  # type: ignore[arg-type]
    return search.run(), launcher.calls, run_dir.path, said


def test_the_search_finds_the_socket_threads_that_win_and_combines_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wobble = [0.00, 0.01, -0.01, 0.02, -0.02, 0.01, 0.0, -0.01]

    def busbw(env: dict[str, str], call: int) -> float:
        threads = int(env.get("NCCL_SOCKET_NTHREADS", "1")) * int(env.get("NCCL_NSOCKS_PERTHREAD", "1"))
        channels = 0.1 if env.get("NCCL_MIN_NCHANNELS") == "8" else 0.0
        return 1.0 + 0.1 * min(threads, 4) + channels + wobble[call % len(wobble)]

    result, calls, run, _ = _search(tmp_path, busbw, 3600.0, monkeypatch)
    assert result.transport == SOCKET and result.nccl_version == "2.28.9+cuda13.0"
    stages = [t.stage for t in result.trials]
    assert stages[:6] == ["warm-up", *["defaults"] * 5] and stages[-2:] == ["defaults", "defaults"]
    assert stages.count("coarse") == 19 and "combined" in stages
    best = dict(result.best)
    assert int(best["NCCL_SOCKET_NTHREADS"]) * int(best["NCCL_NSOCKS_PERTHREAD"]) >= 4
    assert best.get("NCCL_MIN_NCHANNELS") == "8"  # the combination of two winners
    verdict = result.verdict(result.best)
    assert verdict is not None and verdict.beats and verdict.gain_GBps > 0.3
    written = json.loads((run / "tune-nccl.json").read_text())
    assert written["finished"] is True and len(written["trials"]) == calls
    assert (run / "tune-nccl" / "001.command.txt").read_text().startswith("mpirun --allow-run-as-root")
    assert "NCCL_SOCKET_NTHREADS=" in (run / "tune-nccl" / "010.command.txt").read_text()


def test_when_nothing_beats_the_noise_it_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wobble = [0.0, 0.05, -0.05, 0.03, -0.03]
    result, _, _, _ = _search(tmp_path, lambda env, call: 1.0 + wobble[call % len(wobble)], 3600.0, monkeypatch)
    assert result.best == () and result.finished
    assert result.answer().startswith("no setting beat the defaults beyond noise (the defaults' spread 0.100 GB/s")


def test_the_budget_stops_the_search_and_says_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, calls, run, said = _search(tmp_path, lambda env, call: 1.0, 52.0, monkeypatch)  # 5 s a trial: 10 fit
    assert calls == 10 and len(result.trials) == 10
    # every run is said before it starts (a run lasts seconds) and after, with its figure
    assert said[:4] == ["tune: run 1 (warm-up): defaults ...", "tune: run 1: 1.000 GB/s (47 s of the budget left)",
                        "tune: run 2 (defaults, about 5 s): defaults ...",
                        "tune: run 2: 1.000 GB/s (42 s of the budget left)"]  # fmt: skip
    assert said[-1] == "tune: the budget (52 s) ended the search during coarse"
    assert result.notes == ("the budget (52 s) ended the search during coarse",)
    assert json.loads((run / "tune-nccl.json").read_text())["finished"] is True


def test_the_report_shows_every_candidate_in_a_table_and_a_plot(tmp_path: Path) -> None:
    import io

    from wirespeed.cli.main import main
    from wirespeed.cli.output import Environment
    from wirespeed.core.records.run import NodeRef, RunRecord, RunStatus

    run_dir = RunDirectory(tmp_path)
    run_dir.start(RunRecord("0.1.0", ("tune", "nccl"), "nccl", RunOptions(), "lab", (NodeRef("wgn-1", "a"),),
                            "2026-11-24T07:00:00Z", planned=("nccl-sendrecv",)))  # fmt: skip
    run_dir.finish(RunStatus.COMPLETE, None)
    run = run_dir.path
    result = _result([1.00, 1.02, 0.98, 1.01, 0.99], [1.25, 1.26, 1.24])
    (run / "tune-nccl.json").write_text(json.dumps(result.to_json()))
    out = io.StringIO()
    assert main(["report", str(run), "--format", "md"], Environment(stdout=out, stderr=io.StringIO())) == 0
    text = out.getvalue()
    assert "## NCCL settings searched" in text
    assert "| NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=2 | 3 | 1.250 | 0.020 | +0.250 | yes | 0.018 |" in text
    assert "| defaults | 5 | 1.000 | 0.040 | - | - | - |" in text
    assert main(["report", str(run)], Environment(stdout=io.StringIO(), stderr=io.StringIO())) == 0
    page = (run / "report.html").read_text()
    assert "sendrecv at 256 MiB: busbw of every candidate" in page and page.count("<circle") == 8
    assert "shaded: the defaults&#x27; range" in page or "shaded: the defaults' range" in page


def test_busbw_from_the_time_column_has_the_digits_the_table_rounds_away() -> None:
    from wirespeed.core.nccl import read_run
    from wirespeed.core.records.tune import busbw_from_time

    summary = read_run("sendrecv", REAL.read_text(), None).summary
    assert summary is not None and summary.peak is not None
    assert summary.peak.busbw_GBps == 0.97 and summary.peak.time_us == 277967
    precise = busbw_from_time("sendrecv", summary.ranks, summary.peak.size_bytes, summary.peak.time_us)
    assert precise == pytest.approx(268435456 / 0.277967 / 1e9) and round(precise, 2) == 0.97
    assert busbw_from_time("all_reduce", 2, 1 << 30, 1e6) == pytest.approx(1.073741824)  # 2(n-1)/n = 1 for 2 ranks
    assert busbw_from_time("sendrecv", None, 1, 1.0) is None and busbw_from_time("sendrecv", 2, 1, 0.0) is None


def test_an_interrupted_search_keeps_its_runs_and_says_it_did_not_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def busbw(env: dict[str, str], call: int) -> float:
        if call == 4:
            raise KeyboardInterrupt
        return 1.0

    clock = [0.0]
    monkeypatch.setattr("wirespeed.engine.tune.time.monotonic", lambda: clock[0])
    plan = NcclPlan("wgn-1", ("wgn-1", "wgn-2"), (("198.19.0.1", 1), ("198.19.0.2", 1)), "/opt/sendrecv_perf",
                    (("NCCL_DEBUG", "INFO"),), (), 1 << 28, 1 << 28)  # fmt: skip
    run_dir = RunDirectory(tmp_path)
    search = Search(ScriptedLauncher(busbw, clock), plan, TuneOptions(), run_dir, lambda _: None)  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        search.run()
    search.finish("interrupted: the runs so far are kept", cut=True)
    written = json.loads((run_dir.path / "tune-nccl.json").read_text())
    assert written["finished"] is False and len(written["trials"]) == 3
    assert written["notes"] == ["interrupted: the runs so far are kept"]


def test_bad_budget_and_collective_get_one_line_each() -> None:
    import io

    from wirespeed.cli.main import main
    from wirespeed.cli.output import Environment
    from wirespeed.cli.tune import parse_budget

    assert parse_budget("10m") == 600 and parse_budget("90s") == 90 and parse_budget("1h") == 3600
    assert parse_budget("45") == 45
    for argv, said in (
        (["--budget", "ten minutes"], "wirespeed: error: --budget 'ten minutes': not a duration (hint: e.g. --budget"),
        (["--budget", "0m"], "wirespeed: error: --budget '0m': not a duration"),
        (["--collective", "all reduce"], "wirespeed: error: --collective 'all reduce': not a collective name"),
    ):
        err = io.StringIO()
        code = main(["tune", "nccl", "--hosts", "localhost", *argv], Environment(stdout=io.StringIO(), stderr=err))
        assert code == 2, err.getvalue()
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(said), lines


def test_every_trial_forwards_the_library_path_and_the_record_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [0.0]
    monkeypatch.setattr("wirespeed.engine.tune.time.monotonic", lambda: clock[0])
    plan = NcclPlan("wgn-1", ("wgn-1", "wgn-2"), (("198.19.0.1", 1), ("198.19.0.2", 1)), "/opt/sendrecv_perf",
                    (("NCCL_DEBUG", "INFO"),), (), 1 << 28, 1 << 28,
                    library_path=("/home/u/nccl/build/lib", "/usr/local/cuda/lib64"))  # fmt: skip
    run_dir = RunDirectory(tmp_path)
    search = Search(ScriptedLauncher(lambda env, call: 1.0, clock), plan, TuneOptions(), run_dir, lambda _: None)  # type: ignore[arg-type]
    search.trial((("NCCL_SOCKET_NTHREADS", "4"),), "coarse")
    command = (run_dir.path / "tune-nccl" / "001.command.txt").read_text()
    assert "-x LD_LIBRARY_PATH=/home/u/nccl/build/lib:/usr/local/cuda/lib64 " in command
    assert any(n.startswith("-x LD_LIBRARY_PATH=/home/u/nccl/build/lib:") for n in search.result.notes)
