"""mpirun's launch failures read for their cause, from OpenMPI 4.1 (ORTE) and 5 (PRRTE) output as they print it.

Each input is built from the help file's own text, %s filled with plausible values and framed as show_help frames it
(74 dashes: opal/util/show_help.c and PMIx's pmix_show_help.c `dash_line`). Sources: open-mpi/ompi v4.1.x at
dadb5bf (ORTE, 4.1) and openpmix/prrte v3.0 at a99bf3a (3.0.14, what ompi v5.0.x at b962e8a ships as
3rd-party/prrte; help files under src/docs/show-help-files/). `prterun` is PRRTE's `prte_tool_basename`: 5's
`mpirun` execs prterun (ompi v5.0.x ompi/tools/mpirun/main.c).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wirespeed.core.mpi_failure import MpiFailure, read_failure
from wirespeed.core.nccl import read_run

DASHES = "-" * 74
REAL_NCCL_TESTS = Path(__file__).parent.parent / "fixtures" / "real" / "nccl_tests"
APP = "/opt/nccl-tests/build/all_reduce_perf"


def shown(template: str, *values: object) -> str:
    """One show_help message as mpirun prints it: the topic's text, its %s filled, between two dashed lines."""
    return f"{DASHES}\n{template % values}{DASHES}\n"


# -- the help texts, verbatim -----------------------------------------------------------------------------------------

# prrte v3.0 src/mca/plm/ssh/plm_ssh_module.c, ssh_wait_daemon (printed with pmix_output, its own 60 dashes);
# %s: prte_tool_basename, the launcher's nodename, the daemon's node; %d: the ssh child's exit status.
PRRTE_UNREPORTED = (
    "------------------------------------------------------------\n"
    "A daemon failed to report back after being spawned. This could\n"
    "be due to several factors, including inability to find the\n"
    "daemon executable, or the executable was unable to find its\n"
    "required supporting libraries. In some cases, the daemon was\n"
    "able to execute, but was unable to complete a TCP connection\n"
    "back to %s:\n\n"
    "  Local host:    %s\n"
    "  Remote host:   %s\n"
    "  Daemon exit status: %d\n\n"
    "This may also be caused by a firewall on the remote host. Please\n"
    "check that any firewall (e.g., iptables) has been disabled and\n"
    "try again.\n"
    "------------------------------------------------------------\n"
)

# prrte v3.0 src/docs/show-help-files/help-errmgr-base.txt [failed-daemon-launch] (%s: prte_tool_basename)
PRRTE_FAILED_DAEMON_LAUNCH = """%s was unable to reliably start one or more daemons.
This usually is caused by:

* the inability to resolve specified hostnames - please check
  above for any output regarding this possibility

* not finding the required libraries and/or binaries on
  one or more nodes. Please check your PATH and LD_LIBRARY_PATH
  settings, or configure OMPI with --enable-prun-prefix-by-default

* lack of authority to execute on one or more specified nodes.
  Please verify your allocation and authorities.

* the inability to write startup files into /tmp (--tmpdir/prte_tmpdir_base).
  Please check with your sys admin to determine the correct location to use.

*  compilation of the orted with dynamic libraries when static are required
  (e.g., on Cray). Please check your configure cmd line and consider using
  one of the contrib/platform definitions for your system type.

* an inability to create a connection back to mpirun due to a
  lack of common network interfaces and/or no route found between
  them. Please check network connectivity (including firewalls
  and network routing requirements).
"""

# ompi v4.1.x orte/mca/errmgr/base/help-errmgr-base.txt [failed-daemon-launch]
ORTE_FAILED_DAEMON_LAUNCH = """ORTE was unable to reliably start one or more daemons.
This usually is caused by:

* not finding the required libraries and/or binaries on
  one or more nodes. Please check your PATH and LD_LIBRARY_PATH
  settings, or configure OMPI with --enable-orterun-prefix-by-default

* lack of authority to execute on one or more specified nodes.
  Please verify your allocation and authorities.

* the inability to write startup files into /tmp (--tmpdir/orte_tmpdir_base).
  Please check with your sys admin to determine the correct location to use.

*  compilation of the orted with dynamic libraries when static are required
  (e.g., on Cray). Please check your configure cmd line and consider using
  one of the contrib/platform definitions for your system type.

* an inability to create a connection back to mpirun due to a
  lack of common network interfaces and/or no route found between
  them. Please check network connectivity (including firewalls
  and network routing requirements).
"""

