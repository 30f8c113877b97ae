"""The node as the jobs meet it: who the agent runs as, memory (memlock, CMA, what is available, CPUs), the kernel
logs, the container, the job user's environment, home and configuration files, and `fix`'s unresolved journals."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from wirespeed.adapters.source import NOT_INSTALLED, NodeSource, Output, run_command
from wirespeed.core.fabric.facts import NEEDS_ROOT, PendingFix, Unknown, to_jsonable
from wirespeed.core.parsers import jobconf, kernel_log, pcie_log
from wirespeed.core.records.typed import read_value
from wirespeed.engine import fixjournal
from wirespeed.engine.probes.common import command, command_unknown, listdir, parsed, read, text

ENV_PREFIXES = ("NCCL_", "UCX_", "OMPI_MCA_", "GLOO_", "CUDA_VISIBLE_DEVICES", "VLLM_HOST_IP")


@dataclass(frozen=True)
class MemInfo:
    """/proc/meminfo's CmaTotal, CmaFree and MemAvailable in kB (None: no such line, a kernel built without CMA),
    and the kernel command line that sizes CMA."""

    kernel_cmdline: str | Unknown
    cma_total_kb: int | Unknown | None
    cma_free_kb: int | Unknown | None
    mem_available_kb: int | Unknown | None


@dataclass(frozen=True)
class JobFiles:
    """The job user's home (where NCCL finds ~/.nccl.conf) and the NCCL and OpenMPI files as that user reads them:
    path -> text (absent: not there), and path -> why not."""

    home: str | Unknown
    files: dict[str, str]
    errors: dict[str, str]


def hostname(source: NodeSource) -> str | Unknown:
    """What the node calls itself, beside the name the cluster file gives it."""
    return read(source, "/proc/sys/kernel/hostname", text, "host name")


def _euid() -> Output:
    return Output(0, f"{os.geteuid()}\n")


def privileged(source: NodeSource) -> bool | None:
    """Whether this agent runs as root; None where a snapshot did not record it."""
    found = source.output("euid", _euid)
    value = found.stdout.strip()
    return None if found.returncode is None or not value.isdigit() else int(value) == 0


def _memlock() -> Output:
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return Output(0, "unlimited\n" if soft == resource.RLIM_INFINITY else f"{soft}\n")


def memlock(source: NodeSource) -> int | Unknown | None:
    """The agent's soft RLIMIT_MEMLOCK in bytes, what RDMA may pin; None: unlimited."""
    found = source.output("memlock", _memlock)
    if not found.ok:
        return command_unknown("memlock", found, "getrlimit")
    value = found.stdout.strip()
    return None if value == "unlimited" else (int(value) if value.isdigit() else Unknown(f"memlock {value!r}"))


def _wanted_lines(result: Output) -> Output:
    """Only the kernel lines the checks read (the NIC and its PCIe path), so that a snapshot keeps no more."""
    if not result.ok:
        return result
    lines = [line for line in result.stdout.splitlines() if kernel_log.wanted(line) or pcie_log.wanted(line)]
    return Output(0, "\n".join(lines) + ("\n" if lines else ""))


def _kernel_messages() -> Output:
    return _wanted_lines(run_command(["dmesg"]))


def _previous_kernel_messages() -> Output:
    """The previous boot's kernel log, as journald kept it (only with persistent storage), filtered as dmesg is;
    wall-clock stamps (short-iso), since the boot-relative ones of a finished boot say little."""
    return _wanted_lines(run_command(["journalctl", "-k", "-b", "-1", "-o", "short-iso", "--no-pager", "-q"]))


def kernel_messages(source: NodeSource, privileged: bool | None) -> tuple[str, ...] | Unknown:
    """This boot's kernel lines of the NIC and its PCIe path (dmesg, closed to a user under dmesg_restrict)."""
    kernel = source.output("kernel_messages", _kernel_messages)
    if kernel.ok:
        return tuple(kernel.stdout.splitlines())
    if privileged is False and kernel.returncode not in (None, NOT_INSTALLED):
        return Unknown(f"kernel log {NEEDS_ROOT} (dmesg_restrict)")
    return command_unknown("kernel_messages", kernel, "dmesg")


def previous_kernel_messages(source: NodeSource, privileged: bool | None) -> tuple[str, ...] | Unknown:
    """`journalctl -k -b -1`: a user outside the adm/systemd-journal groups reads nothing of the kernel's journal,
    and an empty answer then says nothing, so only root's reading counts."""
    if privileged is False:
        return Unknown(f"previous boot's kernel log {NEEDS_ROOT}")
    found = source.output("kernel_messages_previous", _previous_kernel_messages)
    if found.ok:
        return tuple(found.stdout.splitlines())
    if found.returncode not in (None, NOT_INSTALLED):
        return Unknown("no previous boot in the journal (journald keeps one only with persistent storage, "
                       "/var/log/journal)")  # fmt: skip
    return command_unknown("kernel_messages_previous", found, "journalctl")


