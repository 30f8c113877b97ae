"""Where a node's configuration files live: `/`, or the directory WIRESPEED_CONFIG_ROOT names.

Emulated nodes share the host's /etc, so the testbed gives each node a directory of its own through that
variable (set by its sshd); `fix` writes its netplan and sysctl.d files there instead of on the host.
"""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_ROOT_ENV = "WIRESPEED_CONFIG_ROOT"


def system_path(path: str) -> Path:
    """The file that stands for absolute `path` ("/etc/sysctl.d/90-wirespeed.conf") on this node."""
    return Path(os.environ.get(CONFIG_ROOT_ENV) or "/") / path.lstrip("/")
