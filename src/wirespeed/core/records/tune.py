"""`tune nccl`, planned and judged. Pure.

Which NCCL settings are worth trying depends on the transport NCCL used (read from its INFO lines) and on its
version (a setting NCCL does not know is silently ignored, so trying it would only measure noise). Candidates are
judged against the defaults with the discipline pyperf uses for benchmarks: repetitions, the median and the spread,
and a gain counts only when it exceeds the spread the defaults showed on their own (and an exact rank test says how
unlikely the separation is by chance).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.records.decode import Fields, Figures
from wirespeed.core.records.results import BITS_PER_BYTE, SCHEMA_VERSION, check_version

Env = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Setting:
    """One NCCL variable worth searching: the values tried, the transports it acts on, the first NCCL version that
    reads it (its NCCL_PARAM in NVIDIA/nccl's release tags, and NCCL's environment documentation), and why."""

    name: str
    values: tuple[str, ...]
    transports: tuple[str, ...]
    since: tuple[int, int, int]
    why: str


SOCKET, IB = "NET/Socket", "NET/IB"
SETTINGS: tuple[Setting, ...] = (
    Setting("NCCL_SOCKET_NTHREADS", ("1", "2", "4", "8"), (SOCKET,), (2, 4, 8),
            "CPU threads per connection that move socket data (default 1 on most clouds and hosts)"),
    Setting("NCCL_NSOCKS_PERTHREAD", ("1", "2", "4", "8"), (SOCKET,), (2, 4, 8),
            "sockets each of those threads opens; threads x sockets is at most 64"),
    Setting("NCCL_MIN_NCHANNELS", ("2", "4", "8", "16"), (SOCKET, IB), (2, 5, 0),
            "at least this many channels: more parallel transfers, more proxy work (deprecated for NCCL_MIN_CTAS in "
            "2.17, still read)"),
    Setting("NCCL_NCHANNELS_PER_NET_PEER", ("1", "2", "4", "8"), (IB,), (2, 12, 7),
            "channels per remote peer; the seeds set 4 by hand and left the sweep untried"),
    Setting("NCCL_IB_QPS_PER_CONNECTION", ("1", "2", "4", "8"), (IB,), (2, 10, 3),
            "queue pairs per connection: spreads one connection over more of the NIC's engines"),
    Setting("NCCL_IB_MERGE_NICS", ("0", "1"), (IB,), (2, 20, 3),
            "merge the two PCIe halves of a port into one NIC to NCCL, or keep them apart"),
)  # fmt: skip
SOCKET_PRODUCT_MAX = 64  # NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD


def nccl_version(text: str | None) -> tuple[int, int, int] | None:
    """`2.28.9`, `2.28.9+cuda13.0` or `NCCL version 2.28.9` -> (2, 28, 9)."""
    import re

    match = re.search(r"(\d+)\.(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def settings_for(transport: str | None, version: tuple[int, int, int] | None) -> tuple[list[Setting], list[str]]:
    """The settings worth trying for this transport and NCCL version, and one line for each one left out."""
    chosen, left_out = [], []
    for setting in SETTINGS:
        if transport not in setting.transports:
            continue
        if version is not None and version < setting.since:
            since = ".".join(map(str, setting.since))
            left_out.append(f"{setting.name}: NCCL {'.'.join(map(str, version))} predates it (since {since})")
            continue
        chosen.append(setting)
    return chosen, left_out


def busbw_from_time(collective: str, ranks: int | None, size_bytes: int, time_us: float) -> float | None:
    """busbw (GB/s) from nccl-tests' time column, which it prints to 5-6 digits where busbw gets 2 decimals: the
    difference between two candidates is often in the third."""
    from wirespeed.core.tools.nccl_tests import busbw_factor

    if not ranks or time_us <= 0:
        return None
    return size_bytes / (time_us * 1e-6) / 1e9 * busbw_factor(collective, ranks)


def label(env: Env) -> str:
    return " ".join(f"{k}={v}" for k, v in env) or "defaults"


def coarse_candidates(settings: Sequence[Setting]) -> list[Env]:
    """The first pass: for sockets, every NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD pair (they act together) up to
    NCCL's limit of 64; every other setting on its own, one value at a time. The defaults are not among them."""
    names = {s.name: s for s in settings}
    candidates: list[Env] = []
    threads, socks = names.pop("NCCL_SOCKET_NTHREADS", None), names.pop("NCCL_NSOCKS_PERTHREAD", None)
    if threads is not None and socks is not None:
        for t, s in itertools.product(threads.values, socks.values):
            if (t, s) != ("1", "1") and int(t) * int(s) <= SOCKET_PRODUCT_MAX:
                candidates.append(((threads.name, t), (socks.name, s)))
    for setting in names.values():
        candidates += [((setting.name, value),) for value in setting.values]
    return candidates


