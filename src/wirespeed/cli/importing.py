"""`wirespeed import FILE...`: bring in the tool outputs people already have. The reading and recognising is
wirespeed.core.imports.importer (pure); this module opens the files, prints one summary or JSON line per file, writes
RUN_DIR/imported/ and turns every failure into one line naming the file, so one bad file never hides the others.

Registered by wirespeed.cli.main; like every command module it takes its shared parts from wirespeed.cli.common.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from wirespeed.adapters import files as file_io
from wirespeed.cli.common import CONTEXT, Ctx, runs_option
from wirespeed.cli.output import Output
from wirespeed.core.errors import ExitStatus, UsageError
from wirespeed.core.imports import imported, importer
from wirespeed.core.imports.nccl_tests import NcclTests
from wirespeed.core.imports.pasted import Paste, PastedOutput, PasteSkipped
from wirespeed.core.imports.rdma_tools import Ibdev2netdev
from wirespeed.core.imports.record import ImportObject

# --------------------------------------------------------------------------------------------------- reading


def _read(path: Path) -> ImportObject:
    """One file's public object; ValueError with the one line to show otherwise (the file name is added later).
    Only a regular file of at most importer.MAX_IMPORT_BYTES is read: a FIFO or a device is refused at once."""
    from wirespeed.adapters import files

    data = files.read_bytes(path, importer.MAX_IMPORT_BYTES, too_large=importer.TOO_LARGE_HINT)
    return importer.import_text(importer.decode(data), str(path))


def _shown(path: Path) -> str:
    """A file name for a one-line message: as given, or quoted when it holds a newline or another control character."""
    return str(path) if str(path).isprintable() else repr(str(path))


def _target(folder: Path, obj: ImportObject, taken: set[str]) -> Path:
    """RUN_DIR/imported/<stem>.<tool>.json; a second file with the same stem in one call gets `-2`, `-3`, ..."""
    name = importer.output_name(obj.file or "", obj.tool)
    stem, suffix = name.removesuffix(f".{obj.tool}.json"), f".{obj.tool}.json"
    count = 1
    while name in taken:
        count += 1
        name = f"{stem}-{count}{suffix}"
    taken.add(name)
    return folder / name


# --------------------------------------------------------------------------------------------------- showing


def _table(obj: ImportObject) -> Table:
    columns, rows = imported.summary(obj)
    table = Table(*columns)
    for row in rows:
        table.add_row(*row)
    return table


def _show(out: Output, obj: ImportObject, json_mode: bool) -> None:
    if json_mode:
        out.env.stdout.write(json.dumps(obj.to_json()) + "\n")  # JSON Lines: one object per file, one line each
    else:
        out.console.print(f"{obj.file}: {obj.tool} ({obj.body.source_format})", markup=False, style="bold")
        out.console.print(_table(obj))


_SKIPPED_SHOWN = 5  # warning lines per file; --json lists every skipped line
_SKIPPED_TEXT = 80  # characters of a skipped line's text shown


def _warn_skipped(out: Output, obj: ImportObject) -> None:
    """One warning per line the import read past (prompts, comments, notes beside ibdev2netdev mappings), so that a
    mapping lost in a mangled paste is seen: `FILE: line N skipped (no mapping in it): TEXT`."""
    body = obj.body
    skipped = [
        (item.line, item.text, item.why if isinstance(item, PasteSkipped) else None)
        for item in (body.skipped_lines if isinstance(body, Ibdev2netdev | PastedOutput | Paste) else ())
    ]
    for line, text, why in skipped[:_SKIPPED_SHOWN]:
        if len(text) > _SKIPPED_TEXT:
            text = text[: _SKIPPED_TEXT - 3] + "..."
        out.warn(f"{obj.file}: line {line} skipped ({why or 'no mapping in it'}): {text}")
    if len(skipped) > _SKIPPED_SHOWN:
        more = len(skipped) - _SKIPPED_SHOWN
        out.warn(f"{obj.file}: {more} more line{'s' if more != 1 else ''} skipped (--json lists them all)")
    implausible = body.implausible if isinstance(body, NcclTests) else ()  # figures left out, the table kept
    for why in implausible[:_SKIPPED_SHOWN]:
        out.warn(f"{obj.file}: {why}")
    if len(implausible) > _SKIPPED_SHOWN:
        more = len(implausible) - _SKIPPED_SHOWN
        out.warn(f"{obj.file}: {more} more figure{'s' if more != 1 else ''} left out (--json lists them all)")


# --------------------------------------------------------------------------------------------------- command


@click.command("import", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--into",
    "into",
    default=None,
    metavar="RUN",
    help="Also keep each file's object beside a run (a name `wirespeed runs` prints, a path, `latest` or "
    "`baseline`), as RUN/imported/<file stem>.<tool>.json: evidence in its report, never one of its rungs.",
)
@runs_option
@click.option("--json", "json_mode", is_flag=True, help="One JSON object per file and line (JSON Lines) on stdout.")
@click.pass_obj
def import_cmd(ctx: Ctx, files: tuple[Path, ...], into: str | None, runs_dir: Path, json_mode: bool) -> ExitStatus:
    """Read saved outputs of nccl-tests, perftest, iperf3, ethtool -S, ibdev2netdev, ibv_devinfo, show_gids and
    rdma link, and what owners paste (NCCL_DEBUG=INFO logs, dmesg/journalctl -k, lspci -vv, ip addr, ip -br
    addr/link, ethtool IFACE, ethtool --show-fec, nvidia-smi topo -m; several per file after prompts), told apart by
    their content, and show or store them in wirespeed's import format (docs/import-format.md). Exit status 1 when
    any file could not be imported."""
    out = ctx.output(json_mode)
    imported_dir: Path | None = None
    if into is not None:
        from wirespeed.engine.runs import resolve_run

        try:
            imported_dir = resolve_run(runs_dir, into) / "imported"
        except UsageError as exc:
            raise UsageError(f"--into {exc.message}", hint=exc.hint) from None
        file_io.ensure_dir(imported_dir, imported_dir.parent)  # a link planted as `imported` that leads out: refused
    taken: set[str] = set()
    failed = False
    for path in files:
        try:
            obj = _read(path)
        except ValueError as exc:
            failed = True
            out.message(f"wirespeed: {_shown(path)}: {exc}")
            continue
        except Exception as exc:  # a parser bug must not hide the other files; --debug shows the traceback
            if ctx.debug:
                raise
            failed = True
            out.message(f"wirespeed: {_shown(path)}: internal error ({type(exc).__name__}: {exc}); rerun with --debug")
            continue
        _show(out, obj, json_mode)
        _warn_skipped(out, obj)
        if imported_dir is not None:
            target = _target(imported_dir, obj, taken)
            try:
                file_io.write_atomic(target, json.dumps(obj.to_json(), indent=2) + "\n", root=imported_dir.parent)
            except file_io.Unwritable as exc:
                failed = True
                out.message(f"wirespeed: {exc}")
                continue
            if not json_mode:
                out.message(f"wirespeed: wrote {target}")
    out.env.stdout.flush()
    return ExitStatus.FINDING if failed else ExitStatus.OK
