"""`wirespeed tune nccl`: a search over the NCCL settings that matter for the transport NCCL used, within a time
budget, judged against the defaults' own noise; then the winner (or the defaults) measured once more as a normal
NCCL rung with the wire sampled. Every trial's command and output land in `tune-nccl/`, the record
(`tune-nccl.json`) is rewritten after every trial, and nothing on the nodes is changed.

Order: a warm-up run (discarded: first CUDA and socket set-up), the defaults several times (their spread is the
noise), one screening run per coarse candidate, more runs for the best of each setting, their winners combined,
the defaults again at the end (a drift of the machine widens the noise instead of passing for a gain).
"""

from __future__ import annotations

import shlex
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from wirespeed.core.mpi_failure import read_failure
from wirespeed.core.nccl import (
    NcclOptions,
    NcclPlan,
    library_path_note,
    mpirun_argv,
    node_memory,
    plan_nccl,
    read_run,
)
from wirespeed.core.records.options import BenchOptions
from wirespeed.core.records.results import NotRunnable, RungResult
from wirespeed.core.records.tune import (
    Env,
    Trial,
    TuneResult,
    busbw_from_time,
    coarse_candidates,
    combined,
    judge,
    label,
    nccl_version,
)
from wirespeed.core.records.tune import settings_for as tunable_settings
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.rungs.base import RungContext, run_rung
from wirespeed.engine.rungs.nccl import NcclRung, _is_root

FINE = 3  # coarse candidates measured again: the best of each setting, the best settings first
FILE = "tune-nccl.json"


@dataclass(frozen=True)
class TuneOptions:
    collective: str = "sendrecv"
    size_bytes: int = 1 << 30
    budget_s: float = 600.0
    repeats: int = 3  # runs per candidate past the screening run
    defaults_repeats: int = 5
    iterations: int = 10
    warmup: int = 2
    env: tuple[tuple[str, str | None], ...] = ()  # for every trial, defaults included (--env)
    trial_timeout_s: float = 300.0


def plan(remote: Remote, discovery: object, options: TuneOptions) -> NcclPlan | NotRunnable:
    """The NCCL rung's plan at one message size (capped by each node's free memory), the cluster file's
    `[nccl.env]` and --env in every trial."""
    from wirespeed.core.fabric.discovery import Discovery

    assert isinstance(discovery, Discovery)
    nccl = NcclOptions((options.collective,), options.size_bytes, options.size_bytes, options.iterations,
                       options.warmup, env=(*remote.cluster.nccl_env, *options.env),
                       timeout_s=options.trial_timeout_s)  # fmt: skip
    first = plan_nccl(discovery.facts, discovery.cabling, options.collective, nccl)
    if isinstance(first, NotRunnable):
        return first
    memory = {name: node_memory(discovery.facts[name]) for name in first.nodes}
    return plan_nccl(discovery.facts, discovery.cabling, options.collective, nccl, memory)


