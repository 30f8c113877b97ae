"""Why an mpirun launch failed, read from what OpenMPI printed: the cause in one line, naming the host where OpenMPI
named it, and what to do. Pure: text in, an `MpiFailure` (or None) out.

OpenMPI 4.1 starts its daemons through ORTE (`orted`), 5.0 through PRRTE (`prted`; 5's `mpirun` execs `prterun`).
Both print an error with show_help: a help file's topic with its %s filled in, between two lines of dashes, the
host on a later line of that block (`Node:`, `Remote host:`, `... on node NAME`). What failed on the way (ssh, the
remote shell, the dynamic loader) prints before the block and says the cause better, so it is read first.

The wording relied on is quoted at each rule: ORTE from open-mpi/ompi v4.1.x at dadb5bf (`orte/...`), PRRTE from
openpmix/prrte v3.0 at a99bf3a (3.0.14, the `3rd-party/prrte` of ompi v5.0.x at b962e8a; its help files live in
`src/docs/show-help-files/`), the same on prrte master at 52d5e4b (`src/mca/.../help-*.txt`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class MpiFailure:
    """What stopped mpirun, as one line a person reads (`node2: ...`), and what would fix it."""

    cause: str
    hint: str

    @property
    def line(self) -> str:
        return f"{self.cause} (hint: {self.hint})"


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# --tag-output prefixes: 4.1 `[1,0]<stderr>:`, PRRTE `[prterun-node1-4242@1,0]<stderr>: `.
_TAG = re.compile(r"^\[[^\]\s]*\]<(?:stdout|stderr|stddiag)>:[ \t]?", re.M)
# show_help frames a block with 74 dashes (opal/util/show_help.c, PMIx's pmix_show_help.c: `dash_line`); PRRTE's
# ssh launcher prints its own block framed with 60 (src/mca/plm/ssh/plm_ssh_module.c, ssh_wait_daemon).
_FRAME = re.compile(r"^-{20,}[ \t]*$", re.M)
_DAEMONS = ("orted", "prted")  # ORTE's daemon, PRRTE's daemon


def _plain(output: str) -> str:
    return _TAG.sub("", _ANSI.sub("", output).replace("\r", ""))


def _block(text: str, start: int) -> str:
    """From `start` to the frame that closes its show_help block (or the end): where that block's fields are."""
    end = _FRAME.search(text, start)
    return text[start : end.start() if end else len(text)]


def _field(block: str, label: str) -> str | None:
    """`  Remote host:   node2` -> `node2`."""
    found = re.search(rf"^[ \t]*{re.escape(label)}[ \t]*:[ \t]*(\S.*?)[ \t]*$", block, re.M)
    return found.group(1) if found else None


def _at(hosts: Sequence[str | None]) -> str:
    """`node2, node3: ` before a cause, each host once, or nothing when OpenMPI named none."""
    named = list(dict.fromkeys(h for h in hosts if h and h != "<unknown>"))
    return f"{', '.join(named)}: " if named else ""


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


# -- the daemons PRRTE saw fail -------------------------------------------------------------------------------------

# PRRTE src/mca/plm/ssh/plm_ssh_module.c (ssh_wait_daemon), when the ssh that started a daemon ends non-zero:
#   "A daemon failed to report back after being spawned. This could" ... "back to %s:"
#   "  Local host:    %s" / "  Remote host:   %s" / "  Daemon exit status: %d"
# (ORTE's rsh_wait_daemon prints nothing of its own: 4.1 names no host here.)
_UNREPORTED = re.compile(r"A daemon failed to report back after being spawned\.")


@dataclass(frozen=True)
class _Unreported:
    host: str | None
    status: str | None  # ssh's exit status: 255 when ssh failed, 127 when the remote shell found no prted


def _unreported(text: str) -> list[_Unreported]:
    return [
        _Unreported(_field(block, "Remote host"), _field(block, "Daemon exit status"))
        for block in (_block(text, m.end()) for m in _UNREPORTED.finditer(text))
    ]


# -- the rules, most telling first ----------------------------------------------------------------------------------

