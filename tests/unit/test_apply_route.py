"""The node side of a route operation (a ring's route between nodes that share no cable): observed as the main
table holds it, applied with `ip route replace`, undone with `ip route del` or the old route. `ip` is faked: a
table of routes that the commands read and change."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from wirespeed.adapters.process import ProcessOutcome
from wirespeed.core.fixplan import Operation
from wirespeed.core.records.fixrecord import undo_changes
from wirespeed.engine import apply

DST = "198.19.4.0/24"


class FakeIp:
    def __init__(self, table: dict[str, dict[str, str]]) -> None:
        self.table = table
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], **_: object) -> ProcessOutcome:
        argv = list(argv)
        self.calls.append(argv)
        if argv[:4] == ["ip", "-j", "-4", "route"]:
            dst = argv[-1]
            found = [{"dst": dst, **self.table[dst]}] if dst in self.table else []
            return ProcessOutcome(0, json.dumps(found), "", 0.0)
        if argv[:3] == ["ip", "route", "replace"]:
            words = argv[4:]
            self.table[argv[3]] = {"gateway": words[1], "dev": words[3]}
            return ProcessOutcome(0, "", "", 0.0)
        if argv[:3] == ["ip", "route", "del"]:
            if argv[3] not in self.table:
                return ProcessOutcome(2, "", "RTNETLINK answers: No such process", 0.0)
            del self.table[argv[3]]
            return ProcessOutcome(0, "", "", 0.0)
        raise AssertionError(f"unexpected {argv}")


@pytest.fixture
def fake_ip(monkeypatch: pytest.MonkeyPatch) -> FakeIp:
    fake = FakeIp({"198.19.0.0/24": {"dev": "enp1s0f0np0"}})
    monkeypatch.setattr(apply, "run_process", fake)
    return fake


def test_a_new_route_is_added_and_its_undo_removes_it(fake_ip: FakeIp) -> None:
    op = Operation("route", DST, "via 198.19.0.2 dev enp1s0f0np0", "ring.routes", network=True)
    (done,) = apply.apply_all([op])
    assert done.ok and done.original == ""
    assert fake_ip.table[DST] == {"gateway": "198.19.0.2", "dev": "enp1s0f0np0"}
    assert apply.observe(op) == "via 198.19.0.2 dev enp1s0f0np0"
    (undo,) = undo_changes([done])
    assert undo == Operation("route", DST, "", "revert", True)
    apply.apply_one(undo)
    assert DST not in fake_ip.table
    apply.apply_one(undo)  # already gone: nothing to delete, no error
    assert ["ip", "route", "del", DST] in fake_ip.calls


def test_a_different_route_is_replaced_and_put_back(fake_ip: FakeIp) -> None:
    fake_ip.table[DST] = {"gateway": "198.19.6.4", "dev": "enp1s0f1np1"}
    op = Operation("route", DST, "via 198.19.0.2 dev enp1s0f0np0", "ring.routes", network=True)
    (done,) = apply.apply_all([op])
    assert done.original == "via 198.19.6.4 dev enp1s0f1np1"
    apply.apply_one(done.undo())
    assert fake_ip.table[DST] == {"gateway": "198.19.6.4", "dev": "enp1s0f1np1"}


def test_a_route_already_there_is_left_alone(fake_ip: FakeIp) -> None:
    fake_ip.table[DST] = {"gateway": "198.19.0.2", "dev": "enp1s0f0np0"}
    op = Operation("route", DST, "via 198.19.0.2 dev enp1s0f0np0", "ring.routes", network=True)
    (done,) = apply.apply_all([op])
    assert done.ok and undo_changes([done]) == []
    assert not [c for c in fake_ip.calls if c[:3] == ["ip", "route", "replace"]]


def test_a_malformed_route_is_refused_before_ip_runs(fake_ip: FakeIp) -> None:
    (done,) = apply.apply_all([Operation("route", DST, "via 198.19.0.2 dev eth0 table 9", "x")])
    assert not done.ok and "not 'via GATEWAY dev IFACE'" in str(done.error)
    assert not [c for c in fake_ip.calls if c[:3] == ["ip", "route", "replace"]]
