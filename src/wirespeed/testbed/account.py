"""The emulated nodes' own user account (`testbed up --user NAME [--sudo password|nopasswd]`). Pure; no system access.

A DGX Spark (DGX OS, Ubuntu 24.04) is used through an ordinary account made at first boot, in the sudo group, whose
sudo asks its password; root cannot log in over ssh. With `--user`, every emulated node has such an account, the same
name and ids on every node, and it exists only inside the nodes: each node's sshd runs with private copies of
/etc/passwd, /etc/shadow, /etc/group, /etc/gshadow and /etc/sudoers.d (this host's, plus the account; and /etc/hosts
with the node's name) bind-mounted in its own mount namespace, and /home with the account's home in a layer of the
node's own (testbed/build.py). This host's files are only ever read. The password is made at `testbed up` and kept
only in the testbed's directory (`user-password`, mode 0600).

`kernel.dmesg_restrict` (Ubuntu: 1, so `dmesg` needs root): a node cannot have a value of its own. The sysctl is
host-wide (kernel/printk, not per network, mount or user namespace), and the kernel checks it, with CAP_SYSLOG in the
initial user namespace, on every read of the kernel log (syslog(2), /dev/kmsg); a file bind-mounted over
/proc/sys/kernel/dmesg_restrict would change what `sysctl` shows in a node, not what `dmesg` does there. So the
account's `dmesg` behaves as this host's value says (Debian's kernels, like Ubuntu's, set 1), and the testbed leaves
the value alone.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from wirespeed.core.errors import UsageError

PASSWORD_FILE = "user-password"  # noqa: S105 - a file name (in the testbed's directory, mode 0600), not a password
SUDO_GROUP = "sudo"  # DGX OS's first user is in it, as Ubuntu's is
SHELL = "/bin/bash"
FIRST_ID = 1000  # the first uid/gid an Ubuntu installer gives; the first free one from here on is taken
LAST_ID = 59999
# What `sudo wirespeed ...` on a node must keep for the emulation: the node's own config root instead of this host's.
SUDO_ENV_KEEP = ("WIRESPEED_EMULATED", "WIRESPEED_CONFIG_ROOT")
_NAME_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
_CRYPT64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class SudoMode(StrEnum):
    PASSWORD = "password"  # noqa: S105 - `NAME ALL=(ALL:ALL) ALL`: sudo asks the account's password, as on a Spark
    NOPASSWD = "nopasswd"  # `NAME ALL=(ALL:ALL) NOPASSWD: ALL`

    def describe(self) -> str:
        return "sudo asks its password" if self is SudoMode.PASSWORD else "sudo without a password (NOPASSWD)"


def validate_user(name: str) -> str:
    if name == "root":
        raise UsageError("--user root: the nodes' account must be an ordinary one", hint="leave --user out for root")
    if not _NAME_RE.fullmatch(name):
        raise UsageError(
            f"--user {name!r} is not a valid account name",
            hint="use 1-32 lower-case letters, digits, '_' or '-', starting with a letter or '_'",
        )
    return name


def parse_sudo(value: str) -> SudoMode:
    try:
        return SudoMode(value)
    except ValueError:
        raise UsageError(f"--sudo {value!r} is not known", hint="use password or nopasswd") from None


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    sudo: SudoMode

    @property
    def home(self) -> str:
        return f"/home/{self.name}"


def _field(line: str, index: int) -> str:
    parts = line.split(":")
    return parts[index] if len(parts) > index else ""


def _names(text: str) -> set[str]:
    return {_field(line, 0) for line in text.splitlines() if line and not line.startswith("#")}


def _ids(text: str) -> set[int]:
    found: set[int] = set()
    for line in text.splitlines():
        value = _field(line, 2)
        if value.isdigit():
            found.add(int(value))
    return found


def free_id(passwd: str, group: str) -> int:
    """The first id from 1000 on that is neither a uid in `passwd` nor a gid in `group` (both the same, as adduser
    gives a first user)."""
    taken = _ids(passwd) | _ids(group)
    for candidate in range(FIRST_ID, LAST_ID + 1):
        if candidate not in taken:
            return candidate
    raise UsageError("no free uid/gid from 1000 to 59999 for the testbed's account")


def name_taken(name: str, passwd: str, group: str) -> bool:
    return name in _names(passwd) or name in _names(group)


def passwd_text(passwd: str, account: Account) -> str:
    line = f"{account.name}:x:{account.uid}:{account.gid}:,,,:{account.home}:{SHELL}"
    return _append(passwd, line)


def shadow_text(shadow: str, account: Account, password_hash: str, today_days: int) -> str:
    """The account's shadow entry: its hash, last changed `today_days` (days since 1970; 0 would force a change at
    the next login), never expiring, as Ubuntu's installer leaves it."""
    return _append(shadow, f"{account.name}:{password_hash}:{today_days}:0:99999:7:::")


def group_text(group: str, account: Account) -> str:
    """The account's own group, and the account added to the sudo group's members."""
    return _append(_add_member(group, SUDO_GROUP, account.name, 3), f"{account.name}:x:{account.gid}:")


def gshadow_text(gshadow: str, account: Account) -> str:
    return _append(_add_member(gshadow, SUDO_GROUP, account.name, 3), f"{account.name}:!::")


def _append(text: str, line: str) -> str:
    body = text if not text or text.endswith("\n") else text + "\n"
    return body + line + "\n"


