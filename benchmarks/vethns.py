"""A network namespace of up veth pairs, for the benchmarks that time reading interfaces (bench_sampler,
bench_instrument): the interfaces an agent reads and nothing else, removed however the block ends."""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import Iterator


@contextlib.contextmanager
def veth_namespace(prefix: str, pairs: int = 4) -> Iterator[tuple[str, list[str]]]:
    """`ws<prefix>-xxxxxx` with `pairs` veth pairs (`<prefix>a0`/`<prefix>b0`, ...), all up; yields its name and
    the interfaces."""
    netns = f"ws{prefix}-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", netns], check=True, capture_output=True)
    try:
        ifaces: list[str] = []
        for pair in range(pairs):
            a, b = f"{prefix}a{pair}", f"{prefix}b{pair}"
            subprocess.run(["ip", "-n", netns, "link", "add", "name", a, "type", "veth", "peer", "name", b],
                           check=True, capture_output=True)  # fmt: skip
            for name in (a, b):
                subprocess.run(["ip", "-n", netns, "link", "set", name, "up"], check=True, capture_output=True)
            ifaces += [a, b]
        yield netns, ifaces
    finally:
        subprocess.run(["ip", "netns", "del", netns], check=False, capture_output=True)
