"""Two `testbed up` at once (two test workers, two shells) never pick the same management subnet: the pick and
its record happen under one lock on the testbeds' directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from wirespeed.testbed.state import claiming

TRY_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    print("held")
else:
    print("free")
"""


def another_process_sees(lock: Path) -> str:
    return subprocess.run([sys.executable, "-c", TRY_LOCK, str(lock)], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def test_a_claim_holds_the_lock_for_every_other_process_until_it_ends(testbed_dir: Path) -> None:
    lock = testbed_dir / ".claim.lock"
    with claiming():
        assert another_process_sees(lock) == "held"
    assert another_process_sees(lock) == "free"


def test_a_claim_makes_the_testbeds_directory_first(testbed_dir: Path) -> None:
    testbed_dir.rmdir()
    with claiming():
        assert (testbed_dir / ".claim.lock").exists()