def _add_member(text: str, group: str, member: str, index: int) -> str:
    lines = text.splitlines()
    for number, line in enumerate(lines):
        parts = line.split(":")
        if parts[0] == group and len(parts) > index:
            members = [m for m in parts[index].split(",") if m]
            if member not in members:
                parts[index] = ",".join([*members, member])
            lines[number] = ":".join(parts)
    return "\n".join(lines) + ("\n" if lines else "")


def sudoers_name(account: Account) -> str:
    return f"90-wirespeed-{account.name}"  # no '.' nor '~': sudo's @includedir reads it


def sudoers_text(account: Account, state_dir: str) -> str:
    """The node's sudoers drop-in for the account. `state_dir` keeps the node's sudo timestamps (and lecture marks)
    off this host's /run/sudo and /var/lib/sudo."""
    rule = "ALL" if account.sudo is SudoMode.PASSWORD else "NOPASSWD: ALL"
    quoted = state_dir.replace("\\", "\\\\").replace('"', '\\"')
    return "\n".join(
        [
            f"# wirespeed testbed: {account.name}, the node's account as on DGX OS: {account.sudo.describe()}",
            f"{account.name} ALL=(ALL:ALL) {rule}",
            "# the node's own sudo state, not this host's",
            f'Defaults:{account.name} timestampdir="{quoted}/ts", lecture_status_dir="{quoted}/lectured"',
            "# `sudo wirespeed ...` acts on the node's own files (its config root), never this host's",
            f'Defaults:{account.name} env_keep += "{" ".join(SUDO_ENV_KEEP)}"',
            "",
        ]
    )


def node_etc(host: dict[str, str], account: Account, password_hash: str, today_days: int) -> dict[str, str]:
    """The node's private copies of the account files, from this host's (name -> text; gshadow only where the host
    has one)."""
    files = {
        "passwd": passwd_text(host.get("passwd", ""), account),
        "shadow": shadow_text(host.get("shadow", ""), account, password_hash, today_days),
        "group": group_text(host.get("group", ""), account),
    }
    if "gshadow" in host:
        files["gshadow"] = gshadow_text(host["gshadow"], account)
    return files


def hosts_text(hosts: str, node: str) -> str:
    """The node's /etc/hosts: this host's, and the node's own name on 127.0.1.1 as Ubuntu's installer writes it
    (sudo looks its host name up, and warns on every run where it cannot)."""
    return _append(hosts, f"127.0.1.1\t{node}")


def new_password() -> str:
    return secrets.token_urlsafe(12)


def new_salt(length: int = 16) -> str:
    return "".join(secrets.choice(_CRYPT64) for _ in range(length))


def sha512_crypt(password: str, salt: str, rounds: int | None = None) -> str:
    """SHA-512 crypt (`$6$`, Drepper's specification), as glibc's and libxcrypt's crypt(3) and `openssl passwd -6`
    make it: what pam_unix checks a password against. `rounds` None: the default 5000, not written."""
    key = password.encode()
    salt_bytes = salt.encode()[:16]
    count = 5000 if rounds is None else min(max(rounds, 1000), 999_999_999)
    alternate = hashlib.sha512(key + salt_bytes + key).digest()
    context = hashlib.sha512(key + salt_bytes)
    remaining = len(key)
    while remaining > 64:
        context.update(alternate)
        remaining -= 64
    context.update(alternate[:remaining])
    bits = len(key)
    while bits:
        context.update(alternate if bits & 1 else key)
        bits >>= 1
    digest = context.digest()
    p_digest = hashlib.sha512(key * len(key)).digest()
    p_bytes = _repeat(p_digest, len(key))
    s_digest = hashlib.sha512(salt_bytes * (16 + digest[0])).digest()
    s_bytes = _repeat(s_digest, len(salt_bytes))
    for index in range(count):
        step = hashlib.sha512(p_bytes if index & 1 else digest)
        if index % 3:
            step.update(s_bytes)
        if index % 7:
            step.update(p_bytes)
        step.update(digest if index & 1 else p_bytes)
        digest = step.digest()
    encoded = "".join(_b64_24(digest[a], digest[b], digest[c], 4) for a, b, c in _ORDER) + _b64_24(0, 0, digest[63], 2)
    head = "$6$" + (f"rounds={count}$" if rounds is not None else "")
    return f"{head}{salt_bytes.decode()}${encoded}"


# Which digest bytes make each group of four characters (the specification's fixed permutation).
_ORDER: Sequence[tuple[int, int, int]] = (
    (0, 21, 42),
    (22, 43, 1),
    (44, 2, 23),
    (3, 24, 45),
    (25, 46, 4),
    (47, 5, 26),
    (6, 27, 48),
    (28, 49, 7),
    (50, 8, 29),
    (9, 30, 51),
    (31, 52, 10),
    (53, 11, 32),
    (12, 33, 54),
    (34, 55, 13),
    (56, 14, 35),
    (15, 36, 57),
    (37, 58, 16),
    (59, 17, 38),
    (18, 39, 60),
    (40, 61, 19),
    (62, 20, 41),
)


def _repeat(block: bytes, length: int) -> bytes:
    return (block * (length // len(block) + 1))[:length]


def _b64_24(high: int, middle: int, low: int, chars: int) -> str:
    word = (high << 16) | (middle << 8) | low
    out = []
    for _ in range(chars):
        out.append(_CRYPT64[word & 0x3F])
        word >>= 6
    return "".join(out)
