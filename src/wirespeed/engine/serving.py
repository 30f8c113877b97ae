"""Server/client pairs on the nodes, the way iperf3, perftest and sockperf all need them: every server started
first, then every client at once (each retried while its server is not listening yet), the servers given a moment
to end by themselves (they flush their output when their client leaves), then stopped whatever happened, Ctrl-C
included. Each side's raw output is written into the run directory, byte for byte, even when the rung is cut.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from wirespeed.core.outcome import CommandResult
from wirespeed.engine.remote import Remote, RemoteProcess
from wirespeed.engine.rundir import RunDirectory

BIND_WAIT_S = 0.5  # the servers open their ports; a client that comes too early is retried anyway
CONNECT_TRIES = 40
RETRY_PAUSE_S = 0.25
SERVER_EXIT_WAIT_S = 5.0  # a server ends by itself after its client; killing it earlier loses its buffered output


@dataclass(frozen=True)
class PairCommand:
    """One measurement: a server on one node, its client on another, and where their outputs go in the run."""

    server_node: str
    server_argv: tuple[str, ...]
    client_node: str
    client_argv: tuple[str, ...]
    client_file: str | None = None  # relative to the run directory; stderr beside it as `.err` when there was any
    server_file: str | None = None


@dataclass
class PairRun:
    """What one pair left: the client's last attempt and the server's output (None where it never ran)."""

    command: PairCommand
    client: CommandResult | None = None
    server: CommandResult | None = None
    error: str | None = None  # the client's failure, one line

    @property
    def client_stdout(self) -> str:
        return self.client.stdout if self.client is not None else ""

    def server_note(self) -> str:
        return f" (server: {self.server.message})" if self.server is not None and not self.server.ok else ""


def _write(run_dir: RunDirectory, name: str | None, result: CommandResult | None) -> None:
    """stdout as `name`; stderr, when there was any, beside it with `.err` in place of `.out`."""
    if name is None or result is None:
        return
    run_dir.write_text(name, result.stdout)
    if result.stderr:
        run_dir.write_text(f"{name.removesuffix('.out')}.err", result.stderr)


def _record_commands(run_dir: RunDirectory, commands: Sequence[PairCommand]) -> None:
    """What ran where, beside the tools' output (`<folder>/commands.txt`, appended: a rung that runs its pairs in
    turn keeps them all), so the same tool can be run by hand with the same arguments."""
    folders: dict[str, list[str]] = {}
    for command in commands:
        if command.client_file is None:
            continue
        folder = str(PurePosixPath(command.client_file).parent)
        folders.setdefault(folder, []).append(
            f"server on {command.server_node}: {shlex.join(command.server_argv)}\n"
            f"client on {command.client_node}: {shlex.join(command.client_argv)}\n"
        )
    for folder, lines in folders.items():
        with run_dir.open_text(f"{folder}/commands.txt") as out:
            out.writelines(lines)


def run_pairs(
    remote: Remote,
    commands: Sequence[PairCommand],
    run_dir: RunDirectory,
    *,
    not_listening: Sequence[str],
    timeout_s: float,
    on_done: Callable[[int, PairRun], None] | None = None,
    server_exit_wait_s: float = SERVER_EXIT_WAIT_S,
) -> list[PairRun]:
    """Servers first, then every client at once in threads; the servers are stopped whatever happens. `on_done`
    hears each pair as its client finishes, so a rung cut short keeps the pairs that had finished. A tool whose
    server never ends by itself passes `server_exit_wait_s=0`."""
    runs = [PairRun(c) for c in commands]
    _record_commands(run_dir, commands)
    servers: list[RemoteProcess] = []
    quit_retrying = threading.Event()

    def client(index: int, run: PairRun) -> None:
        try:
            node = remote.cluster.node(run.command.client_node)
            result = remote.run(node, run.command.client_argv, timeout_s=timeout_s)
            for _ in range(CONNECT_TRIES):  # the server may still be starting
                said = result.stdout + result.stderr
                if quit_retrying.is_set() or not any(s in said for s in not_listening):
                    break
                time.sleep(RETRY_PAUSE_S)
                result = remote.run(node, run.command.client_argv, timeout_s=timeout_s)
            run.client = result
            run.error = None if result.ok else result.message
        except Exception as exc:  # a client's failure is that pair's result, not the end of the rung
            run.error = f"{type(exc).__name__}: {exc}"
        if on_done is not None:
            on_done(index, run)

    try:
        for run in runs:
            servers.append(remote.start(remote.cluster.node(run.command.server_node), run.command.server_argv))
        time.sleep(BIND_WAIT_S)
        threads = [threading.Thread(target=client, args=(i, r), daemon=True) for i, r in enumerate(runs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        deadline = time.monotonic() + server_exit_wait_s
        while time.monotonic() < deadline and any(s.running() for s in servers):
            time.sleep(0.1)
    finally:
        quit_retrying.set()
        for run, server in zip(runs, servers, strict=False):  # each on its own: one failing keeps none running
            try:
                run.server = server.stop(grace_s=3.0)
            except Exception as exc:
                run.error = run.error or f"stopping the server: {exc}"
        for run in runs:
            _write(run_dir, run.command.client_file, run.client)
            _write(run_dir, run.command.server_file, run.server)
    return runs
