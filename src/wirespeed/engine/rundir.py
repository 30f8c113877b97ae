"""The one writer of a run directory: `run.json` first (status `running`), every rung and matrix record the moment
it is known, each tool's raw output beside it, and `run.json` again when the run ends, however it ends.

Layout: `run.json`, `discovery.json`, `checks.json`, `<rung>.json`, `<rung>/...` (raw outputs), `<rung>.samples.jsonl`
(every counter sample while it ran), `matrix-<layer>.json`. Whole files are replaced atomically (write, then
rename, through wirespeed.adapters.files: never through a link planted in the directory), so a reader never sees
half a record; the samples are appended line by line, each line whole. A full disk (or EIO, EROFS) is
`files.Unwritable`: one line naming the file and what was kept.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path

from wirespeed.adapters import files
from wirespeed.core.records.matrix import MatrixResult
from wirespeed.core.records.results import RungResult
from wirespeed.core.records.run import RUN_FILE, RunRecord, RunStatus, Step


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class RunDirectory:
    """Where a run's results go, each written the moment it is known (an interrupted run keeps them)."""

    def __init__(self, root: Path, *, phase_of: RunDirectory | None = None, phase: str | None = None) -> None:
        self.record: RunRecord | None = None
        self.path: Path
        self.phase = phase
        self.run_name = phase_of.name if phase_of is not None else ""
        if phase_of is not None:
            self.path = files.ensure_dir(root, phase_of.path)
            return
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        files.ensure_dir(root)
        self.path = root / stamp
        suffix = 1
        while True:
            try:
                self.path.mkdir()
                break
            except FileExistsError:  # a run of the same second (or anything else of that name): the next suffix
                suffix += 1
                self.path = root / f"{stamp}-{suffix}"
            except OSError as exc:
                why = f"{exc.strerror or exc} (nothing written)"
                raise files.Unwritable(f"{self.path}: cannot create the run directory: {why}") from None

    @property
    def name(self) -> str:
        """The run's name (a phase's directory answers with its run's)."""
        return self.run_name or self.path.name

    def phase_dir(self, phase: str) -> RunDirectory:
        """A phase of this run (`before`, `after`): its rungs, samples and raw outputs in a folder of that name,
        each rung record marked with the phase."""
        return RunDirectory(self.path / phase, phase_of=self, phase=phase)

    def write_json(self, name: str, data: object) -> Path:
        return files.write_atomic(self.path / name, json.dumps(data, indent=2, allow_nan=False) + "\n", root=self.path)

    def write_text(self, name: str, text: str) -> None:
        files.write_atomic(self.path / name, text, root=self.path)

    def open_text(self, name: str) -> files.Appender:
        """A file to append to as lines come (raw tool output, samples): what is written stays if the run dies,
        each write whole or not at all."""
        return files.open_append(self.path / name, root=self.path)

    def start(self, record: RunRecord) -> None:
        self.record = record
        self.write_json(RUN_FILE, record.to_json())

    def rung(self, result: RungResult) -> RungResult:
        """Write a rung's record (marked with this directory's phase) and give it back as written."""
        if self.phase is not None:
            result = replace(result, phase=self.phase)
        self.write_json(f"{result.rung}.json", result.to_json())
        return result

    def matrix(self, result: MatrixResult) -> None:
        self.write_json(f"matrix-{result.layer}.json", result.to_json())

    def step(self, step: Step) -> None:
        """A step of a multi-step run (`commission`) ended: it joins the record at once."""
        if self.record is None:
            return
        self.record = replace(self.record, steps=(*self.record.steps, step))
        self.write_json(RUN_FILE, self.record.to_json())

    def finish(self, status: RunStatus, reason: str | None = None) -> None:
        """The run's last word: how it ended. Safe to call once the record is started; later calls win."""
        if self.record is None:
            return
        self.record = replace(self.record, status=status, reason=reason, ended_utc=utc_now())
        self.write_json(RUN_FILE, self.record.to_json())


@dataclass
class Ending:
    """How a run ended, as the block that ran it leaves it; a step may set it first (a stop with its reason)."""

    status: RunStatus = RunStatus.RUNNING
    reason: str | None = None


@contextmanager
def ending(run_dir: RunDirectory) -> Iterator[Ending]:
    """The run's last word, however the block ends: `complete` (unless the block said otherwise), `interrupted`
    by a signal (KeyboardInterrupt, or `Interrupted` naming SIGTERM/SIGHUP: what was measured is kept), or `failed`
    with the error's first line, the error going on up."""
    end = Ending()
    try:
        yield end
        if end.status is RunStatus.RUNNING:
            end.status = RunStatus.COMPLETE
    except KeyboardInterrupt as exc:
        end.status, end.reason = RunStatus.INTERRUPTED, getattr(exc, "reason", None) or "interrupted (Ctrl-C)"
    except BaseException as exc:
        with suppress(files.Unwritable):  # a full disk: the error that stopped the run is the one to say
            run_dir.finish(RunStatus.FAILED, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        raise
    run_dir.finish(end.status, end.reason)