# ompi v4.1.x orte/mca/errmgr/base/help-errmgr-base.txt [failed-daemon]
ORTE_FAILED_DAEMON = """An ORTE daemon has unexpectedly failed after launch and before
communicating back to mpirun. This could be caused by a number
of factors, including an inability to create a connection back
to mpirun due to a lack of common network interfaces and/or no
route found between them. Please check network connectivity
(including firewalls and network routing requirements).
"""

# [node-died]: ompi v4.1.x orte/mca/errmgr/base/help-errmgr-base.txt ("ORTE"), prrte v3.0 help-errmgr-base.txt
# ("PRTE"); %s: the HNP's name and node, the lost daemon's name and node.
NODE_DIED = """%s has lost communication with a remote daemon.

  HNP daemon   : %s on node %s
  Remote daemon: %s on node %s

This is usually due to either a failure of the TCP network
connection to the node, or possibly an internal failure of
the daemon itself. We cannot recover from this failure, and
therefore will terminate the job.
"""

# prrte v3.0 help-errmgr-base.txt [no-connect]
PRRTE_NO_CONNECT = """PRTE is unable to establish a communication connection to the
specified daemon located on the indicated node:

  my node:   %s
  target node:  %s

This is usually due to a lack of common network interfaces and/or
no route found between them. Please check network connectivity (including
firewalls and network routing requirements). If these look okay,
then it could be an internal programming error that should be
reported to the developers. In the meantime, a workaround may
be to set the MCA param routed=direct on the command line or
in your environment.
"""

# ompi v4.1.x orte/mca/plm/base/help-plm-base.txt [daemon-died-no-signal]
ORTE_DAEMON_DIED = """A daemon died unexpectedly with status %d while attempting
to launch so we are aborting.

There may be more information reported by the environment (see above).

This may be because the daemon was unable to find all the needed shared
libraries on the remote node. You may set your LD_LIBRARY_PATH to have the
location of the shared libraries on the remote nodes and this will
automatically be forwarded to the remote nodes.
"""

# prrte v3.0 help-prun.txt [prun:exe-not-found]; %s: tool, rank, tool, tool, node, executable (prte_quit.c)
PRRTE_EXE_NOT_FOUND = """
%s was unable to find the specified executable file, and therefore did
not launch the job.  This error was first reported for process rank
%lu; it may have occurred for other processes as well.

NOTE: A common cause for this error is misspelling a %s command
   line parameter option (remember that %s interprets the first
   unrecognized command line token as the executable).

   Node:       %s
   Executable: %s
"""

# ompi v4.1.x orte/tools/orterun/help-orterun.txt [orterun:exe-not-found]
ORTE_EXE_NOT_FOUND = """%s was unable to find the specified executable file, and therefore
did not launch the job.  This error was first reported for process
rank %lu; it may have occurred for other processes as well.

NOTE: A common cause for this error is misspelling a %s command
      line parameter option (remember that %s interprets the first
      unrecognized command line token as the executable).

Node:       %s
Executable: %s
"""

# prrte v3.0 help-prun.txt [prun:exe-not-accessible]; %s: tool, executable, node, rank
PRRTE_EXE_NOT_ACCESSIBLE = """
%s was unable to launch the specified application as it could not
access an executable:

   Executable: %s
   Node: %s

while attempting to start process rank %lu.
"""

# ompi v4.1.x orte/tools/orterun/help-orterun.txt [orterun:exe-not-accessible]
ORTE_EXE_NOT_ACCESSIBLE = """%s was unable to launch the specified application as it could not access
or execute an executable:

Executable: %s
Node: %s

while attempting to start process rank %lu.
"""

# prrte v3.0 help-prun.txt [prun:non-zero-exit]
PRRTE_NON_ZERO_EXIT = """
%s detected that one or more processes exited with non-zero status,
thus causing the job to be terminated. The first process to do so was:

   Process name: %s
   Exit code:    %d
"""