def _environment() -> Output:
    pairs = sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIXES))
    return Output(0, "".join(f"{k}={v}\n" for k, v in pairs))


def environment(source: NodeSource) -> dict[str, str]:
    """The NCCL_*, UCX_*, OMPI_MCA_* (...) variables of the agent's session: what a job started the same way gets."""
    found = source.output("environment", _environment)
    return dict(line.split("=", 1) for line in found.stdout.splitlines() if "=" in line) if found.ok else {}


def dev_infiniband(source: NodeSource) -> tuple[str, ...] | Unknown:
    """The RDMA character devices a container must be given to use the NIC."""
    if not source.exists("/dev/infiniband"):
        return Unknown("/dev/infiniband does not exist")
    return tuple(listdir(source, "/dev/infiniband"))


def in_container(source: NodeSource) -> bool | Unknown:
    """Whether the agent runs in a container, where the NIC and its devices are only what was passed in."""
    if source.exists("/.dockerenv") or source.exists("/run/.containerenv"):
        return True
    cgroup = read(source, "/proc/1/cgroup", text, "cgroup of PID 1")
    if isinstance(cgroup, Unknown):
        return cgroup
    return any(word in cgroup for word in ("docker", "containerd", "kubepods", "libpod", "lxc"))


def _count(value: str) -> int:
    """`nproc`'s answer: one whole number."""
    value = value.strip()
    if not value.isdigit():
        raise ValueError(f"{value[:40]!r} is not a count")
    return int(value)


def cpus(source: NodeSource) -> int | Unknown:
    """The CPUs this agent may use (`nproc`: its affinity, not the machine's count)."""
    return parsed("nproc", source.output("nproc", command(["nproc"])), "nproc", _count)


def meminfo(source: NodeSource) -> MemInfo:
    """CmaTotal, CmaFree and MemAvailable from /proc/meminfo (kB), and the kernel command line that sizes CMA."""
    cmdline = read(source, "/proc/cmdline", text, "kernel command line")
    try:
        content = source.read("/proc/meminfo")
    except OSError as exc:
        why = Unknown(f"/proc/meminfo: {exc.strerror or exc}")
        return MemInfo(kernel_cmdline=cmdline, cma_total_kb=why, cma_free_kb=why, mem_available_kb=why)

    def kb(key: str) -> int | Unknown | None:
        try:
            return jobconf.meminfo_kb(content, key)
        except ValueError as exc:
            return Unknown(f"/proc/meminfo: {exc}")

    return MemInfo(
        kernel_cmdline=cmdline,
        cma_total_kb=kb("CmaTotal"),
        cma_free_kb=kb("CmaFree"),
        mem_available_kb=kb("MemAvailable"),
    )


def _home() -> Output:
    """The home of this user's passwd entry: where NCCL looks for ~/.nccl.conf (not $HOME)."""
    import pwd

    try:
        return Output(0, pwd.getpwuid(os.getuid()).pw_dir + "\n")
    except KeyError:
        return Output(1, "")


def job_files(source: NodeSource, environment: dict[str, str]) -> JobFiles:
    """NCCL's and OpenMPI's configuration files, read as the user who runs the jobs, at their real paths."""
    result = source.output("home", _home)
    home_text = result.stdout.strip()
    home: str | Unknown = home_text if result.ok and home_text else command_unknown("home", result, "getpwuid")
    user_home = home if isinstance(home, str) else None
    files: dict[str, str] = {}
    errors: dict[str, str] = {}
    for path in jobconf.nccl_files(user_home, environment) + jobconf.openmpi_files(user_home):
        try:
            files[path] = source.read_exact(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors[path] = exc.strerror or str(exc)
    return JobFiles(home=home, files=files, errors=errors)


def _fix_journals() -> Output:
    try:
        return Output(0, json.dumps([to_jsonable(journal) for journal in fixjournal.pending()]) + "\n")
    except OSError:  # not root (the directory is 0700), or unreadable
        return Output(1, "")


def pending_fixes(source: NodeSource, privileged: bool | None) -> tuple[PendingFix, ...] | Unknown:
    """The node's unresolved fix journals; closed to a user (the journal directory is root's alone)."""
    if privileged is False:
        return Unknown(f"fix journals {NEEDS_ROOT}")
    found = source.output("fix_journals", _fix_journals)
    if not found.ok:
        return Unknown(f"fix journals ({fixjournal.JOURNAL_DIR}) not read" if found.returncode is not None else
                       "fix_journals was not recorded in this snapshot")  # fmt: skip
    try:
        pending: tuple[PendingFix, ...] = read_value(json.loads(found.stdout), tuple[PendingFix, ...], "fix_journals")
    except ValueError as exc:
        return Unknown(f"fix_journals: unreadable ({exc})")
    return pending