_HINT_SSH = (
    "mpirun's ssh from the launcher must reach and log in to every node at its -H address without a prompt: "
    "wirespeed check --only ssh.mesh says what is missing, wirespeed init sets it up"
)
_HINT_CONNECT_BACK = (
    "the daemon could not reach the launcher over TCP: check the firewalls between the nodes and that the subnets "
    "given to --mca oob_tcp_if_include route both ways"
)
_HINT_SLOTS = (
    "-np asks for more ranks than the hosts' slots: -H gives each node one slot per GPU (the rung's hostfile shows "
    "them); a resource manager's allocation can stand in for -H"
)


def _hint_daemon_not_found(daemon: str) -> str:
    return (
        "install the same Open MPI on every node, on the PATH a non-interactive ssh shell gets: "
        f"`ssh NODE which {daemon}` from the launcher must find it"
    )


def _hint_daemon_libraries(daemon: str) -> str:
    return (
        "install the same Open MPI on every node; a non-interactive ssh shell must find its libraries "
        f"(LD_LIBRARY_PATH set above ~/.bashrc's early return): `ssh NODE 'ldd $(which {daemon})'` shows what is "
        "missing"
    )


def _missing_executable(text: str) -> MpiFailure | None:
    # 4.1 orte/tools/orterun/help-orterun.txt [orterun:exe-not-found], PRRTE help-prun.txt [prun:exe-not-found]:
    #   "%s was unable to find the specified executable file, and therefore did not launch the job." ...
    #   "Node:       %s" / "Executable: %s"
    found = re.search(r"was unable to find the specified executable file", text)
    if found is None:
        return None
    block = _block(text, found.start())
    executable = _field(block, "Executable") or "the program"
    return MpiFailure(
        f"{_at([_field(block, 'Node')])}executable not found: {executable}",
        "nccl-tests must be at the same path on every node: mpirun starts the launcher's path everywhere",
    )


def _inaccessible_executable(text: str) -> MpiFailure | None:
    # 4.1 help-orterun.txt [orterun:exe-not-accessible]: "%s was unable to launch the specified application as it
    # could not access\nor execute an executable:"; PRRTE help-prun.txt [prun:exe-not-accessible]: "... as it could
    # not\naccess an executable:". Both then "Executable: %s" / "Node: %s".
    found = re.search(r"was unable to launch the specified application as it could\s+not\s+access", text)
    if found is None:
        return None
    block = _block(text, found.start())
    executable = _field(block, "Executable") or "the program"
    return MpiFailure(
        f"{_at([_field(block, 'Node')])}executable not accessible: {executable}",
        "it must be readable and executable (chmod +x) for mpirun's user on that node",
    )


# The dynamic loader's own words (glibc elf/dl-load.c via the shell's stderr, which ssh and mpirun pass on):
#   "all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object file: ..."
_LOADER = re.compile(
    r"^(?:.*?\s)?(?P<program>\S+?): error while loading shared libraries: (?P<library>[^:\s]+): (?P<why>.+?)\s*$",
    re.M,
)


def _missing_library(text: str) -> MpiFailure | None:
    found = _LOADER.search(text)
    if found is None:
        return None
    program, library = _basename(found["program"]), found["library"]
    said = f"{program}: error while loading shared libraries: {library}: {found['why']}"
    if program in _DAEMONS:  # the daemon itself: PRRTE then names the node whose daemon never reported
        where = _at([u.host for u in _unreported(text)])
        return MpiFailure(f"{where}{said}", _hint_daemon_libraries(program))
    hint = f"install {library} on every node, or give the ranks its directory: --env LD_LIBRARY_PATH=DIR (mpirun -x)"
    return MpiFailure(said, hint)


# The remote shell, when ssh ran a daemon it could not find: bash `bash: orted: command not found`, bash 5.1+
# `bash: line 1: prted: command not found`, dash `sh: 1: prted: not found`, zsh `zsh:1: command not found: prted`.
_NO_DAEMON = re.compile(
    r"^.*?(?:\b(?P<daemon>orted|prted): (?:command )?not found|command not found: (?P<zsh>orted|prted)\b).*$", re.M
)


def _daemon_not_found(text: str) -> MpiFailure | None:
    found = _NO_DAEMON.search(text)
    if found is None:
        return None
    daemon = found["daemon"] or found["zsh"]
    where = _at([u.host for u in _unreported(text)])
    return MpiFailure(
        f"{where}{daemon} not found by the remote shell: {found[0].strip()}", _hint_daemon_not_found(daemon)
    )