# ompi v4.1.x orte/tools/orterun/help-orterun.txt [orterun:non-zero-exit]
ORTE_NON_ZERO_EXIT = """%s detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: %s
  Exit code:    %d
"""

# ompi v4.1.x orte/mca/rmaps/base/help-orte-rmaps-base.txt [orte-rmaps-base:alloc-error]
ORTE_NOT_ENOUGH_SLOTS = """There are not enough slots available in the system to satisfy the %d
slots that were requested by the application:

  %s

Either request fewer slots for your application, or make more slots
available for use.

A "slot" is the Open MPI term for an allocatable unit where we can
launch a process.  The number of slots available are defined by the
environment in which Open MPI processes are run:

  1. Hostfile, via "slots=N" clauses (N defaults to number of
     processor cores if not provided)
  2. The --host command line parameter, via a ":N" suffix on the
     hostname (N defaults to 1 if not provided)
  3. Resource manager (e.g., SLURM, PBS/Torque, LSF, etc.)
  4. If none of a hostfile, the --host command line parameter, or an
     RM is present, Open MPI defaults to the number of processor cores

In all the above cases, if you want Open MPI to default to the number
of hardware threads instead of the number of processor cores, use the
--use-hwthread-cpus option.

Alternatively, you can use the --oversubscribe option to ignore the
number of available slots when deciding the number of processes to
launch.
"""

# prrte v3.0 help-prte-rmaps-base.txt [prte-rmaps-base:alloc-error]
PRRTE_NOT_ENOUGH_SLOTS = """There are not enough slots available in the system to satisfy the %d
slots that were requested by the application:

  %s

Either request fewer procs for your application, or make more slots
available for use.

A "slot" is the PRRTE term for an allocatable unit where we can
launch a process.  The number of slots available are defined by the
environment in which PRRTE processes are run:

  1. Hostfile, via "slots=N" clauses (N defaults to number of
     processor cores if not provided)
  2. The --host command line parameter, via a ":N" suffix on the
     hostname (N defaults to 1 if not provided)
  3. Resource manager (e.g., SLURM, PBS/Torque, LSF, etc.)
  4. If none of a hostfile, the --host command line parameter, or an
     RM is present, PRRTE defaults to the number of processor cores

In all the above cases, if you want PRRTE to default to the number
of hardware threads instead of the number of processor cores, use the
--use-hwthread-cpus option.

Alternatively, you can use the --map-by :OVERSUBSCRIBE option to ignore the
number of available slots when deciding the number of processes to
launch.
"""

# prrte v3.0 help-prte-rmaps-base.txt [out-of-resource] (its first paragraphs)
PRRTE_OUT_OF_RESOURCE = """Either there are not enough slots available in the system to launch
the %d processes that were requested by the application, or there are
not enough CPUs to bind them as requested:

  App: %s
  Mapping: %s
  Binding: %s

Either request fewer processes for your application, make more slots
available for use by expanding the allocation, or do not bind the
processes so that the number of CPUs is no longer a limiting factor.
"""

# [no-included-found]: ompi v4.1.x orte/mca/oob/tcp/help-oob-tcp.txt, prrte v3.0 help-oob-tcp.txt (the same text)
OOB_NO_INCLUDED_FOUND = """None of the TCP networks specified to be included for out-of-band communications
could be found:

  Value given: %s

Please revise the specification and try again.
"""

PRRTE_HNP = "[prterun-spark-1-4242@0,0]"
PRRTE_DAEMON = "[prterun-spark-1-4242@0,1]"
PRRTE_RANK = "[prterun-spark-1-4242@1,1]"


def must_read(output: str) -> MpiFailure:
    failure = read_failure(output)
    assert failure is not None, output
    return failure


# -- OpenMPI 5 (PRRTE) -----------------------------------------------------------------------------------------------


def test_prrte_daemon_over_unreachable_ssh_names_the_host_and_what_ssh_said() -> None:
    output = (
        "ssh: connect to host 10.0.0.2 port 22: No route to host\n"
        + PRRTE_UNREPORTED % ("prterun", "spark-1", "10.0.0.2", 255)
        + shown(PRRTE_FAILED_DAEMON_LAUNCH, "prterun")
    )
    failure = must_read(output)
    assert failure.cause == (
        "10.0.0.2: mpirun's daemon not started, ssh failed: ssh: connect to host 10.0.0.2 port 22: No route to host"
    )
    assert "wirespeed check --only ssh.mesh" in failure.hint
    assert failure.line == f"{failure.cause} (hint: {failure.hint})"


