"""Discovery across the cluster: every node's facts (through `wirespeed agent facts` on it), the active
cabling probe on every fabric half at once, and the cabling map; or the same from snapshots, offline."""

from __future__ import annotations

import base64
import io
import json
import os
import secrets
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wirespeed.adapters import files
from wirespeed.adapters.source import SnapshotSource
from wirespeed.adapters.source import archive as pack_snapshot
from wirespeed.core.cluster.become import HOW
from wirespeed.core.errors import WirespeedError
from wirespeed.core.fabric.cabling import (
    Heard,
    build_map,
    edges_from_addresses,
    edges_from_probe,
)
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import NEEDS_ROOT, NodeFacts, facts_from_json
from wirespeed.engine.collect import collect
from wirespeed.engine.remote import Remote, ensure_agents

PROBE_METHOD = "active probe (L2 broadcast on every fabric half)"
ADDRESS_METHOD = "address plan (no active probe: interfaces on one subnet taken as linked)"
MAX_PROBE_BYTES = 16 * 2**20  # probe.json is kilobytes


FACTS_TIMEOUT_S = 40.0  # reading a node's facts takes seconds (nvidia-smi, the tools' versions): an agent silent
# this long is not answering


def _parse_json(text: str, what: str) -> dict[str, Any]:
    if not text.strip():
        raise WirespeedError(f"{what}: the agent answered nothing")
    try:
        data = json.loads(text)
    except ValueError as exc:
        seen = text.strip()[:60]
        raise WirespeedError(f"{what}: the agent did not answer in JSON ({exc}): it said {seen!r}") from None
    if not isinstance(data, dict):
        raise WirespeedError(f"{what}: the agent answered something other than a JSON object")
    return data


def gather_facts(remote: Remote, timeout_s: float = FACTS_TIMEOUT_S) -> tuple[dict[str, NodeFacts], dict[str, str]]:
    """Every node's facts as the user who logs in reads them; with --become, what only root may read (the kernel
    log, the firewall) read again through sudo and laid over them."""
    results = remote.run_all(lambda n: [*remote.agent_argv(n), "agent", "facts", "--node", n.name], timeout_s=timeout_s)
    facts: dict[str, NodeFacts] = {}
    errors: dict[str, str] = {}
    for result in results:
        if not result.ok:
            errors[result.node] = result.message + (f" (hint: {result.hint})" if result.hint else "")
            continue
        try:
            facts[result.node] = facts_from_json(_parse_json(result.stdout, result.node))
        except WirespeedError as exc:  # it names the node
            errors[result.node] = str(exc)
        except (TypeError, KeyError, ValueError) as exc:  # a field of the wrong type names itself
            errors[result.node] = f"{result.node}: {exc}"
    if remote.become is not None and facts:
        _as_root(remote, facts, errors, timeout_s)
    return facts, errors


def _as_root(remote: Remote, facts: dict[str, NodeFacts], errors: dict[str, str], timeout_s: float) -> None:
    nodes = [n for n in remote.cluster.nodes if n.name in facts and facts[n.name].privileged is not True]
    results = remote.run_all(lambda n: [*remote.agent_argv(n), "agent", "facts", "--node", n.name, "--root-parts"],
                             nodes=nodes, timeout_s=timeout_s, privileged=True)  # fmt: skip
    for result in results:
        if not result.ok:
            errors[result.node] = result.message + (f" (hint: {result.hint})" if result.hint else "")
            continue
        try:
            parts = _parse_json(result.stdout, result.node)
            over = facts_from_json({**facts[result.node].to_json(), **parts})
        except (WirespeedError, TypeError, KeyError, ValueError) as exc:
            errors[result.node] = f"{result.node}: {exc}"
            continue
        facts[result.node] = over


