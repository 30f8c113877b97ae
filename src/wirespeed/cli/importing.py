"""`wirespeed import FILE...`: bring in the tool outputs people already have. The reading and recognising is
wirespeed.core.importer (pure); this module opens the files, prints one summary or JSON line per file, writes
RUN_DIR/imported/ and turns every failure into one line naming the file, so one bad file never hides the others.

It takes nothing from wirespeed.cli.app at import time: app.py registers this command, so importing app here would
make a cycle. The per-invocation Ctx arrives as click's context object instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from wirespeed.core import importer
from wirespeed.core.errors import UsageError, WirespeedError
from wirespeed.core.parsers.ethtool import ERROR_COUNTERS
from wirespeed.core.units import format_rate

if TYPE_CHECKING:
    from wirespeed.cli.app import Ctx
    from wirespeed.cli.output import Output

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 120}


# --------------------------------------------------------------------------------------------------- reading


def _read(path: Path) -> dict[str, Any]:
    """One file's public object; ValueError with the one line to show otherwise (the file name is added later)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except IsADirectoryError:
        raise ValueError("is a directory, not a file") from None
    except PermissionError:
        raise ValueError("permission denied") from None
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    return importer.import_text(importer.decode(data), str(path))


def _target(imported: Path, obj: dict[str, Any], taken: set[str]) -> Path:
    """RUN_DIR/imported/<stem>.<tool>.json; a second file with the same stem in one call gets `-2`, `-3`, ..."""
    name = importer.output_name(obj["file"], obj["tool"])
    stem, suffix = name.removesuffix(f".{obj['tool']}.json"), f".{obj['tool']}.json"
    count = 1
    while name in taken:
        count += 1
        name = f"{stem}-{count}{suffix}"
    taken.add(name)
    return imported / name


# --------------------------------------------------------------------------------------------------- showing


def _size(size_bytes: int | None) -> str:
    """Message sizes as nccl-tests and perftest users read them: binary units."""
    if size_bytes is None:
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes >= scale and size_bytes % scale == 0:
            return f"{size_bytes // scale} {unit}"
    return f"{size_bytes} B"


def _sizes(rows: list[dict[str, Any]]) -> str:
    first, last = _size(rows[0]["size_bytes"]), _size(rows[-1]["size_bytes"])
    count = f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
    return f"{first} ({count})" if first == last else f"{first} .. {last} ({count})"


def _num(value: float | None, unit: str, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f} {unit}"


def _nccl_rows(obj: dict[str, Any]) -> list[list[str]]:
    rows = obj["rows"]
    placements = [
        (row["size_bytes"], name, placement)
        for row in rows
        for name in ("out_of_place", "in_place")
        if (placement := row[name]) is not None and placement["busbw_GBps"] is not None
    ]
    out = [
        ["collective", obj["collective"] or "-"],
        ["ranks", str(obj["ranks"]) if obj["ranks"] is not None else "-"],
        ["transport", obj["transport"] or "-"],
    ]
    if rows:
        out.append(["sizes", _sizes(rows)])
    if placements:
        size, name, best = max(placements, key=lambda item: item[2]["busbw_GBps"])
        out.append(["peak busbw", f"{best['busbw_GBps']:.2f} GB/s at {_size(size)} ({name.replace('_', '-')})"])
    out.append(["avg busbw", _num(obj["avg_busbw_GBps"], "GB/s", 3) if obj["complete"] else "- (run cut off)"])
    return out


def _perftest_rows(obj: dict[str, Any]) -> list[list[str]]:
    rows = obj["rows"]
    out = [
        ["test", obj["test"] or "-"],
        ["device", f"{obj['device'] or '-'} ({obj['link_type'] or '?'}, MTU {obj['mtu_bytes'] or '?'} B)"],
        ["sizes", _sizes(rows)],
    ]
    if obj["kind"] == "bw":
        averages = [row for row in rows if row["bw_avg_gbps"] is not None]
        if averages:
            best = max(averages, key=lambda row: row["bw_avg_gbps"])
            out.append(["BW average", f"{best['bw_avg_gbps']:.2f} Gb/s at {_size(best['size_bytes'])}"])
        else:
            out.append(["BW average", "- (unit not known: perftest JSON without a message rate)"])
        peaks = [row["bw_peak_gbps"] for row in rows if row["bw_peak_gbps"] is not None]
        out.append(["BW peak", f"{max(peaks):.2f} Gb/s" if peaks else "- (not measured)"])
        out.append(["bidirectional", "yes" if obj["bidirectional"] else "no"])
    else:
        first = rows[0]
        out.append([f"t_typical at {_size(first['size_bytes'])}", _num(first["t_typical_us"], "us")])
        out.append([f"t_avg at {_size(first['size_bytes'])}", _num(first["t_avg_us"], "us")])
        out.append([f"99.9% at {_size(first['size_bytes'])}", _num(first["p999_us"], "us")])
    return out


def _iperf3_rows(obj: dict[str, Any]) -> list[list[str]]:
    def gbps(bps: float | None) -> str:
        return "-" if bps is None else format_rate(bps)

    out = [
        ["protocol", f"{obj['protocol'] or '-'}, {obj['streams'] or '?'} stream(s)"],
        ["sent", gbps(obj["sent_bps"])],
        ["received", gbps(obj["received_bps"])],
    ]
    if obj["reverse_received_bps"] is not None:
        out.append(["reverse received", gbps(obj["reverse_received_bps"])])
    if obj["retransmits"] is not None:
        out.append(["retransmits", str(obj["retransmits"])])
    if obj["cpu_host_pct"] is not None:
        out.append(["CPU host / remote", f"{obj['cpu_host_pct']:.1f} % / {obj['cpu_remote_pct'] or 0:.1f} %"])
    if obj["total_datagrams"] is not None:
        out.append(["lost datagrams", f"{obj['lost_datagrams']} of {obj['total_datagrams']}"])
        out.append(["jitter", _num(obj["jitter_ms"], "ms", 3)])
    if obj["error"]:
        out.append(["error", obj["error"]])
    return out


