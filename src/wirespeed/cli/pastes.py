"""`wirespeed check --pastes FILE...`: the checks run on what people paste when they ask for help (NCCL INFO logs,
dmesg, lspci -vv, ip addr, ethtool, nvidia-smi topo -m), not on live nodes. The reading and the facts are
wirespeed.core.imports.pastes (pure); this module opens the files, runs every check the facts allow, and says in
one line per check which had nothing to read, and which lines of each file were read past.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from wirespeed.cli.common import Ctx
from wirespeed.cli.output import Output
from wirespeed.core.checks.model import SEVERITY_ORDER, CheckResult, CheckRun
from wirespeed.core.errors import ExitStatus, WirespeedError
from wirespeed.core.fabric import gdr
from wirespeed.core.imports import importer, pastes
from wirespeed.core.parsers.paste import SkippedLine

_SHOWN = 5  # skipped lines shown per file; --json lists them all
PASTE_METHOD = "address plan from the pasted addresses (interfaces on one subnet taken as linked)"
DEFAULT_NODE = "pasted"


def _read(path: Path) -> str:
    from wirespeed.adapters import files

    try:
        data = files.read_bytes(path, importer.MAX_IMPORT_BYTES, too_large=importer.TOO_LARGE_HINT)
        return importer.decode(data)
    except ValueError as exc:  # files.Unreadable, or binary data
        raise WirespeedError(f"{path}: {exc}", hint="give the pasted outputs as text files") from None


def _nodes(readings: list[pastes.Reading]) -> list[pastes.Reading]:
    """Where no output in any file names its host, every file is one node's (`pasted`); else an output that names
    none belongs to its file (named by its stem)."""
    named = any(r.host for r in readings) or any(
        r.kind == "nccl-info" and any(h.host for h in r.parsed.hosts) for r in readings
    )
    return [r if r.host or not named else replace(r, host=Path(r.file).stem or DEFAULT_NODE) for r in readings]


def _say_read(out: Output, reading: pastes.Reading, node: str) -> None:
    if reading.kind is None:
        return
    if reading.kind == "nccl-info":
        node = ", ".join(sorted({h.host or node for h in reading.parsed.hosts}))
    command = f" (`{reading.command}`)" if reading.command else ""
    out.message(f"wirespeed: {reading.file}:{reading.first_line}: {pastes.KIND_NAMES[reading.kind]}{command}, {node}")


def _say_skipped(out: Output, file: str, skipped: list[SkippedLine]) -> None:
    for item in skipped[:_SHOWN]:
        text = item.text if len(item.text) <= 80 else item.text[:77] + "..."
        out.message(f"wirespeed: {file}:{item.line}: skipped ({item.why}): {text}")
    if len(skipped) > _SHOWN:
        more = len(skipped) - _SHOWN
        out.message(f"wirespeed: {file}: {more} more line{'s' if more != 1 else ''} skipped (--json lists them all)")


_LINK_LOCAL = ": a link-local GID, the interface has no IPv4 address for RoCE v2"


def _fe80(address: str) -> bool:
    return address.startswith("fe80:")


def _nccl_lines(found: pastes.PasteFacts, where: Mapping[int, str | None] | None = None) -> list[str]:
    """What the NCCL logs said per host: transport, HCAs, GID index per HCA, GPUDirect RDMA, channels; then what
    GPUDirect RDMA's state means on the host's platform (`where`, by the host record's id: gdr.UNIFIED where its
    paste named a GB10, else unknown)."""
    lines = []
    for node, hosts in sorted(found.nccl.items()):
        for host in hosts:
            parts = [
                f"NCCL {host.version}" if host.version else None,
                host.transport,
                ", ".join(host.hcas) if host.hcas else None,
                ", ".join(
                    f"{g.device} GID {g.index}"
                    + (f" ({g.address}{_LINK_LOCAL * _fe80(g.address)})" if g.address else "")
                    for g in host.gids
                )
                or None,
                None if host.gdr is None else f"GDR {1 if host.gdr else 0}",
                f"{host.channels} channels" if host.channels else None,
            ]
            said = "; ".join(p for p in parts if p)
            if said:
                lines.append(f"{node}: {said}")
            verdict = gdr.explain_hosts([host], (where or {}).get(id(host)))
            if verdict is not None:
                lines.append(f"{node}: {verdict.line}")
    return lines


def _run(built: pastes.PasteFacts, plan: pastes.CheckPlan) -> CheckRun:
    """Each check on the nodes whose pastes hold what it reads, as one run."""
    from wirespeed.core.fabric.cabling import build_map, edges_from_addresses
    from wirespeed.core.fabric.discovery import Discovery
    from wirespeed.engine import checks

    by_nodes: dict[tuple[str, ...], list[str]] = {}
    for check_id, nodes in plan.runnable:
        by_nodes.setdefault(nodes, []).append(check_id)
    results: list[CheckResult] = []
    errors: list[str] = []
    for nodes, ids in by_nodes.items():
        facts = {node: built.facts[node] for node in nodes}
        run = checks.run_checks(Discovery(facts, build_map(facts, edges_from_addresses(facts), PASTE_METHOD)), ids)
        results += run.results
        errors += run.errors
    results.sort(key=lambda r: (SEVERITY_ORDER[r.status], r.id))
    everything = Discovery(dict(built.facts), build_map(built.facts, edges_from_addresses(built.facts), PASTE_METHOD))
    return CheckRun(results, everything, errors)


def check_pastes(ctx: Ctx, files: tuple[Path, ...], ids: list[str], json_mode: bool) -> ExitStatus:
    from wirespeed.ui.checks import check_report

    out = ctx.output(json_mode)
    readings: list[pastes.Reading] = []
    between: dict[str, list[SkippedLine]] = {}
    for path in files:
        found, skipped = pastes.read_text(_read(path), str(path))
        readings += found
        between[str(path)] = skipped
    readings = _nodes(readings)
    known = [r for r in readings if r.kind is not None]
    if not known:
        kinds = ", ".join(pastes.KIND_NAMES.values())
        raise WirespeedError("nothing in the pastes that wirespeed reads", hint=f"paste the output of {kinds}")
    built = pastes.build_facts(known, DEFAULT_NODE)
    plan = pastes.plan_checks(ids, built.areas)
    run = _run(built, plan)
    skipped_by_file = {
        file: sorted(between[file] + [s for r in readings if r.file == file for s in r.skipped], key=lambda s: s.line)
        for file in between
    }
    if json_mode:
        data: dict[str, Any] = run.to_json()
        data["pastes"] = [
            {
                "file": r.file,
                "line": r.first_line,
                "kind": r.kind,
                "command": r.command,
                "node": r.host or DEFAULT_NODE,
                **(pastes.body(r).to_json() if r.kind else {}),
            }
            for r in readings
        ]
        data["nothing_to_read"] = [{"check": c, "needs": needs} for c, needs in plan.nothing_to_read]
        data["skipped_lines"] = {
            file: [s.to_json() for s in pastes.skipped_records(lines)] for file, lines in skipped_by_file.items()
        }
        out.data(data)
        return run.exit_status
    for reading in known:
        _say_read(out, reading, reading.host or DEFAULT_NODE)
    for file, lines in skipped_by_file.items():
        _say_skipped(out, file, [s for s in lines if s.why != "prompt"])
    # nccl-tests' `#  Rank  0 ... NVIDIA GB10` lines (read past, not NCCL's) say which GPU a file's logs ran on
    by_file = {file: gdr.platform_in_text("\n".join(s.text for s in lines)) for file, lines in skipped_by_file.items()}
    where = {id(h): by_file.get(r.file) for r in known if r.kind == "nccl-info" for h in r.parsed.hosts}
    for line in _nccl_lines(built, where):
        out.message(f"wirespeed: {line}")
    for node, settings in sorted(built.fec.items()):
        for iface, setting in sorted(settings.items()):
            out.message(
                f"wirespeed: {node} {iface}: FEC active {' '.join(setting.active) or '?'}, "
                f"configured {' '.join(setting.configured) or '?'}"
            )
    out.console.print(check_report(run))
    for check_id, needs in plan.nothing_to_read:
        out.console.print(f"nothing to read: {check_id} (needs {needs})", markup=False, highlight=False)
    return run.exit_status