def test_prrte_daemon_that_failed_to_report_back_is_named_from_the_block_when_ssh_said_nothing() -> None:
    output = PRRTE_UNREPORTED % ("prterun", "spark-1", "spark-2", 255) + shown(PRRTE_FAILED_DAEMON_LAUNCH, "prterun")
    assert must_read(output).cause == "spark-2: mpirun's daemon not started, ssh failed (exit status 255)"


def test_prrte_daemon_exit_status_other_than_ssh_or_shell_says_it_failed_to_report_back() -> None:
    output = PRRTE_UNREPORTED % ("prterun", "spark-1", "spark-2", 1) + shown(PRRTE_FAILED_DAEMON_LAUNCH, "prterun")
    failure = must_read(output)
    assert failure.cause == "spark-2: mpirun's daemon failed to report back (exit status 1)"
    assert "which prted" in failure.hint or "ldd" in failure.hint


def test_prrte_host_key_failure_takes_the_host_from_the_block_below() -> None:
    output = (
        "Host key verification failed.\n"
        + PRRTE_UNREPORTED % ("prterun", "spark-1", "spark-3", 255)
        + shown(PRRTE_FAILED_DAEMON_LAUNCH, "prterun")
    )
    assert must_read(output).cause == "spark-3: mpirun's daemon not started, ssh failed: Host key verification failed."


def test_prrte_prted_missing_on_the_remote_node() -> None:
    output = (
        "bash: line 1: prted: command not found\n"
        + PRRTE_UNREPORTED % ("prterun", "spark-1", "spark-2", 127)
        + shown(PRRTE_FAILED_DAEMON_LAUNCH, "prterun")
    )
    failure = must_read(output)
    assert failure.cause == "spark-2: prted not found by the remote shell: bash: line 1: prted: command not found"
    assert "`ssh NODE which prted`" in failure.hint


def test_prrte_exit_status_127_alone_still_says_prted_was_not_found() -> None:
    output = PRRTE_UNREPORTED % ("prterun", "spark-1", "spark-2", 127)
    assert must_read(output).cause == "spark-2: prted not found by the remote shell (exit status 127)"


def test_prrte_daemon_missing_a_library_names_the_node_and_the_library() -> None:
    output = (
        "prted: error while loading shared libraries: libpmix.so.2: cannot open shared object file: "
        "No such file or directory\n"
        + PRRTE_UNREPORTED % ("prterun", "spark-1", "spark-2", 127)
        + shown(PRRTE_FAILED_DAEMON_LAUNCH, "prterun")
    )
    failure = must_read(output)
    assert failure.cause == (
        "spark-2: prted: error while loading shared libraries: libpmix.so.2: cannot open shared object file: "
        "No such file or directory"
    )
    assert "LD_LIBRARY_PATH" in failure.hint


def test_prrte_remote_executable_not_found() -> None:
    output = shown(PRRTE_EXE_NOT_FOUND, "prterun", 8, "prterun", "prterun", "spark-2", APP)
    failure = must_read(output)
    assert failure.cause == f"spark-2: executable not found: {APP}"
    assert "same path on every node" in failure.hint


def test_prrte_remote_executable_not_accessible() -> None:
    output = shown(PRRTE_EXE_NOT_ACCESSIBLE, "prterun", APP, "spark-2", 8)
    assert must_read(output).cause == f"spark-2: executable not accessible: {APP}"


def test_prrte_rank_missing_libnccl_is_read_from_the_loader_not_the_exit_code() -> None:
    output = (
        f"{APP}: error while loading shared libraries: libnccl.so.2: cannot open shared object file: "
        "No such file or directory\n" + shown(PRRTE_NON_ZERO_EXIT, "prterun", PRRTE_RANK, 127)
    )
    failure = must_read(output)
    assert failure.cause == (
        "all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object file: "
        "No such file or directory"
    )
    assert failure.hint.startswith("install libnccl.so.2 on every node") and "--env LD_LIBRARY_PATH=" in failure.hint


