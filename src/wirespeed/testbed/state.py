"""Where a testbed keeps its files, and the record of what it built (so `down` can remove all of it)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirespeed.core.errors import TestbedError
from wirespeed.testbed.plan import TestbedPlan, plan_from_json

STATE_FILE = "state.json"


def testbeds_root() -> Path:
    """All testbeds live under one directory: `$WIRESPEED_TESTBED_DIR`, else /run/wirespeed/testbed."""
    return Path(os.environ.get("WIRESPEED_TESTBED_DIR", "/run/wirespeed/testbed"))


def testbed_dir(prefix: str) -> Path:
    return testbeds_root() / (prefix.rstrip("-") or "testbed")


@contextlib.contextmanager
def claiming() -> Iterator[None]:
    """Held while a testbed picks what must be its own (its management subnet) and records it: two `testbed up`
    at once never take the same one. The kernel drops the lock however its holder ends."""
    root = testbeds_root()
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / ".claim.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@dataclass
class TestbedState:
    """What exists of a testbed. `phase` is `building` until `up` finished, then `up`."""

    plan: TestbedPlan
    phase: str
    faults: dict[str, dict[str, Any]] = field(default_factory=dict)  # "node/iface" -> {what: value}

    @property
    def directory(self) -> Path:
        return testbed_dir(self.plan.prefix)

    @property
    def ssh_config(self) -> Path:
        return self.directory / "ssh_config"

    @property
    def cluster_file(self) -> Path:
        return self.directory / "cluster.toml"

    def save(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps({"plan": self.plan.to_json(), "phase": self.phase, "faults": self.faults}, indent=2))
        tmp.replace(self.directory / STATE_FILE)


def load_state(prefix: str) -> TestbedState | None:
    path = testbed_dir(prefix) / STATE_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TestbedError(f"{path}: cannot read testbed state: {exc}", hint="run `wirespeed testbed down`") from None
    try:
        return TestbedState(plan=plan_from_json(data["plan"]), phase=data["phase"], faults=data.get("faults", {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise TestbedError(f"{path}: testbed state is damaged ({exc})", hint="run `wirespeed testbed down`") from None


def all_states() -> list[TestbedState]:
    """Every testbed with a state file, in name order."""
    root = testbeds_root()
    if not root.is_dir():
        return []
    states: list[TestbedState] = []
    for child in sorted(root.iterdir()):
        if (child / STATE_FILE).is_file():
            try:
                data = json.loads((child / STATE_FILE).read_text())
                states.append(TestbedState(plan_from_json(data["plan"]), data["phase"], data.get("faults", {})))
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return states
