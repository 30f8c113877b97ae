"""The cluster's RouterOS switch, live: read its fabric ports, apply the plan's settings, wait for the links.

Reads are five REST calls whatever the number of ports; apply is one PATCH per port (two when the L2MTU must move
first) and one PUT or PATCH per bridge membership, each checked as it goes, so a refusal names the port it stopped
at and what had already changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from wirespeed.adapters.routeros_rest import DEFAULT_TIMEOUT_S, RouterOSClient, SwitchTimeout, read_password
from wirespeed.core.checks.model import SwitchReading
from wirespeed.core.cluster.routeros import CLEARTEXT_HINT, SwitchConfig, cleartext_password
from wirespeed.core.cluster.switchstate import (
    COUNTERS,
    PortUpdate,
    SwitchReplyError,
    SwitchState,
    monitor_targets,
    parse_state,
)
from wirespeed.core.errors import SwitchError, UsageError

MONITOR_PROPS = "name,status,rate,auto-negotiation,full-duplex"
# `monitor` with `once` answers with one sample at once (manual.mikrotik.com REST API: "`monitor` commands take `once`
# and return a single sample"); one that does not answer would hold the request until RouterOS closes it at 60 s
# ("Session closed"). Waiting this long, not the client's whole timeout, bounds a port whose monitor never returns.
MONITOR_TIMEOUT_S = 5.0


def connect(
    config: SwitchConfig,
    *,
    environ: Mapping[str, str] | None = None,
    insecure: bool = False,
    ca_file: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    allow_plaintext: bool = False,
    warn: Callable[[str], None] | None = None,
) -> RouterOSClient:
    """A client for the switch. With `tls = false` (to an address that is not loopback) the password would go out in
    the clear: refused (UsageError) unless `allow_plaintext`, and then said once through `warn`."""
    risk = cleartext_password(config)
    if risk is not None and not allow_plaintext:
        raise UsageError(
            f"switch {config.address}: tls = false would send the password of user {config.user!r} across the "
            "network unencrypted (HTTP Basic auth): refused",
            hint=f"{CLEARTEXT_HINT}, or pass --allow-plaintext to send it in the clear anyway",
        )
    if risk is not None and warn is not None:
        warn(f"{risk} (hint: {CLEARTEXT_HINT})")
    return RouterOSClient(
        config, read_password(config, environ), insecure=insecure, ca_file=ca_file, timeout_s=timeout_s
    )


def read_state(client: RouterOSClient, config: SwitchConfig) -> SwitchState:
    """Settings, link, counters and bridge of every port; `monitor` only for the fabric ports (it is per port)."""
    resource = client.get("system/resource")
    ethernet = client.get("interface/ethernet")
    try:
        targets = monitor_targets(ethernet, config)
    except SwitchReplyError as exc:
        raise SwitchError(f"switch {client.address}: {exc}", hint="is this RouterOS 7 with its REST API?") from None
    monitor = _monitor(client, targets) if targets else []
    stats = client.post("interface/ethernet/print", {"stats": "", ".proplist": ",".join(("name", *COUNTERS))})
    bridge_ports = client.get("interface/bridge/port")
    try:
        return parse_state(client.address, resource, ethernet, monitor, stats, bridge_ports)
    except SwitchReplyError as exc:
        raise SwitchError(f"switch {client.address}: {exc}", hint="is this RouterOS 7 with its REST API?") from None


def _monitor(client: RouterOSClient, targets: list[tuple[str, str]]) -> object:
    """One `monitor` with `once` for every fabric port, bounded: no answer is one line naming the switch and ports."""
    timeout = min(client.timeout_s, MONITOR_TIMEOUT_S)
    body = {"numbers": ",".join(name for name, _ in targets), "once": "", ".proplist": MONITOR_PROPS}
    try:
        return client.post("interface/ethernet/monitor", body, timeout_s=timeout)
    except SwitchTimeout:
        ports = ", ".join(f"{name} ({node})" for name, node in targets)
        plural = "s" if len(targets) > 1 else ""
        raise SwitchTimeout(
            f"switch {client.address}: monitor of port{plural} {ports} gave no answer within {timeout:g} s",
            hint="RouterOS holds this user's requests until it closes the session (60 s): try "
            f"`/interface/ethernet/monitor {targets[0][0]} once` in its terminal and check that port's cable or module",
        ) from None


def apply_updates(
    client: RouterOSClient, updates: list[PortUpdate], on_step: Callable[[str], None] | None = None
) -> list[str]:
    """Each port's calls in order; what was done, a line per call. A refusal says how much was already applied."""
    done: list[str] = []

    def step(text: str) -> None:
        done.append(text)
        if on_step is not None:
            on_step(text)

    for update in updates:
        try:
            for body in update.patches:
                client.patch(f"interface/ethernet/{update.record_id}", body)
                step(f"{update.port} ({update.node}): " + " ".join(f"{k}={v}" for k, v in body.items()))
            if update.join_bridge:
                client.put("interface/bridge/port", {"bridge": update.join_bridge, "interface": update.port})
                step(f"{update.port} ({update.node}): joined {update.join_bridge}")
            if update.move_bridge:
                record_id, bridge = update.move_bridge
                client.patch(f"interface/bridge/port/{record_id}", {"bridge": bridge})
                step(f"{update.port} ({update.node}): moved to {bridge}")
        except SwitchError as exc:
            already = f"; already applied: {len(done)} change(s)" if done else "; nothing was changed"
            raise SwitchError(f"{exc.message} at port {update.port} ({update.node}){already}", exc.hint) from None
    return done


def wait_for_links(
    client: RouterOSClient,
    config: SwitchConfig,
    wait_s: float,
    ready: Callable[[SwitchState], bool],
    poll_s: float = 1.0,
) -> SwitchState:
    """Re-read until `ready` or `wait_s` is over: a forced 200G lane takes seconds to train."""
    deadline = time.monotonic() + wait_s
    while True:
        state = read_state(client, config)
        if ready(state) or time.monotonic() >= deadline:
            return state
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))


def read_for_checks(
    config: SwitchConfig,
    *,
    insecure: bool = False,
    environ: Mapping[str, str] | None = None,
    allow_plaintext: bool = False,
    warn: Callable[[str], None] | None = None,
) -> SwitchReading:
    """What the checks see of the switch: its state, or the one-line reason it could not be read."""
    try:
        client = connect(config, environ=environ, insecure=insecure, allow_plaintext=allow_plaintext, warn=warn)
        return SwitchReading(config, read_state(client, config))
    except (SwitchError, UsageError) as exc:
        return SwitchReading(config, None, str(exc))