# ssh's own words (OpenSSH ssh.c, sshconnect.c), printed before ORTE's or PRRTE's block:
_SSH = re.compile(
    r"^(?:ssh: connect to host (?P<host>\S+) port \d+: .+"
    r"|ssh: Could not resolve hostname (?P<name>[^:\s]+): .+"
    r"|(?:[^@\s]+@)?(?P<login>[^@\s:]+): Permission denied \([^)]*\)\.?"
    r"|Host key verification failed\."
    r"|(?:kex|ssh)_exchange_identification: .+"
    r"|Connection (?:closed|reset) by (?P<closed>\S+) port \d+)\s*$",
    re.M,
)


def _ssh_failed(text: str) -> MpiFailure | None:
    lines = list(_SSH.finditer(text))
    if not lines:
        return None
    hosts = [m["host"] or m["name"] or m["login"] or m["closed"] for m in lines]
    if not any(hosts):
        hosts = [u.host for u in _unreported(text)]
    return MpiFailure(f"{_at(hosts)}mpirun's daemon not started, ssh failed: {lines[0][0].strip()}", _HINT_SSH)


def _oob_networks(text: str) -> MpiFailure | None:
    # 4.1 orte/mca/oob/tcp/help-oob-tcp.txt and PRRTE help-oob-tcp.txt [no-included-found]:
    #   "None of the TCP networks specified to be included for out-of-band communications\ncould be found:"
    #   "  Value given: %s"
    found = re.search(r"None of the TCP networks specified to be included for out-of-band communications", text)
    if found is None:
        return None
    value = _field(_block(text, found.start()), "Value given") or "?"
    return MpiFailure(
        f"a node has none of the networks given to --mca oob_tcp_if_include ({value})",
        "every node needs an up interface with an address in one of those subnets: wirespeed discover shows them",
    )


def _too_few_slots(text: str) -> MpiFailure | None:
    # 4.1 orte/mca/rmaps/base/help-orte-rmaps-base.txt [orte-rmaps-base:alloc-error], PRRTE
    # help-prte-rmaps-base.txt [prte-rmaps-base:alloc-error]: "There are not enough slots available in the system to
    # satisfy the %d\nslots that were requested by the application:\n\n  %s"
    found = re.search(
        r"There are not enough slots available in the system to satisfy the (?P<ranks>\d+)\s+slots that were "
        r"requested by the application:\s*(?P<app>\S+)",
        text,
    )
    if found is not None:
        return MpiFailure(f"not enough slots for the {found['ranks']} ranks of {_basename(found['app'])}", _HINT_SLOTS)
    # PRRTE help-prte-rmaps-base.txt [out-of-resource]: "Either there are not enough slots available in the system
    # to launch\nthe %d processes that were requested by the application, or there are\nnot enough CPUs to bind
    # them as requested:" ... "  App: %s"
    found = re.search(
        r"Either there are not enough slots available in the system to launch\s+the (?P<ranks>\d+) processes", text
    )
    if found is not None:
        app = _basename(_field(_block(text, found.start()), "App") or "the program")
        return MpiFailure(f"not enough slots (or CPUs to bind) for the {found['ranks']} ranks of {app}", _HINT_SLOTS)
    return None


def _daemon_unreported(text: str) -> MpiFailure | None:
    """PRRTE's ssh launcher block with nothing above it to say why: its exit status says which step failed."""
    failed = _unreported(text)
    if not failed:
        return None
    where, status = _at([u.host for u in failed]), failed[0].status or "?"
    if status == "255":  # ssh's own exit status for its errors
        return MpiFailure(f"{where}mpirun's daemon not started, ssh failed (exit status 255)", _HINT_SSH)
    if status == "127":  # the remote shell's status for a command it could not find
        return MpiFailure(
            f"{where}prted not found by the remote shell (exit status 127)", _hint_daemon_not_found("prted")
        )
    return MpiFailure(
        f"{where}mpirun's daemon failed to report back (exit status {status})", _hint_daemon_libraries("prted")
    )


