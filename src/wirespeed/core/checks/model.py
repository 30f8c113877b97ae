"""What a check says: a stable id, a status, the evidence it saw, and the exact fix when it does not pass."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from wirespeed.core.cluster.routeros import SwitchConfig
from wirespeed.core.cluster.switchstate import SwitchState
from wirespeed.core.errors import ExitStatus
from wirespeed.core.fabric.cabling import CablingMap
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import NodeFacts, to_jsonable
from wirespeed.core.records.decode import Fields
from wirespeed.core.records.results import SCHEMA_VERSION, check_version, choice


class CheckStatus(StrEnum):
    PASS = "pass"  # noqa: S105 - a status, not a password
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


SEVERITY_ORDER = {CheckStatus.FAIL: 0, CheckStatus.WARN: 1, CheckStatus.SKIP: 2, CheckStatus.PASS: 3}


@dataclass(frozen=True)
class Evidence:
    """One value a check looked at, where it came from."""

    node: str | None
    subject: str | None  # interface, device, sysctl, tool, ...
    what: str
    value: Any  # any JSON value, as the check saw it

    @staticmethod
    def from_json(f: Fields) -> Evidence:
        return Evidence(f.opt_text("node"), f.opt_text("subject"), f.text("what"), f.raw("value"))


@dataclass(frozen=True)
class Fix:
    """The exact change that would make the check pass, on one node (or on the switch, or anywhere)."""

    node: str | None
    description: str
    commands: tuple[str, ...] = ()  # shell lines for a person to run, shown, never executed by check
    files: tuple[tuple[str, str], ...] = ()  # (path, content) for a file change

    @staticmethod
    def from_json(f: Fields) -> Fix:
        pairs = f.raw("files") or []
        if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs
        ):
            raise ValueError(f"{f.where}: files: expected a list of [path, content]")
        return Fix(f.opt_text("node"), f.text("description"), f.texts("commands"), tuple((a, b) for a, b in pairs))


@dataclass(frozen=True)
class CheckResult:
    id: str
    title: str
    status: CheckStatus
    summary: str  # one line
    evidence: tuple[Evidence, ...] = ()
    fixes: tuple[Fix, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return to_jsonable(self)  # type: ignore[no-any-return]

    @staticmethod
    def from_json(f: Fields) -> CheckResult:
        return CheckResult(
            f.text("id"),
            f.text("title"),
            choice(f, "status", CheckStatus),
            f.text("summary"),
            tuple(Evidence.from_json(e) for e in f.objects("evidence")),
            tuple(Fix.from_json(x) for x in f.objects("fixes")),
        )


def _exit_status(results: Sequence[CheckResult], errors: Sequence[str]) -> ExitStatus:
    """Unread wins over a failure: with a node or check missing, the other results may be artefacts of it."""
    if errors:
        return ExitStatus.NOT_MEASURED
    return ExitStatus.FINDING if any(r.status is CheckStatus.FAIL for r in results) else ExitStatus.OK


@dataclass(frozen=True)
class ChecksRecord:
    """One pass of the checks as a run keeps it (checks.json) and `check --json` prints it: every result, the
    checks or nodes that could not be read, and whether the active checks (pings, ssh) ran; None: a file from
    before it said."""

    results: tuple[CheckResult, ...]
    errors: tuple[str, ...] = ()
    active: bool | None = None

    @property
    def exit_status(self) -> ExitStatus:
        return _exit_status(self.results, self.errors)

    def counts(self) -> dict[str, int]:
        return {status.value: sum(r.status is status for r in self.results) for status in CheckStatus}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "checks",
            "results": [r.to_json() for r in self.results],
            "counts": self.counts(),
            "errors": list(self.errors),
            "exit_status": int(self.exit_status),
            "active": self.active,
        }

    @staticmethod
    def from_json(data: Any, where: str) -> ChecksRecord:
        """Read back what `to_json` wrote (and the unversioned files before it); `ValueError` names the field."""
        f = Fields(data, where)
        check_version(f)
        results = tuple(CheckResult.from_json(r) for r in f.objects("results"))
        return ChecksRecord(results, f.texts("errors"), f.opt_flag("active"))


@dataclass(frozen=True)
class ActiveResults:
    """What checks measured on the live cluster (absent for snapshots): path MTU pings and the ssh mesh."""

    # (node, iface, peer node, peer address) -> True when a don't-fragment ping at full MTU answered
    mtu_pings: Mapping[tuple[str, str, str, str], bool] | None = None
    # (from node, to node, its address) -> None when ssh worked, else the one-line reason
    ssh_mesh: Mapping[tuple[str, str, str], str | None] | None = None
    # (node, interface) -> error counters that grew between two readings, by how much; the seconds apart
    counter_growth: Mapping[tuple[str, str], Mapping[str, int]] | None = None
    growth_window_s: float = 0.0
    # node -> (its clock minus this controller's, seconds; the reading's uncertainty), or why it was not read
    clocks: Mapping[str, tuple[float, float] | str] | None = None


@dataclass(frozen=True)
class SwitchReading:
    """The cluster file's switch and what its REST API said (or why it could not be read)."""

    config: SwitchConfig
    state: SwitchState | None
    error: str | None = None


@dataclass(frozen=True)
class CheckInput:
    """Everything the checks may look at. Pure data: checks never touch the system."""

    facts: Mapping[str, NodeFacts]
    cabling: CablingMap
    active: ActiveResults = field(default_factory=ActiveResults)
    switch: SwitchReading | None = None  # None: the cluster file names no switch
    # The cluster file's `[nccl.env]`: every rank of wirespeed's own NCCL runs gets it with `mpirun -x` (empty for
    # snapshots, or a cluster file without it).
    cluster_nccl_env: tuple[tuple[str, str], ...] = ()


CheckFunction = Callable[[CheckInput], CheckResult]


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    run: CheckFunction


REGISTRY: dict[str, CheckSpec] = {}


def check(check_id: str, title: str) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check under a stable id; adding one touches no other."""

    def register(func: CheckFunction) -> CheckFunction:
        if check_id in REGISTRY:
            raise ValueError(f"check id {check_id!r} registered twice")
        REGISTRY[check_id] = CheckSpec(check_id, title, func)
        return func

    return register


def result(
    spec_id: str,
    status: CheckStatus,
    summary: str,
    evidence: list[Evidence] | tuple[Evidence, ...] = (),
    fixes: list[Fix] | tuple[Fix, ...] = (),
) -> CheckResult:
    """Build a result for a registered check (its title comes from the registry)."""
    return CheckResult(spec_id, REGISTRY[spec_id].title, status, summary, tuple(evidence), tuple(fixes))


def skip(spec_id: str, reason: str) -> CheckResult:
    return result(spec_id, CheckStatus.SKIP, reason)


@dataclass
class CheckRun:
    results: list[CheckResult]
    discovery: Discovery
    errors: list[str] = field(default_factory=list)  # checks that could not run, nodes not read

    @property
    def exit_status(self) -> ExitStatus:
        return _exit_status(self.results, self.errors)

    def record(self, active: bool | None = None) -> ChecksRecord:
        """What is kept of this pass: the results, not the discovery they were made from (discovery.json has it)."""
        return ChecksRecord(tuple(self.results), tuple(self.errors), active)

    def to_json(self) -> dict[str, Any]:
        return self.record().to_json()