def run_probe(
    remote: Remote, facts: dict[str, NodeFacts], duration_s: float = 2.0
) -> tuple[list[Heard], dict[str, dict[str, str]], dict[str, list[dict[str, str]]]]:
    """All nodes beacon and listen at once; returns what was heard, per-interface errors, and raw results."""
    token = secrets.token_hex(8)
    nodes = [n for n in remote.cluster.nodes if n.name in facts and facts[n.name].fabric]
    results = remote.run_all(
        lambda n: [
            *remote.agent_argv(n),
            "agent",
            "probe",
            "--node",
            n.name,
            "--ifaces",
            ",".join(facts[n.name].fabric),
            "--duration",
            str(duration_s),
            "--token",
            token,
        ],
        nodes=nodes,
        timeout_s=duration_s + 60,
        privileged=True,
    )
    heard: list[Heard] = []
    errors: dict[str, dict[str, str]] = {}
    raw: dict[str, list[dict[str, str]]] = {}
    for result in results:
        if not result.ok:
            closed = "needs root" in result.stderr and remote.become is None
            errors[result.node] = {"*": f"{result.node}: {NEEDS_ROOT}" if closed else result.message}
            continue
        try:
            data = _parse_json(result.stdout, result.node)
        except WirespeedError as exc:  # this node's probe cannot be read; the others' still count
            errors[result.node] = {"*": str(exc)}
            continue
        raw[result.node] = data.get("heard", [])
        if data.get("errors"):
            errors[result.node] = dict(data["errors"])
        heard += [
            Heard(result.node, h["rx_iface"], h["from_node"], h["from_iface"], h.get("from_mac"))
            for h in raw[result.node]
        ]
    return heard, errors, raw


def discover_live(remote: Remote, *, probe: bool = True, duration_s: float = 2.0) -> Discovery:
    ensure_agents(remote)  # every node runs this controller's wirespeed (shipped once where it is missing)
    facts, errors = gather_facts(remote)
    if probe and len(facts) > 1:
        heard, probe_errors, _ = run_probe(remote, facts, duration_s)
        closed = sorted(node for node, why in probe_errors.items() if NEEDS_ROOT in " ".join(why.values()))
        if not closed:
            return Discovery(facts, build_map(facts, edges_from_probe(heard), PROBE_METHOD), errors, probe_errors)
        # Raw frames need root: without it, pairing by subnet is the best there is, and the user is told so.
        said = f"the cabling probe needs root on {', '.join(closed)} ({HOW}): cabling taken from the address plan"
        if remote.say is not None:
            remote.say(said)
        method = f"{ADDRESS_METHOD}; {said}"
        return Discovery(facts, build_map(facts, edges_from_addresses(facts), method), errors, probe_errors)
    return Discovery(facts, build_map(facts, edges_from_addresses(facts), ADDRESS_METHOD), errors)


# ------------------------------------------------------------------------------------------------- snapshots
def snapshot_dirs(paths: list[Path], workdir: Path) -> list[Path]:
    """Expand --snapshot arguments: a node snapshot, a directory of them, or NODE.tar.gz files."""
    found: list[Path] = []
    for path in paths:
        if path.is_file() and path.name.endswith((".tar.gz", ".tgz")):
            target = workdir / path.name.removesuffix(".tar.gz").removesuffix(".tgz")
            try:
                with tarfile.open(path) as archive:
                    archive.extractall(target, filter="data")
            except (OSError, tarfile.TarError) as exc:
                raise WirespeedError(f"{path}: cannot unpack snapshot: {exc}") from None
            found += snapshot_dirs([target], workdir) if not (target / "meta.json").exists() else [target]
        elif (path / "meta.json").is_file():
            found.append(path)
        elif path.is_dir():
            children = sorted(p for p in path.iterdir() if (p / "meta.json").is_file() or p.name.endswith(".tar.gz"))
            if not children:
                raise WirespeedError(
                    f"{path}: no snapshot here (no meta.json)", hint="give the path `snapshot -o` wrote"
                )
            found += snapshot_dirs(children, workdir)
        else:
            raise WirespeedError(f"{path}: no such snapshot", hint="give a snapshot directory or NODE.tar.gz")
    return found