def _daemon_lost(text: str) -> MpiFailure | None:
    # 4.1 orte/mca/errmgr/base/help-errmgr-base.txt [node-died] ("ORTE ..."), PRRTE help-errmgr-base.txt ("PRTE ..."):
    #   "%s has lost communication with a remote daemon." ... "  Remote daemon: %s on node %s"
    found = re.search(r"\b(?:ORTE|PRTE) has lost communication with a remote daemon(?=\.)", text)
    if found is None:
        return None
    node = re.search(r"^[ \t]*Remote daemon[ \t]*:.*? on node (\S+)", _block(text, found.start()), re.M)
    return MpiFailure(
        f"{_at([node[1] if node else None])}mpirun lost its daemon there ({found[0]})",
        "the node went down, or its TCP connection to the launcher broke: check the node, the firewalls between "
        "the nodes and the subnets given to --mca oob_tcp_if_include",
    )


def _no_connection(text: str) -> MpiFailure | None:
    # 4.1 and PRRTE help-errmgr-base.txt [no-connect]: "%s is unable to establish a communication connection to the
    # \nspecified daemon located on the indicated node:" ... "  my node:   %s" / "  target node:  %s"
    found = re.search(
        r"\b(?:ORTE|PRTE) is unable to establish a communication connection to the\s+specified daemon", text
    )
    if found is None:
        return None
    block = _block(text, found.start())
    me = _field(block, "my node")
    return MpiFailure(
        f"{_at([_field(block, 'target node')])}mpirun cannot connect to its daemon there"
        + (f" from {me}" if me else ""),
        _HINT_CONNECT_BACK,
    )


def _daemon_died(text: str) -> MpiFailure | None:
    # 4.1 orte/mca/plm/base/help-plm-base.txt [daemon-died-no-signal], [daemon-died-signal(-core)]: "A daemon died
    # unexpectedly with status %d while attempting\nto launch so we are aborting." / "... on signal %d ..." (PRRTE
    # keeps the topics in help-plm-base.txt but no longer shows them).
    found = re.search(r"A daemon died unexpectedly (?P<how>with status \d+|on signal \d+)", text)
    if found is None:
        return None
    return MpiFailure(f"an mpirun daemon died {found['how']} while launching", _hint_daemon_libraries("orted"))


def _daemon_failed(text: str) -> MpiFailure | None:
    # 4.1 help-errmgr-base.txt [failed-daemon]: "An ORTE daemon has unexpectedly failed after launch and before
    # \ncommunicating back to mpirun."; PRRTE the same with "An PRTE daemon".
    found = re.search(
        r"An? (?P<rte>ORTE|PRTE) daemon has unexpectedly failed after launch and before\s+communicating back to mpirun",
        text,
    )
    if found is None:
        return None
    return MpiFailure(
        f"mpirun's daemon failed after launch, before it reported back ({found['rte']})", _HINT_CONNECT_BACK
    )


def _daemons_not_started(text: str) -> MpiFailure | None:
    # 4.1 help-errmgr-base.txt [failed-daemon-launch]: "ORTE was unable to reliably start one or more daemons.";
    # PRRTE help-errmgr-base.txt: "%s was unable to reliably start one or more daemons." (%s: `prterun`).
    found = re.search(r"(?P<who>\S+) was unable to reliably start one or more daemons\.", text)
    if found is None:
        return None
    daemon = "orted" if found["who"] == "ORTE" else "prted"
    return MpiFailure(
        f"{found['who']} was unable to reliably start one or more daemons",
        f"from the launcher, `ssh NODE which {daemon}` must work for every node without a prompt and find Open "
        "MPI's libraries; then check the firewalls between the nodes",
    )


_RULES: tuple[Callable[[str], MpiFailure | None], ...] = (
    _missing_executable,
    _inaccessible_executable,
    _missing_library,
    _daemon_not_found,
    _ssh_failed,
    _oob_networks,
    _too_few_slots,
    _daemon_unreported,
    _daemon_lost,
    _no_connection,
    _daemon_died,
    _daemon_failed,
    _daemons_not_started,
)


def read_failure(output: str) -> MpiFailure | None:
    """mpirun's stdout and stderr -> why its launch failed, or None when it says nothing OpenMPI 4.1 or 5 prints
    for a failed launch (then the program's own lines are the ones to read)."""
    text = _plain(output)
    for rule in _RULES:
        failure = rule(text)
        if failure is not None:
            return failure
    return None
