"""ssh.mesh on a ring of four before `fix`: a far node's fabric address waits for the ring's routes (a warning,
so commission goes on to the fix that adds them); a connection no route mends still fails."""

from __future__ import annotations

import dataclasses

from builders import run
from test_check_ring import address, ring

from wirespeed.core.checks.mesh import ID
from wirespeed.core.checks.model import ActiveResults, CheckStatus


def meshed(data, failed):  # type: ignore[no-untyped-def]
    attempts = {("spark-1", "spark-2", "198.18.0.12"): None, **failed}
    return dataclasses.replace(data, active=ActiveResults(ssh_mesh=attempts))


def test_a_far_fabric_address_without_its_route_waits_for_the_fix() -> None:
    far = address(4, 2, 0, 0).split("/")[0]  # spark-3's port 0: on the cable spark-1 shares with neither neighbour
    data = meshed(ring(4), {("spark-1", "spark-3", far): "ssh: connect to host: No route to host"})
    found = run(ID, data)
    assert found.status is CheckStatus.WARN, found.summary
    assert "wait for the ring's routes" in found.summary and far in found.summary
    routed = meshed(ring(4, routes=True), {("spark-1", "spark-3", far): "ssh: connect to host: No route to host"})
    assert run(ID, routed).status is CheckStatus.FAIL  # the route is there: something else is wrong


def test_a_management_failure_still_stops() -> None:
    far = address(4, 2, 0, 0).split("/")[0]
    failed = {
        ("spark-1", "spark-3", far): "No route to host",
        ("spark-2", "spark-1", "198.18.0.11"): "Permission denied",
    }
    assert run(ID, meshed(ring(4), failed)).status is CheckStatus.FAIL