def test_prrte_not_enough_slots() -> None:
    output = shown(PRRTE_NOT_ENOUGH_SLOTS, 16, APP)
    failure = must_read(output)
    assert failure.cause == "not enough slots for the 16 ranks of all_reduce_perf"
    assert "-H" in failure.hint


def test_prrte_out_of_resource_is_read_as_too_few_slots() -> None:
    output = shown(PRRTE_OUT_OF_RESOURCE, 16, APP, "BYSLOT", "NONE")
    assert must_read(output).cause == "not enough slots (or CPUs to bind) for the 16 ranks of all_reduce_perf"


def test_prrte_lost_daemon_names_the_node_from_a_later_line() -> None:
    output = shown(NODE_DIED, "PRTE", PRRTE_HNP, "spark-1", PRRTE_DAEMON, "spark-2")
    assert must_read(output).cause == (
        "spark-2: mpirun lost its daemon there (PRTE has lost communication with a remote daemon)"
    )


def test_prrte_ssh_failure_wins_over_the_lost_daemon_it_caused() -> None:
    output = "alice@spark-2: Permission denied (publickey,password).\n" + shown(
        NODE_DIED, "PRTE", PRRTE_HNP, "spark-1", PRRTE_DAEMON, "spark-2"
    )
    assert must_read(output).cause == (
        "spark-2: mpirun's daemon not started, ssh failed: alice@spark-2: Permission denied (publickey,password)."
    )


def test_prrte_no_connection_to_a_daemon() -> None:
    output = shown(PRRTE_NO_CONNECT, "spark-1", "spark-2")
    failure = must_read(output)
    assert failure.cause == "spark-2: mpirun cannot connect to its daemon there from spark-1"
    assert "oob_tcp_if_include" in failure.hint


def test_prrte_generic_daemon_launch_failure_alone() -> None:
    failure = must_read(shown(PRRTE_FAILED_DAEMON_LAUNCH, "prterun"))
    assert failure.cause == "prterun was unable to reliably start one or more daemons"
    assert "which prted" in failure.hint


# -- OpenMPI 4.1 (ORTE) ----------------------------------------------------------------------------------------------


def test_orte_unable_to_reliably_start_daemons() -> None:
    failure = must_read(shown(ORTE_FAILED_DAEMON_LAUNCH))
    assert failure.cause == "ORTE was unable to reliably start one or more daemons"
    assert "which orted" in failure.hint


def test_orte_unresolvable_host_is_named_from_ssh() -> None:
    output = "ssh: Could not resolve hostname spark-9: Name or service not known\n" + shown(ORTE_FAILED_DAEMON_LAUNCH)
    assert must_read(output).cause == (
        "spark-9: mpirun's daemon not started, ssh failed: ssh: Could not resolve hostname spark-9: "
        "Name or service not known"
    )


def test_orte_two_unreachable_hosts_are_both_named() -> None:
    output = (
        "ssh: connect to host spark-2 port 22: Connection refused\n"
        "ssh: connect to host spark-3 port 22: Connection timed out\n" + shown(ORTE_FAILED_DAEMON_LAUNCH)
    )
    assert must_read(output).cause == (
        "spark-2, spark-3: mpirun's daemon not started, ssh failed: ssh: connect to host spark-2 port 22: "
        "Connection refused"
    )


def test_orte_orted_missing_on_the_remote_node() -> None:
    output = "bash: orted: command not found\n" + shown(ORTE_FAILED_DAEMON_LAUNCH)
    failure = must_read(output)
    assert failure.cause == "orted not found by the remote shell: bash: orted: command not found"
    assert "`ssh NODE which orted`" in failure.hint


def test_orte_orted_missing_a_library() -> None:
    output = (
        "orted: error while loading shared libraries: libopen-rte.so.40: cannot open shared object file: "
        "No such file or directory\n" + shown(ORTE_FAILED_DAEMON_LAUNCH)
    )
    assert must_read(output).cause == (
        "orted: error while loading shared libraries: libopen-rte.so.40: cannot open shared object file: "
        "No such file or directory"
    )


def test_orte_remote_executable_not_found() -> None:
    output = shown(ORTE_EXE_NOT_FOUND, "mpirun", 8, "mpirun", "mpirun", "spark-2", APP)
    assert must_read(output).cause == f"spark-2: executable not found: {APP}"