def _probe_heard(node: str, directory: Path) -> list[Heard]:
    """What the node's probe heard, from probe.json in its snapshot: an object whose `heard` is a list of objects
    naming the interfaces; WirespeedError naming the file otherwise (never read through a link leaving it)."""
    probe_file = directory / "probe.json"
    try:
        data = files.load_json(probe_file, MAX_PROBE_BYTES, expect=dict, root=directory)
    except files.Unreadable as exc:
        raise WirespeedError(f"{probe_file}: {exc}", hint="take the snapshot again with `wirespeed snapshot`") from None
    heard: list[Heard] = []
    entries = data.get("heard", [])
    for index, h in enumerate(entries if isinstance(entries, list) else [entries]):
        names = ("rx_iface", "from_node", "from_iface")
        if not isinstance(h, dict) or not all(isinstance(h.get(key), str) for key in names):
            raise WirespeedError(f"{probe_file}: heard[{index}]: not an object naming rx_iface, from_node and "
                                 "from_iface", hint="take the snapshot again with `wirespeed snapshot`")  # fmt: skip
        mac = h.get("from_mac")
        heard.append(Heard(node, h["rx_iface"], h["from_node"], h["from_iface"], mac if isinstance(mac, str) else None))
    return heard


def discover_snapshots(paths: list[Path], say: Callable[[str], None] | None = None) -> Discovery:
    """Discovery read from snapshots; `say` hears one line per snapshot file not read (a link leaving it)."""
    with tempfile.TemporaryDirectory(prefix="wirespeed-snap-") as work:
        facts: dict[str, NodeFacts] = {}
        heard: list[Heard] = []
        probed = True
        for directory in snapshot_dirs(paths, Path(work)):
            try:
                source = SnapshotSource(directory)
            except ValueError as exc:
                raise WirespeedError(str(exc), hint="take one with `wirespeed snapshot -o PATH`") from None
            if source.node in facts:
                raise WirespeedError(f"{directory}: node {source.node!r} given twice")
            facts[source.node] = collect(source, source.node)
            if os.path.lexists(directory / "probe.json"):
                heard += _probe_heard(source.node, directory)
            else:
                probed = False
            for line in source.refused:
                if say is not None:
                    say(line)
    if probed and len(facts) > 1:
        return Discovery(facts, build_map(facts, edges_from_probe(heard), PROBE_METHOD + ", recorded in the snapshot"))
    return Discovery(facts, build_map(facts, edges_from_addresses(facts), ADDRESS_METHOD))


def take_snapshots(
    remote: Remote, out: Path, *, probe: bool = True, tar: bool = False
) -> tuple[list[Path], dict[str, str]]:
    """Each node records what discovery reads into a snapshot; the probe's result is stored beside it."""
    out.mkdir(parents=True, exist_ok=True)
    ensure_agents(remote)
    results = remote.run_all(lambda n: [*remote.agent_argv(n), "agent", "snapshot", "--node", n.name], timeout_s=120)
    written: list[Path] = []
    errors: dict[str, str] = {}
    facts: dict[str, NodeFacts] = {}
    for result in results:
        if not result.ok:
            errors[result.node] = result.message
            continue
        data = _parse_json(result.stdout, result.node)
        blob = base64.b64decode(data["tar_gz_b64"])
        target = out / result.node
        try:  # the data filter refuses members (or links already in `out`) that would land outside it
            with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as packed_node:
                packed_node.extractall(out, filter="data")
        except (OSError, tarfile.TarError) as exc:
            raise WirespeedError(f"{target}: cannot write the snapshot: {exc}",
                                 hint="-o an empty directory of your own") from None  # fmt: skip
        written.append(target)
        try:
            facts[result.node] = facts_from_json(data.get("facts"))
        except ValueError as exc:  # the snapshot is written; its facts are left out of the probe
            errors[result.node] = f"{result.node}: the agent's facts not read ({exc})"
    if probe and len(facts) > 1:
        _, probe_errors, raw = run_probe(remote, facts)
        for node, heard in raw.items():
            files.write_atomic(out / node / "probe.json",
                               json.dumps({"heard": heard, "errors": probe_errors.get(node, {})}, indent=2),
                               root=out / node)  # fmt: skip
    if tar:
        packed = []
        for path in written:
            packed.append(pack_snapshot(path, out / f"{path.name}.tar.gz"))
            shutil.rmtree(path)
        written = packed
    return written, errors
