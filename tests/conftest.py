"""Shared test settings: integration tests need root and iproute2; they skip with the reason otherwise."""

from __future__ import annotations

import os
import shutil

import pytest

ROOT_TOOLS = ("ip", "tc", "iperf3", "ping", "ssh", "ssh-keygen", "nsenter", "unshare")


def root_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root: the emulated cluster uses network namespaces, veth, tc and sshd (CI runs as root)"
    missing = [tool for tool in ROOT_TOOLS if shutil.which(tool) is None]
    if not any(os.path.exists(p) for p in ("/usr/sbin/sshd", "/usr/bin/sshd")):
        missing.append("sshd")
    if missing:
        return f"needs {', '.join(missing)}: run `make install`"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = root_skip_reason()
    if reason is None:
        return
    for item in items:
        if "root" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))