def test_orte_remote_executable_not_accessible() -> None:
    output = shown(ORTE_EXE_NOT_ACCESSIBLE, "mpirun", APP, "spark-2", 8)
    assert must_read(output).cause == f"spark-2: executable not accessible: {APP}"


def test_orte_rank_missing_libnccl_with_tagged_output() -> None:
    output = (
        f"[1,8]<stderr>:{APP}: error while loading shared libraries: libnccl.so.2: cannot open shared object "
        "file: No such file or directory\n" + shown(ORTE_NON_ZERO_EXIT, "mpirun", "[[9226,1],8]", 127)
    )
    assert must_read(output).cause == (
        "all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object file: "
        "No such file or directory"
    )


def test_orte_not_enough_slots() -> None:
    assert (
        must_read(shown(ORTE_NOT_ENOUGH_SLOTS, 16, APP)).cause == "not enough slots for the 16 ranks of all_reduce_perf"
    )


def test_orte_lost_daemon_names_the_node() -> None:
    output = shown(NODE_DIED, "ORTE", "[[27407,0],0]", "spark-1", "[[27407,0],1]", "spark-2")
    assert must_read(output).cause == (
        "spark-2: mpirun lost its daemon there (ORTE has lost communication with a remote daemon)"
    )


def test_orte_daemon_died_while_launching() -> None:
    failure = must_read(shown(ORTE_DAEMON_DIED, 1) + shown(ORTE_FAILED_DAEMON_LAUNCH))
    assert failure.cause == "an mpirun daemon died with status 1 while launching"
    assert "LD_LIBRARY_PATH" in failure.hint


def test_orte_daemon_failed_before_reporting_back() -> None:
    failure = must_read(shown(ORTE_FAILED_DAEMON))
    assert failure.cause == "mpirun's daemon failed after launch, before it reported back (ORTE)"
    assert "oob_tcp_if_include" in failure.hint


@pytest.mark.parametrize("runtime", ["4.1", "5"])
def test_no_node_has_the_oob_subnet(runtime: str) -> None:
    block = shown(OOB_NO_INCLUDED_FOUND, "10.0.0.0/24")
    output = block + (shown(ORTE_FAILED_DAEMON_LAUNCH) if runtime == "4.1" else "")
    assert must_read(output).cause == "a node has none of the networks given to --mca oob_tcp_if_include (10.0.0.0/24)"


# -- what is not a launch failure, and the rung's reading -------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(REAL_NCCL_TESTS.glob("*.txt")), ids=lambda p: p.name)
def test_real_nccl_tests_output_is_no_launch_failure(path: Path) -> None:
    assert read_failure(path.read_text()) is None


def test_a_rank_that_failed_in_nccl_is_left_to_nccl_tests_own_words() -> None:
    output = "spark-2: Test NCCL failure common.cu:1234 'unhandled system error'\n" + shown(
        PRRTE_NON_ZERO_EXIT, "prterun", PRRTE_RANK, 3
    )
    assert read_failure(output) is None
    assert (
        read_run("all_reduce", output, None).error
        == "spark-2: Test NCCL failure common.cu:1234 'unhandled system error'"
    )


def test_a_run_with_no_rows_fails_with_mpiruns_cause_and_hint() -> None:
    output = "ssh: connect to host 10.0.0.2 port 22: Connection refused\n" + PRRTE_UNREPORTED % (
        "prterun",
        "spark-1",
        "10.0.0.2",
        255,
    )
    reading = read_run("all_reduce", output, None)
    assert reading.summary is None
    assert reading.error == must_read(output).line
    assert reading.error.startswith(
        "10.0.0.2: mpirun's daemon not started, ssh failed: ssh: connect to host 10.0.0.2 port 22: Connection refused"
        " (hint: "
    )


def test_colour_and_carriage_returns_do_not_hide_the_cause() -> None:
    output = shown(NODE_DIED, "PRTE", PRRTE_HNP, "spark-1", PRRTE_DAEMON, "spark-2").replace("\n", "\r\n")
    assert must_read("\x1b[31m" + output + "\x1b[0m").cause.startswith("spark-2: mpirun lost its daemon there")