class Search:
    """One search, its record kept current in the run directory."""

    def __init__(self, remote: Remote, nccl: NcclPlan, options: TuneOptions, run_dir: RunDirectory,
                 say: Callable[[str], None]) -> None:  # fmt: skip
        self.remote, self.plan, self.options, self.run_dir, self.say = remote, nccl, options, run_dir, say
        self.launcher = remote.cluster.node(nccl.launcher)
        self.as_root = _is_root(remote, self.launcher)
        self.started = time.monotonic()
        fixed = tuple((k, v) for k, v in nccl.env if v is not None and k != "NCCL_DEBUG")
        self.result = TuneResult(options.collective, nccl.max_bytes, None, None, options.budget_s,
                                 options.repeats, fixed_env=fixed,
                                 notes=tuple(n for n in (library_path_note(nccl),) if n))  # fmt: skip
        self.stopped: str | None = None

    def left_s(self) -> float:
        return self.options.budget_s - (time.monotonic() - self.started)

    def fits(self) -> bool:
        """Another trial fits in the budget: the median trial so far, or nothing measured yet."""
        taken = [t.seconds for t in self.result.trials]
        return not taken or self.left_s() >= statistics.median(taken)

    def trial(self, env: Env, stage: str) -> Trial | None:
        """Run one candidate once; None (and the search stops) when the budget cannot hold another trial."""
        if self.stopped is not None:
            return None
        if not self.fits():
            self.stopped = f"the budget ({self.options.budget_s:.0f} s) ended the search during {stage}"
            self.say(f"tune: {self.stopped}")
            return None
        index = len(self.result.trials) + 1
        names = {k for k, _ in env}
        merged = replace(self.plan, env=(*((k, v) for k, v in self.plan.env if k not in names), *env))
        options = NcclOptions((self.options.collective,), merged.min_bytes, merged.max_bytes,
                              self.options.iterations, self.options.warmup)  # fmt: skip
        argv = mpirun_argv(merged, options, None, as_root=self.as_root)
        self.run_dir.write_text(f"tune-nccl/{index:03d}.command.txt", shlex.join(argv) + "\n")
        taken = [t.seconds for t in self.result.trials]
        about = f", about {statistics.median(taken):.0f} s" if taken else ""
        self.say(f"tune: run {index} ({stage}{about}): {label(env)} ...")  # a run is seconds long: never silent
        begun = time.monotonic()
        done = self.remote.run(self.launcher, ["sh", "-c", 'exec "$@" 2>&1', "sh", *argv],
                               timeout_s=self.options.trial_timeout_s)  # fmt: skip
        seconds = time.monotonic() - begun
        self.run_dir.write_text(f"tune-nccl/{index:03d}.out", done.stdout)
        reading = read_run(self.options.collective, done.stdout, None)
        summary = reading.summary
        peak = summary.peak if summary is not None else None
        busbw = None
        if summary is not None and peak is not None:
            busbw = busbw_from_time(self.options.collective, summary.ranks, peak.size_bytes, peak.time_us)
            busbw = peak.busbw_GBps if busbw is None else round(busbw, 4)
        launch = read_failure(done.stdout)  # rows, then a failed mpirun: OpenMPI's own words say why
        said = reading.error or (launch.line if launch else done.message)
        error = None if busbw is not None and done.ok else (said or "no figure")
        result = Trial(env, busbw, seconds, stage, error)
        if summary is not None and self.result.transport is None:
            self.result = replace(self.result, transport=summary.transport, nccl_version=summary.nccl_version)
        self.result = replace(self.result, trials=(*self.result.trials, result))
        self.save()
        figure = f"{busbw:.3f} GB/s" if busbw is not None else f"failed: {error}"
        self.say(f"tune: run {index}: {figure} ({max(0.0, self.left_s()):.0f} s of the budget left)")
        return result

    def save(self) -> None:
        self.run_dir.write_json(FILE, self.result.to_json())

    def run(self) -> TuneResult:
        warm = self.trial((), "warm-up")
        if warm is None or warm.busbw_GBps is None:
            return self.finish(f"the defaults did not run: {warm.error if warm else self.stopped}")
        for _ in range(self.options.defaults_repeats):
            self.trial((), "defaults")
        settings, left_out = tunable_settings(self.result.transport, nccl_version(self.result.nccl_version))
        self.result = replace(self.result, left_out=tuple(left_out))
        if not settings:
            return self.finish(f"no setting to search for transport {self.result.transport or 'unknown'}")
        screened = [(env, t) for env in coarse_candidates(settings) if (t := self.trial(env, "coarse")) is not None]
        base = statistics.median(self.result.defaults)
        # the best screening run of each setting (threads x sockets count as one), if it beat the defaults' median
        best_of: dict[frozenset[str], tuple[float, Env]] = {}
        for env, t in screened:
            names = frozenset(name for name, _ in env)
            if t.busbw_GBps is not None and t.busbw_GBps > max(base, best_of.get(names, (0.0, ()))[0]):
                best_of[names] = (t.busbw_GBps, env)
        finalists = [env for _, env in sorted(best_of.values(), reverse=True)[:FINE]]
        for env in finalists:
            for _ in range(self.options.repeats - 1):
                self.trial(env, "fine")
        winners = [env for env in finalists if (v := self.result.verdict(env)) is not None and v.beats]
        both = combined(winners)
        if both is not None:
            for _ in range(self.options.repeats):
                self.trial(both, "combined")
        for _ in range(2):  # the defaults again: a drift of the machine widens the noise
            self.trial((), "defaults")
        return self.finish(None)

    def finish(self, note: str | None, *, cut: bool = False) -> TuneResult:
        """The best candidate by the noise rule, written; `cut` (a signal) leaves the record unfinished."""
        beating = [(v.median_GBps, env) for env in self.result.candidates()[1:]
                   if (v := self.result.verdict(env)) is not None and v.beats]  # fmt: skip
        best = max(beating)[1] if beating else ()
        notes = [n for n in (note, self.stopped) if n]
        self.result = replace(self.result, best=best, finished=not cut, notes=(*self.result.notes, *notes))
        self.save()
        return self.result


def confirm(remote: Remote, discovery: object, result: TuneResult, options: TuneOptions, run_dir: RunDirectory,
            interval_s: float, board: object = None) -> RungResult:  # fmt: skip
    """The winner (or the defaults) once more as the NCCL rung itself: the wire sampled, the ceiling named."""
    from wirespeed.core.fabric.discovery import Discovery
    from wirespeed.engine.live import LiveBoard

    assert isinstance(discovery, Discovery)
    bench = BenchOptions(interval_s=interval_s, collectives=(options.collective,), min_bytes=result.size_bytes,
                         max_bytes=result.size_bytes, iterations=options.iterations * 2,
                         env=(*options.env, *result.best))  # fmt: skip
    ctx = RungContext(remote, discovery, bench, run_dir, (), tick=lambda _: None,
                      board=board if isinstance(board, LiveBoard) else None)  # fmt: skip
    return run_rung(NcclRung(options.collective), ctx)


def judge_best(result: TuneResult, confirmed: RungResult) -> str | None:
    """Does the confirmation agree? Its busbw against the defaults' runs, by the same noise rule."""
    if not result.best or confirmed.collective is None or confirmed.collective.peak is None:
        return None
    verdict = judge(result.defaults, [confirmed.collective.peak.busbw_GBps] * 2)
    word = "confirms" if verdict.beats else "does not confirm"
    return (f"the NCCL rung with the best settings {word} the gain: {verdict.median_GBps:.3f} GB/s against the "
            f"defaults' {verdict.defaults_median_GBps:.3f} GB/s (spread {verdict.spread_GBps:.3f})")  # fmt: skip
