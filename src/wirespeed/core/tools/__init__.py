"""One module per external tool wirespeed runs on the nodes (flent's one runner per tool): its name, how to probe
its version, its command lines, its output read back into records, and what to install when it is missing. Pure.

Every module here that has a `VERSION_ARGV` is probed by discovery on every node, so adding a tool is adding its
module: nothing else lists them.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def versioned() -> list[ModuleType]:
    """The tool modules discovery probes for a version, by name."""
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "VERSION_ARGV") and hasattr(module, "parse_version"):
            found.append(module)
    return found