def combined(best: Sequence[Env]) -> Env | None:
    """The winners of different settings together (the first one's value where two set the same variable); None
    when that is one of them already (one winner, or winners of the same variables)."""
    merged: dict[str, str] = {}
    for env in best:
        for name, value in env:
            merged.setdefault(name, value)
    if len(best) < 2 or any(dict(env) == merged for env in best):
        return None  # nothing that was not measured already
    return tuple(sorted(merged.items()))


@dataclass(frozen=True)
class Verdict:
    """A candidate against the defaults: medians, the gain and the defaults' own spread (max - min), whether the
    gain exceeds that spread, and the one-sided exact rank-test p-value that the candidate's runs sit above the
    defaults' by chance."""

    median_GBps: float
    defaults_median_GBps: float
    gain_GBps: float
    spread_GBps: float
    beats: bool
    p_value: float | None

    @property
    def gain_percent(self) -> float:
        return 100.0 * self.gain_GBps / self.defaults_median_GBps if self.defaults_median_GBps else 0.0

    @property
    def gain_gbps(self) -> float:
        """The gain per direction, Gb/s (busbw x 8)."""
        return self.gain_GBps * BITS_PER_BYTE


def spread(values: Sequence[float]) -> float:
    return max(values) - min(values) if values else 0.0


def rank_test_p(low: Sequence[float], high: Sequence[float]) -> float | None:
    """One-sided exact Mann-Whitney: the chance, with no real difference, that `high`'s runs beat `low`'s pairs at
    least as often as observed (every split of the pooled runs equally likely). None without runs on both sides."""
    if not low or not high:
        return None

    def wins(a: Sequence[float], b: Sequence[float]) -> float:
        return sum(1.0 if y > x else 0.5 if y == x else 0.0 for x in a for y in b)

    pooled = [*low, *high]
    observed = wins(low, high)
    total = at_least = 0
    for chosen in itertools.combinations(range(len(pooled)), len(high)):
        picked = set(chosen)
        if wins([pooled[i] for i in range(len(pooled)) if i not in picked], [pooled[i] for i in chosen]) >= observed:
            at_least += 1
        total += 1
    return at_least / total


def judge(defaults: Sequence[float], candidate: Sequence[float]) -> Verdict:
    """The noise rule: better only when the median gain exceeds the spread the defaults showed on their own."""
    base, median = statistics.median(defaults), statistics.median(candidate)
    noise = spread(defaults)
    gain = median - base
    return Verdict(median, base, gain, noise, len(candidate) >= 2 and gain > noise, rank_test_p(defaults, candidate))


def env_of(data: Fields, key: str) -> Env:
    """An environment as a record keeps it, `{"NAME": "value"}`, in its order."""
    table = data.opt_obj(key)
    return tuple((str(k), str(v)) for k, v in (table.data.items() if table is not None else ()))


@dataclass(frozen=True)
class Trial:
    """One nccl-tests run of one candidate: its busbw at the size, and the seconds it took."""

    env: Env
    busbw_GBps: float | None
    seconds: float
    stage: str  # warm-up, defaults, coarse, fine, combined
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"env": dict(self.env), "busbw_GBps": self.busbw_GBps, "seconds": self.seconds, "stage": self.stage,
                "error": self.error}  # fmt: skip

    @staticmethod
    def from_json(data: Fields) -> Trial:
        return Trial(env_of(data, "env"), data.opt_num("busbw_GBps"), data.num("seconds"), data.text("stage"),
                     data.opt_text("error"))  # fmt: skip


