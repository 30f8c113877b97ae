"""What a run was asked to do: the bench options every rung reads, and the run's own choices beside them (which
rungs, whether to fix), as `run.json` keeps them. Pure.

A run directory outlives the options of the code that wrote it: a field an older wirespeed did not write reads as
its default, and one of the wrong type is one line naming the file and the field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.nccl import DEFAULT_COLLECTIVES
from wirespeed.core.records.decode import Fields


@dataclass(frozen=True)
class BenchOptions:
    """What every rung reads: the same seconds, sampling interval, directions, environment and sizes for all."""

    seconds: int = 5  # each bandwidth measurement (TCP, RDMA, a latency rung's run on each half)
    interval_s: float = 0.5  # between counter samples at the wire, for every rung
    bidir: bool = False  # both directions at once
    streams: int = 16  # tcp-multi
    env: tuple[tuple[str, str | None], ...] = ()  # for every NCCL rank (NAME=VALUE, or NAME: the launcher's value)
    collectives: tuple[str, ...] = DEFAULT_COLLECTIVES
    min_bytes: int = 1 << 20  # NCCL message sizes
    max_bytes: int = 1 << 30
    iterations: int = 20  # nccl-tests -n
    nccl_timeout_s: float = 900.0
    matrix_layers: tuple[str, ...] = ("tcp", "rdma")  # what `bench matrix` measures (--layer)

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds, "interval_s": self.interval_s, "bidir": self.bidir, "streams": self.streams,
            "env": [[k, v] for k, v in self.env], "collectives": list(self.collectives), "min_bytes": self.min_bytes,
            "max_bytes": self.max_bytes, "iterations": self.iterations, "nccl_timeout_s": self.nccl_timeout_s,
            "matrix_layers": list(self.matrix_layers),
        }  # fmt: skip

    @staticmethod
    def from_json(f: Fields) -> BenchOptions:
        """The options as written; a field left out (an older run) is its default."""
        made = BenchOptions()

        def whole(key: str, default: int) -> int:
            return default if f.raw(key) is None else f.whole(key)

        def num(key: str, default: float) -> float:
            return default if f.raw(key) is None else f.num(key)

        def texts(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
            return default if f.raw(key) is None else f.texts(key)

        return BenchOptions(
            seconds=whole("seconds", made.seconds),
            interval_s=num("interval_s", made.interval_s),
            bidir=f.flag("bidir", made.bidir),
            streams=whole("streams", made.streams),
            env=_env(f),
            collectives=texts("collectives", made.collectives),
            min_bytes=whole("min_bytes", made.min_bytes),
            max_bytes=whole("max_bytes", made.max_bytes),
            iterations=whole("iterations", made.iterations),
            nccl_timeout_s=num("nccl_timeout_s", made.nccl_timeout_s),
            matrix_layers=texts("matrix_layers", made.matrix_layers),
        )


def _env(f: Fields) -> tuple[tuple[str, str | None], ...]:
    """`env`: [NAME, VALUE] pairs, VALUE null where the launcher's value is passed on."""
    raw = f.raw("env") or []
    if not isinstance(raw, list):
        raise ValueError(f"{f.where}: env: expected a list of [NAME, VALUE] pairs")
    pairs: list[tuple[str, str | None]] = []
    for index, item in enumerate(raw):
        if not (
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], str)
            and (item[1] is None or isinstance(item[1], str))
        ):
            raise ValueError(f"{f.where}: env[{index}]: expected [NAME, VALUE or null]")
        pairs.append((item[0], item[1]))
    return tuple(pairs)


@dataclass(frozen=True)
class RunOptions:
    """`run.json`'s options: the bench options, and what a commission chose beside them (absent for a bench)."""

    bench: BenchOptions = field(default_factory=BenchOptions)
    rungs: str | None = None  # commission: `ladder`, a layer, or one rung (`--rungs`)
    fix: bool | None = None  # commission: False with --no-fix

    def to_json(self) -> dict[str, Any]:
        extra = {} if self.rungs is None and self.fix is None else {"rungs": self.rungs, "fix": self.fix}
        return {**self.bench.to_json(), **extra}

    @staticmethod
    def from_json(f: Fields) -> RunOptions:
        return RunOptions(BenchOptions.from_json(f), f.opt_text("rungs"), f.opt_flag("fix"))