def _ethtool_rows(obj: dict[str, Any]) -> list[list[str]]:
    counters: dict[str, int] = obj["counters"]
    errors = [f"{name} {counters[name]}" for name in ERROR_COUNTERS if counters.get(name)]
    return [["counters", str(len(counters))], ["error counters above 0", ", ".join(errors) or "none"]]


def _table(obj: dict[str, Any]) -> Table:
    """A short table per file: the figures a person looks for first, units in the text."""
    tool = obj["tool"]
    if tool in ("nccl-tests", "perftest", "iperf3", "ethtool-stats"):
        rows = {
            "nccl-tests": _nccl_rows,
            "perftest": _perftest_rows,
            "iperf3": _iperf3_rows,
            "ethtool-stats": _ethtool_rows,
        }[tool](obj)
        columns = ["figure", "value"]
    elif tool == "ibdev2netdev":
        columns = ["RDMA device", "port", "netdev", "state"]
        rows = [[d["rdma_device"], str(d["port"]), d["netdev"], d["state"] or "-"] for d in obj["devices"]]
    elif tool == "ibv_devinfo":
        columns = ["hca_id", "port", "state", "link layer", "active MTU", "firmware"]
        rows = [
            [d["hca_id"], str(p["port"]), p["state"] or "-", p["link_layer"] or "-",
             _num(p["active_mtu_bytes"], "B", 0), d["fw_ver"] or "-"]
            for d in obj["devices"]
            for p in d["ports"]
        ]  # fmt: skip
    elif tool == "show_gids":
        columns = ["device", "port", "index", "GID", "IPv4", "version", "netdev"]
        rows = [
            [g["rdma_device"], str(g["port"]), str(g["index"]), g["gid"], g["ipv4"] or "", g["roce_version"] or "",
             g["netdev"] or ""]
            for g in obj["gids"]
        ]  # fmt: skip
    else:
        columns = ["link", "state", "physical state", "netdev"]
        rows = [
            [f"{link['rdma_device']}/{link['port'] if link['port'] is not None else '-'}", link["state"] or "-",
             link["physical_state"] or "-", link["netdev"] or "-"]
            for link in obj["links"]
        ]  # fmt: skip
    table = Table(*columns)
    for row in rows:
        table.add_row(*row)
    return table


def _show(out: Output, obj: dict[str, Any], json_mode: bool) -> None:
    if json_mode:
        out.env.stdout.write(json.dumps(obj) + "\n")  # JSON Lines: one object per file, one line each
    else:
        out.console.print(f"{obj['file']}: {obj['tool']} ({obj['source_format']})", markup=False, style="bold")
        out.console.print(_table(obj))


# --------------------------------------------------------------------------------------------------- command


@click.command("import", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--into",
    "run_dir",
    type=click.Path(path_type=Path),
    default=None,
    metavar="RUN_DIR",
    help="Also write each file's object as RUN_DIR/imported/<file stem>.<tool>.json (RUN_DIR must exist).",
)
@click.option("--json", "json_mode", is_flag=True, help="One JSON object per file and line (JSON Lines) on stdout.")
@click.pass_obj
def import_cmd(ctx: Ctx, files: tuple[Path, ...], run_dir: Path | None, json_mode: bool) -> None:
    """Read saved outputs of nccl-tests, perftest, iperf3, ethtool -S, ibdev2netdev, ibv_devinfo, show_gids and
    rdma link, told apart by their content, and show or store them in wirespeed's import format
    (docs/import-format.md). Exit status 1 when any file could not be imported."""
    out = ctx.output(json_mode)
    imported: Path | None = None
    if run_dir is not None:
        if not run_dir.is_dir():
            why = "not a directory" if run_dir.exists() else "no such directory"
            raise UsageError(f"--into {run_dir}: {why}", hint="give an existing run directory, e.g. runs/<timestamp>")
        imported = run_dir / "imported"
        try:
            imported.mkdir(exist_ok=True)
        except OSError as exc:
            raise WirespeedError(f"{imported}: cannot create it: {exc.strerror or exc}") from None
    taken: set[str] = set()
    failed = False
    for path in files:
        try:
            obj = _read(path)
        except ValueError as exc:
            failed = True
            out.message(f"wirespeed: {path}: {exc}")
            continue
        except Exception as exc:  # a parser bug must not hide the other files; --debug shows the traceback
            if ctx.debug:
                raise
            failed = True
            out.message(f"wirespeed: {path}: internal error ({type(exc).__name__}: {exc}); rerun with --debug")
            continue
        _show(out, obj, json_mode)
        if imported is not None:
            target = _target(imported, obj, taken)
            try:
                target.write_text(json.dumps(obj, indent=2) + "\n")
            except OSError as exc:
                failed = True
                out.message(f"wirespeed: {target}: cannot write it: {exc.strerror or exc}")
                continue
            if not json_mode:
                out.message(f"wirespeed: wrote {target}")
    out.env.stdout.flush()
    raise SystemExit(1 if failed else 0)
