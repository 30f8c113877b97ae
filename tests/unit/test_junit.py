"""`check --junit FILE`: the check run as JUnit XML that CI systems read (junitparser reads it as they do): one
test case per check, a failing check a failure with its evidence and fix, a skipped one skipped, a warning passing
with its summary in system-out; pastes refuse it in one line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import junitparser

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment

SNAPSHOT = Path(__file__).parent.parent / "fixtures" / "snapshots" / "spark-gid-ipv6"


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def test_check_junit_has_one_case_per_check_and_a_failure_with_its_fix(tmp_path: Path) -> None:
    nodes = sorted(p for p in SNAPSHOT.iterdir() if p.is_dir())
    snapshots = [arg for node in nodes for arg in ("--snapshot", str(node))]
    report = tmp_path / "junit.xml"
    code, out, err = cli("check", *snapshots, "--json", "--junit", str(report))
    assert code in (0, 1, 3), err
    results = json.loads(out)["results"]
    xml = junitparser.JUnitXml.fromfile(str(report))
    [suite] = list(xml)
    cases = {case.name.split(":")[0]: case for case in suite}
    assert sorted(cases) == sorted(r["id"] for r in results)
    assert suite.tests == len(results) and suite.failures == sum(r["status"] == "fail" for r in results)
    failing = [r for r in results if r["status"] == "fail"]
    assert failing, "the snapshot should fail a check (its GID table holds IPv6 entries)"
    for result in failing:
        [failure] = cases[result["id"]].result
        assert isinstance(failure, junitparser.Failure) and failure.message == result["summary"]
        fix = result["fixes"][0]
        assert f"fix on {fix['node']}: {fix['description']}" in (failure.text or "")
    for result in (r for r in results if r["status"] == "skip"):
        assert isinstance(cases[result["id"]].result[0], junitparser.Skipped)
    for result in (r for r in results if r["status"] in ("pass", "warn")):
        assert cases[result["id"]].is_passed
    warned = [r for r in results if r["status"] == "warn"]
    assert all(f"warn: {r['summary']}" in (cases[r["id"]].system_out or "") for r in warned)


def test_pastes_refuse_junit_in_one_line(tmp_path: Path) -> None:
    paste = tmp_path / "dmesg.txt"
    paste.write_text("[    1.0] mlx5_core 0000:01:00.0: firmware version: 28.45.1020\n")
    code, _, err = cli("check", "--pastes", str(paste), "--junit", str(tmp_path / "j.xml"))
    assert code == 2 and err.count("\n") == 1 and "--junit is for checks of nodes or snapshots" in err


def test_commission_junit_names_each_rung_and_a_run_that_did_not_complete() -> None:
    from wirespeed.core.checks.model import CheckResult, ChecksRecord, CheckStatus
    from wirespeed.core.junit import commission_junit
    from wirespeed.core.results import Ceiling, RungResult, RungStatus

    rungs = [
        RungResult("tcp-halves", RungStatus.RAN, ceiling=Ceiling("wire", ("1.99 Gb/s of 2 Gb/s line rate",))),
        RungResult("rdma-bw", RungStatus.SKIPPED, "no RDMA devices on the nodes", "load mlx5_ib"),
        RungResult("nccl-all_reduce", RungStatus.FAILED, "mpirun: exit 1"),
    ]
    checks = ChecksRecord((CheckResult("mtu.host", "MTU", CheckStatus.PASS, "all 9000"),))
    report = tmp_report(commission_junit(checks, rungs, "interrupted", "interrupted (Ctrl-C)"))
    [suite] = list(report)
    cases = {case.name: case for case in suite}
    assert cases["tcp-halves"].is_passed and "ceiling wire: 1.99 Gb/s" in (cases["tcp-halves"].system_out or "")
    assert isinstance(cases["rdma-bw"].result[0], junitparser.Skipped)
    assert "(fix: load mlx5_ib)" in cases["rdma-bw"].result[0].message
    assert isinstance(cases["nccl-all_reduce"].result[0], junitparser.Failure)
    [error] = cases["commission"].result
    assert isinstance(error, junitparser.Error) and error.message == "interrupted: interrupted (Ctrl-C)"
    assert (suite.tests, suite.failures, suite.skipped, suite.errors) == (5, 1, 1, 1)


def tmp_report(text: str) -> junitparser.JUnitXml:
    return junitparser.JUnitXml.fromstring(text.split("\n", 1)[1])  # the declaration is for files