@dataclass(frozen=True)
class TuneResult:
    """What `tune nccl` did and found; written to `tune-nccl.json` as it goes."""

    collective: str
    size_bytes: int
    transport: str | None
    nccl_version: str | None
    budget_s: float
    repeats: int
    trials: tuple[Trial, ...] = ()
    left_out: tuple[str, ...] = ()  # settings not tried, and why
    notes: tuple[str, ...] = ()
    best: Env = ()  # () when no candidate beat the defaults beyond their noise
    finished: bool = False
    fixed_env: Env = field(default=())  # what every trial had (derived by wirespeed, the cluster file, --env)

    def runs_of(self, env: Env) -> list[float]:
        return [t.busbw_GBps for t in self.trials if t.env == env and t.stage != "warm-up" and t.busbw_GBps]

    @property
    def defaults(self) -> list[float]:
        return self.runs_of(())

    def candidates(self) -> list[Env]:
        """Every candidate measured, in the order first tried, the defaults first."""
        seen: list[Env] = [()]
        for trial in self.trials:
            if trial.env not in seen:
                seen.append(trial.env)
        return seen

    def verdict(self, env: Env) -> Verdict | None:
        runs = self.runs_of(env)
        return judge(self.defaults, runs) if self.defaults and runs else None

    def answer(self) -> str:
        """One line: what won and by how much, or that nothing beat the defaults beyond their noise."""
        defaults = self.defaults
        if not defaults:
            return "the defaults could not be measured: nothing to compare"
        noise = f"the defaults' spread {spread(defaults):.3f} GB/s over {len(defaults)} runs"
        if not self.best:
            return f"no setting beat the defaults beyond noise ({noise}; median {statistics.median(defaults):.3f} GB/s)"
        v = self.verdict(self.best)
        assert v is not None
        chance = f", p = {v.p_value:.3f} by an exact rank test" if v.p_value is not None else ""
        return (
            f"{label(self.best)}: busbw {v.median_GBps:.3f} GB/s against {v.defaults_median_GBps:.3f} GB/s, "
            f"+{v.gain_GBps:.3f} GB/s ({v.gain_percent:+.0f}%, +{v.gain_gbps:.2f} Gb/s per direction), "
            f"{v.gain_GBps / v.spread_GBps if v.spread_GBps else math.inf:.1f}x {noise}{chance}"
        )

    def to_json(self) -> dict[str, Any]:
        rows = []
        for env in self.candidates():
            v = self.verdict(env)
            runs = self.runs_of(env)
            rows.append({"env": dict(env), "label": label(env), "runs_GBps": runs,
                         "median_GBps": statistics.median(runs) if runs else None, "spread_GBps": spread(runs),
                         "gain_GBps": v.gain_GBps if v and env else None, "beats": bool(v and env and v.beats),
                         "p_value": v.p_value if v and env else None})  # fmt: skip
        return {
            "kind": "tune",
            "schema_version": SCHEMA_VERSION,
            "tune": "nccl",
            "collective": self.collective,
            "size_bytes": self.size_bytes,
            "transport": self.transport,
            "nccl_version": self.nccl_version,
            "budget_s": self.budget_s,
            "repeats": self.repeats,
            "finished": self.finished,
            "fixed_env": dict(self.fixed_env),
            "best": dict(self.best),
            "answer": self.answer(),
            "left_out": list(self.left_out),
            "notes": list(self.notes),
            "candidates": rows,
            "trials": [t.to_json() for t in self.trials],
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any], where: str) -> TuneResult:
        data = Figures(raw, where)
        check_version(data)
        if data.opt_text("kind") != "tune":
            raise ValueError(f"{where}: not a tune record")
        return TuneResult(
            collective=data.text("collective"),
            size_bytes=data.whole("size_bytes"),
            transport=data.opt_text("transport"),
            nccl_version=data.opt_text("nccl_version"),
            budget_s=data.num("budget_s"),
            repeats=data.whole("repeats"),
            trials=tuple(Trial.from_json(t) for t in data.objects("trials")),
            left_out=tuple(data.texts("left_out")),
            notes=tuple(data.texts("notes")),
            best=env_of(data, "best"),
            finished=bool(data.opt_flag("finished")),
            fixed_env=env_of(data, "fixed_env"),
        )


def export_lines(env: Env) -> list[str]:
    return [f"export {name}={value}" for name, value in env]


def cluster_toml_lines(env: Env) -> list[str]:
    return ["[nccl.env]", *(f'{name} = "{value}"' for name, value in env)]
