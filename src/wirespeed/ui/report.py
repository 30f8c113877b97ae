"""A run's report as Markdown (to paste into an issue or a wiki) and as one self-contained HTML file (styles and
plots inline, no scripts, nothing fetched when it is opened). Both in the order a person reads: the takeaway
first, then every rung with its ceiling and evidence, the checks, the discovery and cabling, the environment.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from html import escape
from typing import Any

from wirespeed import __version__
from wirespeed.core.checks.model import ChecksRecord, Evidence
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.timeline import CableSeries, RungSpan, Timeline
from wirespeed.core.fabric.units import format_size_bytes
from wirespeed.core.imports.imported import summary
from wirespeed.core.imports.record import ImportObject
from wirespeed.core.records.matrix import MatrixResult, relayed_lines
from wirespeed.core.records.report import RunReport, collectives, halves
from wirespeed.core.records.results import BITS_PER_BYTE, RungResult, RungStatus
from wirespeed.core.records.tune import TuneResult, label, spread
from wirespeed.ui import svg, takeaway
from wirespeed.ui.discovery import cabling_diagram, node_summary

NETDEV_NOTE = "kernel netdev counters: RDMA traffic is not in them (no PHY counters on these interfaces)"


# ------------------------------------------------------------------------------------------------ shared pieces


def _gbps(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} Gb/s"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _figures(rung: RungResult) -> list[tuple[str, str]]:
    """The rung's headline figures with their units and what they mean."""
    shown = [
        ("per direction (forward)", _gbps(rung.forward_gbps) if not rung.latency or rung.flows else "-"),
        ("reverse", _gbps(rung.reverse_gbps) if rung.collective is None else "-"),
        ("full duplex (both directions added)", _gbps(rung.duplex_gbps)),
        ("latency p50, one way (median of the halves)", "-" if rung.p50_us is None else f"{rung.p50_us:.2f} us"),
        ("latency p99, one way (worst half)", "-" if rung.p99_us is None else f"{rung.p99_us:.2f} us"),
    ]
    if rung.duration_s is not None:
        shown.append(("ran for", f"{rung.duration_s:.1f} s"))
    return [(k, v) for k, v in shown if v != "-"]


def _collective_rows(rung: RungResult) -> list[list[str]]:
    if rung.collective is None:
        return []
    return [
        [format_size_bytes(row.size_bytes), _num(row.time_us, 1), _num(row.algbw_GBps), _num(row.busbw_GBps),
         _num(row.busbw_GBps * BITS_PER_BYTE)]
        for row in rung.collective.rows
    ]  # fmt: skip


COLLECTIVE_COLUMNS = ("size", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "busbw per direction (Gb/s)")
LATENCY_COLUMNS = ("half", "tool", "message", "p50 (us)", "p99 (us)", "p99.9 (us)", "min (us)", "max (us)")


def _latency_rows(rung: RungResult) -> list[list[str]]:
    return [
        [x.flow.label(), x.tool, f"{x.message_bytes} B", _num(x.p50_us), _num(x.p99_us), _num(x.p999_us),
         _num(x.min_us), _num(x.max_us)]
        for x in rung.latency
    ]  # fmt: skip


def _collective_facts(rung: RungResult) -> list[tuple[str, str]]:
    c = rung.collective
    if c is None:
        return []
    shown = [
        ("collective", c.collective or "-"),
        ("ranks", str(c.ranks or "-")),
        ("transport", c.transport or "-"),
        ("GPUDirect RDMA", c.gdr_note or {True: "yes", False: "no", None: "-"}[c.gdr]),
        ("socket interfaces", ", ".join(c.socket_interfaces) or "-"),
        ("RDMA devices", ", ".join(c.ib_devices) or "-"),
        ("NCCL", c.nccl_version or "-"),
        ("figures from", c.source or "-"),
    ]
    if (peak := c.peak) is not None:
        shown.append(("peak busbw", f"{peak.busbw_GBps:.2f} GB/s at {format_size_bytes(peak.size_bytes)}"))
    return [(k, v) for k, v in shown if v != "-"]


def _wire_rows(rung: RungResult) -> list[list[str]]:
    tx, rx = rung.wire.tx_gbps, rung.wire.rx_gbps
    return [[f"{n}:{i}", _gbps(tx.get((n, i))), _gbps(rx.get((n, i)))] for n, i in sorted(set(tx) | set(rx))]


def _cpu_text(rung: RungResult) -> str:
    busiest, average = rung.wire.busiest_core, rung.wire.cpu_average
    parts = []
    for node in sorted(set(busiest) | set(average)):
        core = busiest.get(node)
        text = f"{node}: busiest core " + (f"{core[0]} at {core[1]:.0f}%" if core is not None else "-")
        if node in average:
            text += f", all cores {average[node]:.0f}%"
        parts.append(text)
    return "; ".join(parts)


def _errors_text(rung: RungResult) -> str:
    grown = rung.wire.errors
    return "; ".join(f"{n}:{i}: " + ", ".join(f"{k} +{v}" for k, v in c.items()) for (n, i), c in grown.items() if c)


def _takeaway_rows(report: RunReport) -> list[list[str]]:
    return [takeaway.cells(row) for row in report.takeaway]


STEP_COLUMNS = ("step", "status", "took", "what")
FIX_COLUMNS = ("node", "change", "to", "why", "done")


def _step_rows(report: RunReport) -> list[list[str]]:
    record = report.run.record
    steps = record.steps if record is not None else ()
    return [[s.name, s.status.value, _seconds(s.duration_s), s.detail] for s in steps]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _fix_rows(report: RunReport) -> list[list[str]]:
    """Each change a fix made, per node, and whether it took (rolled back, failed, or done)."""
    rows: list[list[str]] = []
    for node, outcome in sorted(report.fix.nodes.items()) if report.fix is not None else ():
        for change in outcome.applied:
            op = change.op
            done = "rolled back" if outcome.rolled_back else ("yes" if change.ok else str(change.error))
            rows.append([node, f"{op.kind} {op.target}", (op.value or "-")[:60], op.reason, done])
        if outcome.error:
            rows.append([node, "-", "-", "-", outcome.error])
    return rows


def _state_line(report: RunReport) -> str | None:
    """How the run ended, where it did not end complete, and what it did not reach."""
    run = report.run
    if run.finished:
        return None
    missing = f"; not reached: {', '.join(run.not_reached)}" if run.not_reached else ""
    return f"This run is {run.state()}{missing}. The rungs it wrote are below."


def _evidence_line(item: Evidence) -> str:
    shown = json.dumps(item.value) if not isinstance(item.value, str) else item.value
    return f"{item.node} {item.subject}: {item.what} = {shown}"


def _discovery(report: RunReport) -> Discovery | None:
    return report.discovery if report.discovery is not None and report.discovery.facts else None


def _netdev_rows(discovery: Discovery) -> list[list[str]]:
    rows: list[list[str]] = []
    for node, facts in discovery.facts.items():
        roles = {name: "fabric" for name in facts.fabric}
        if isinstance(facts.management, str):
            roles[facts.management] = "management"
        for name, role in roles.items():
            netdev = facts.netdev(name)
            if netdev is None:
                continue
            speed, mtu = netdev.speed_mbps, netdev.mtu
            rows.append(
                [
                    node,
                    name,
                    role,
                    netdev.operstate if isinstance(netdev.operstate, str) else "-",
                    "yes" if netdev.carrier is True else "no",
                    f"{speed / 1000:g} Gb/s" if isinstance(speed, int) else "-",
                    str(mtu) if isinstance(mtu, int) else "-",
                    ", ".join(netdev.ipv4) or "-",
                    ", ".join(netdev.rdma_devices) or "-",
                ]
            )
    return rows


NETDEV_COLUMNS = ("node", "interface", "role", "state", "carrier", "speed", "MTU", "IPv4", "RDMA device")


def _segments(
    points: Sequence[tuple[float, float | None]], spans: Sequence[RungSpan]
) -> list[list[tuple[float, float]]]:
    """Split a series at rung boundaries and at missing values, so no line is drawn across a gap."""
    segments: list[list[tuple[float, float]]] = []
    current: list[tuple[float, float]] = []
    span_of = None
    for t, value in points:
        here = next((i for i, s in enumerate(spans) if s.start_s <= t <= s.end_s), None)
        if value is None or here != span_of:
            if current:
                segments.append(current)
            current = []
            span_of = here
        if value is not None:
            current.append((t, value))
    if current:
        segments.append(current)
    return segments


def _markers(timeline: Timeline) -> list[svg.Marker]:
    return [svg.Marker(s.rung, s.start_s, s.end_s) for s in timeline.spans]


def throughput_charts(timeline: Timeline) -> list[str]:
    """Per node: TX (solid) and RX (dashed) per cable over the run, rung spans shaded, the line rate marked."""
    charts: list[str] = []
    by_node: dict[str, list[CableSeries]] = {}
    for series in timeline.cables:
        by_node.setdefault(series.node, []).append(series)
    for node, cables in by_node.items():
        lines: list[svg.Line] = []
        for index, cable in enumerate(cables):
            tx = [(p.t_s, p.tx_gbps) for p in cable.points]
            rx = [(p.t_s, p.rx_gbps) for p in cable.points]
            lines.append(svg.Line(f"{cable.cable} TX", _segments(tx, timeline.spans), svg.color(index)))
            lines.append(svg.Line(f"{cable.cable} RX", _segments(rx, timeline.spans), svg.color(index), dashed=True))
        rates = {c.line_rate_gbps for c in cables if c.line_rate_gbps is not None}
        levels = [svg.Level(f"line rate {rate:g} Gb/s per direction", rate) for rate in sorted(rates)]
        axes = svg.Axes("seconds since the run started", "Gb/s", markers=_markers(timeline), levels=levels)
        charts.append(svg.line_chart(f"{node}: throughput per cable at the wire", lines, axes))
    return charts


def cpu_chart(timeline: Timeline) -> str:
    lines: list[svg.Line] = []
    for index, (node, points) in enumerate(timeline.cpu.items()):
        average = [(p.t_s, p.average_pct) for p in points]
        busiest = [(p.t_s, p.busiest_pct) for p in points]
        lines.append(svg.Line(f"{node} all cores", _segments(average, timeline.spans), svg.color(index)))
        lines.append(svg.Line(f"{node} busiest core", _segments(busiest, timeline.spans), svg.color(index), True))
    axes = svg.Axes("seconds since the run started", "CPU busy %", markers=_markers(timeline))
    return svg.line_chart("CPU per node (busiest core dashed: one saturated core caps a TCP flow)", lines, axes)


def busbw_chart(report: RunReport) -> str | None:
    found = collectives(report.rungs)
    if not found:
        return None
    lines = [
        svg.Line(rung, [[(float(size), busbw) for size, busbw in points]], svg.color(index))
        for index, (rung, points) in enumerate(found)
    ]
    levels = []
    first = report.nodes[0] if report.nodes else None
    rates = [c.line_rate_gbps for c in report.timeline.cables if c.node == first and c.line_rate_gbps]
    if rates:
        wire = sum(r for r in rates if r is not None) / 8
        levels.append(svg.Level(f"wire per direction {wire:.2f} GB/s ({first}, all cables)", wire))
    axes = svg.Axes("message size (bytes, log scale)", "busbw (GB/s)", x_log2=True, x_format="bytes", levels=levels)
    return svg.line_chart("NCCL bus bandwidth against message size", lines, axes)


def halves_chart(rung: RungResult) -> str | None:
    bars = halves(rung)
    if not bars or all(b.gbps is None for b in bars):
        return None
    items = [svg.Bar(b.label, b.gbps, b.line_rate_gbps) for b in bars]
    return svg.bar_chart(f"{rung.label}: each half, as its receiver counted it", items, "Gb/s")


# ----------------------------------------------------------------------------------------------------- Markdown


def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(_md_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def markdown(report: RunReport) -> str:
    out = [f"# wirespeed report: run {report.name}", ""]
    out += [f"Nodes: {', '.join(report.nodes) or 'unknown'}. wirespeed {__version__}.", ""]
    out += ["## Takeaway", "", f"**{report.headline()}**", ""]
    if state := _state_line(report):
        out += [state, ""]
    if pairs := report.before_after:
        measured, skipped = takeaway.measured_and_skipped(pairs)
        out += ["Every rung before and after the fixes (the other columns: after).", ""]
        out += _md_table(takeaway.PHASE_COLUMNS, [takeaway.phase_cells(row) for row in measured])
        out += [*(f"- {line.strip()}" for line in takeaway.spread_notes(measured)), ""]
        out += [*(f"- {line}" for line in skipped), ""] if skipped else []
    elif report.rungs:
        out += _md_table(takeaway.COLUMNS, _takeaway_rows(report))
    if steps := _step_rows(report):
        out += ["## Steps", "", *_md_table(STEP_COLUMNS, steps)]
    if fixes := _fix_rows(report):
        out += ["## Fixes", "", *_md_table(FIX_COLUMNS, fixes)]
    out += ["## Rungs", ""] if report.rungs else []
    for rung in report.rungs:
        out += [f"### {rung.label}: {rung.status.value}", ""]
        if rung.status is RungStatus.SKIPPED:
            out += [f"- why: {rung.reason}", f"- fix: {rung.fix or '-'}", ""]
            continue
        if rung.reason:
            out.append(f"- why: {rung.reason}")
        out += [f"- {name}: {value}" for name, value in _figures(rung)]
        if rung.ceiling is not None:
            out.append(f"- ceiling: **{rung.ceiling.name}**")
            out += [f"  - {line}" for line in rung.ceiling.evidence]
        if cpu := _cpu_text(rung):
            out.append(f"- CPU: {cpu}")
        if errors := _errors_text(rung):
            out.append(f"- error counters that grew: {errors}")
        out += [f"- {k}: {v}" for k, v in _collective_facts(rung)]
        out += [f"- note: {note}" for note in rung.notes]
        out.append("")
        if bars := halves(rung):
            out += _md_table(
                ("half", "Gb/s", "line rate (Gb/s)"), [[b.label, _num(b.gbps), _num(b.line_rate_gbps, 0)] for b in bars]
            )
        if rows := _latency_rows(rung):
            out += _md_table(LATENCY_COLUMNS, rows)
        if rows := _collective_rows(rung):
            out += _md_table(COLLECTIVE_COLUMNS, rows)
    for tune in report.run.tunes:
        out += ["## NCCL settings searched", "", tune.answer(), ""]
        out += _md_table(TUNE_COLUMNS, tune_rows(tune))
    if report.run.matrices:
        out += ["## All pairs", ""]
        for matrix in report.run.matrices:
            out += _matrix_md(matrix)
    out += ["## Checks", ""]
    if report.checks is None:
        out += ["This run did not record the checks; `wirespeed check` shows them now.", ""]
    elif report.checks_after is not None:
        after = {r.id: r for r in report.checks_after.results}
        out += _md_table(
            ("check", "before the fixes", "after", "summary (after)"),
            [[r.id, r.status.value, after[r.id].status.value if r.id in after else "-",
              after.get(r.id, r).summary] for r in report.checks.results],
        )  # fmt: skip
    else:
        out += _md_table(
            ("check", "status", "summary"), [[r.id, r.status.value, r.summary] for r in report.checks.results]
        )
    out += ["## Discovery and cabling", ""]
    discovery = _discovery(report)
    if discovery is None:
        out += ["No discovery.json in this run.", ""]
    else:
        out += _md_table(NETDEV_COLUMNS, _netdev_rows(discovery))
        out += ["```", cabling_diagram(discovery).plain.rstrip(), "```", ""]
    out += ["## Environment", ""]
    out += _md_table(("node", "component", "version"), [[e.node, e.component, e.version] for e in report.environment])
    if report.imported:
        out += ["## Imported results", ""]
        for item in report.imported:
            columns, rows = _imported_summary(item.data)
            out += [f"### {item.name} ({item.data.tool}, from {item.data.file})", ""]
            out += _md_table(columns, rows)
    if report.problems:
        out += ["## Not read", ""] + [f"- {p}" for p in report.problems] + [""]
    return "\n".join(out).rstrip() + "\n"


def _imported_summary(data: ImportObject) -> tuple[list[str], list[list[str]]]:
    try:
        return summary(data)
    except (KeyError, TypeError, IndexError, ValueError):  # read back typed, but holding what no summary shows
        return ["tool"], [[data.tool]]


# --------------------------------------------------------------------------------------------------------- HTML

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1f23;margin:24px auto;max-width:1100px;
padding:0 16px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;border-bottom:2px solid #dde3ea;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:20px 0 6px}.meta{color:#57606a;margin:0 0 16px}
.headline{font-size:16px;background:#f3f6fa;border-left:4px solid #1f77b4;padding:8px 12px}
table{border-collapse:collapse;margin:8px 0 12px;font-size:13px}th,td{border:1px solid #d0d7de;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;color:#fff;background:#57606a}
.ran,.pass{background:#1a7f37}.skipped,.skip{background:#8c959f}.failed,.fail{background:#cf222e}.warn{background:#bf8700}
.ceiling{background:#0969da}ul.evidence{margin:4px 0}pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:12px}
svg.chart{display:block;margin:8px 0;max-width:100%;height:auto;font-family:system-ui,sans-serif}
.note{color:#57606a}details summary{cursor:pointer;color:#0969da}
"""


def _h(text: Any) -> str:
    return escape(str(text))


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{_h(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if i in numeric else ''}>{_h(v)}</td>" for i, v in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _badge(text: Any, kind: str) -> str:
    return f'<span class="badge {_h(kind)}">{_h(text)}</span>'


def _rung_html(rung: RungResult) -> str:
    name, status = rung.label, rung.status.value
    parts = [
        f'<article class="rung" id="rung-{_h(rung.key.replace("/", "-"))}"><h3>{_h(name)} {_badge(status, status)}'
    ]
    if rung.ceiling is not None:
        parts.append(f" {_badge('ceiling: ' + rung.ceiling.name, 'ceiling')}")
    parts.append("</h3>")
    if rung.status is RungStatus.SKIPPED:
        parts.append(f"<p>{_h(rung.reason)}</p><p>fix: <code>{_h(rung.fix or '-')}</code></p></article>")
        return "".join(parts)
    if rung.reason:
        parts.append(f"<p>{_h(rung.reason)}</p>")
    parts.append(_table(("figure", "value"), _figures(rung)))
    if rung.ceiling is not None:
        items = "".join(f"<li>{_h(line)}</li>" for line in rung.ceiling.evidence)
        parts.append(f"<p>ceiling <b>{_h(rung.ceiling.name)}</b>, because:</p><ul class=evidence>{items}</ul>")
    if cpu := _cpu_text(rung):
        parts.append(f"<p>CPU: {_h(cpu)}</p>")
    if errors := _errors_text(rung):
        parts.append(f"<p>error counters that grew: {_h(errors)}</p>")
    if chart := halves_chart(rung):
        parts.append(chart)
    if rows := _latency_rows(rung):
        parts.append(_table(LATENCY_COLUMNS, rows, numeric=(3, 4, 5, 6, 7)))
    if wire := _wire_rows(rung):
        parts.append("<details><summary>at the wire, per half (average over the rung)</summary>")
        parts.append(_table(("node:interface", "TX", "RX"), wire) + "</details>")
    if facts := _collective_facts(rung):
        parts.append(_table(("NCCL", "value"), facts))
    if rows := _collective_rows(rung):
        parts.append(_table(COLLECTIVE_COLUMNS, rows, numeric=(1, 2, 3, 4)))
    for note in rung.notes:
        parts.append(f'<p class="note">{_h(note)}</p>')
    parts.append("</article>")
    return "".join(parts)


def _checks_html(checks: ChecksRecord | None) -> str:
    if checks is None:
        return "<p>This run did not record the checks; <code>wirespeed check</code> shows them now.</p>"
    rows = []
    intro = ""
    if checks.active is False:
        intro = (
            "<p class=note>As discovery saw the cluster when the run started (the passive checks; "
            "<code>wirespeed check</code> also pings and tries ssh).</p>"
        )
    for r in checks.results:
        status = r.status.value
        evidence = "".join(f"<li>{_h(_evidence_line(e))}</li>" for e in r.evidence)
        fixes = "".join(f"<li>{_h(f.node)}: {_h(f.description)}</li>" for f in r.fixes)
        detail = ""
        if evidence or fixes:
            fix_list = f"<p>fix:</p><ul>{fixes}</ul>" if fixes else ""
            detail = f"<details><summary>evidence</summary><ul>{evidence}</ul>{fix_list}</details>"
        cells = f"<td><code>{_h(r.id)}</code></td><td>{_badge(status, status)}</td>"
        rows.append(f"<tr>{cells}<td>{_h(r.summary)}{detail}</td></tr>")
    head = "<tr><th>check</th><th>status</th><th>summary</th></tr>"
    return f"{intro}<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


TUNE_COLUMNS = ("settings", "runs", "median busbw (GB/s)", "spread (GB/s)", "gain (GB/s)", "beats the defaults", "p")


def tune_rows(tune: TuneResult) -> list[list[str]]:
    """Every candidate: its runs, median and spread; against the defaults, the gain, the noise rule's verdict and
    the exact rank test's p."""
    rows = []
    for env in tune.candidates():
        runs, verdict = tune.runs_of(env), tune.verdict(env)
        shown = f"{statistics.median(runs):.3f}" if runs else "-"
        gain = "-" if not env or verdict is None else f"{verdict.gain_GBps:+.3f}"
        beats = "-" if not env or verdict is None else ("yes" if verdict.beats else "no")
        if env and len(runs) == 1:
            beats = "screened: 1 run"  # one run is no evidence either way; only finalists get repetitions
        p = "-" if not env or verdict is None or verdict.p_value is None else f"{verdict.p_value:.3f}"
        rows.append([label(env), str(len(runs)), shown, f"{spread(runs):.3f}", gain, beats, p])
    return rows


def tune_chart(tune: TuneResult) -> str:
    defaults = tune.defaults
    band = (min(defaults), max(defaults)) if defaults else None
    rows = [(label(env), tune.runs_of(env)) for env in tune.candidates()]
    title = f"{tune.collective} at {format_size_bytes(tune.size_bytes)}: busbw of every candidate"
    return svg.dot_chart(title, rows, "GB/s", band)


def _tune_html(tune: TuneResult) -> str:
    parts = [f"<p><b>{_h(tune.answer())}</b></p>", tune_chart(tune), _table(TUNE_COLUMNS, tune_rows(tune))]
    facts = [f"transport {tune.transport or 'unknown'}", f"NCCL {tune.nccl_version or 'unknown'}",
             f"budget {tune.budget_s:.0f} s", f"{len(tune.trials)} runs of nccl-tests"]  # fmt: skip
    if tune.fixed_env:
        facts.append("every run had " + label(tune.fixed_env))
    parts.append(f"<p>{_h('; '.join(facts))}</p>")
    lines = [*(f"not tried: {line}" for line in tune.left_out), *tune.notes]
    if lines:
        parts.append("<ul>" + "".join(f"<li>{_h(line)}</li>" for line in lines) + "</ul>")
    return "".join(parts)


def matrix_chart(matrix: MatrixResult) -> str:
    flagged = frozenset((o.node, o.subject) for o in matrix.outliers if o.kind in ("cell", "expected", "relay"))
    values = {(c.source, c.target): c.tool_gbps for c in matrix.cells}
    title = (
        f"{matrix.layer.upper()} all pairs: {matrix.pairs} pairs in {len(matrix.rounds)} rounds "
        f"({sum(matrix.round_seconds):.1f} s)" + (", both directions at once" if matrix.bidir else "")
    )
    return svg.heatmap(title, matrix.nodes, matrix.nodes, values, "Gb/s per direction", flagged)


def _matrix_html(matrix: MatrixResult) -> str:
    if matrix.status == "skipped":
        return f"<h3>{_h(matrix.layer.upper())}</h3><p>Skipped: {_h(matrix.reason)} ({_h(matrix.fix)})</p>"
    parts = [f"<h3>{_h(matrix.layer.upper())}</h3>", matrix_chart(matrix)]
    if relayed := relayed_lines(matrix):
        parts.append("<p>Through the ring's relays, or sharing a cable half:</p>")
        parts.append("<ul>" + "".join(f"<li>{_h(line)}</li>" for line in relayed) + "</ul>")
    if matrix.outliers:
        parts.append("<ul>" + "".join(f"<li>{_h(o.kind)}: {_h(o.text)}</li>" for o in matrix.outliers) + "</ul>")
    else:
        parts.append("<p>No outlier: every pair within 75% of the median pair.</p>")
    if matrix.reason:
        parts.append(f"<p>{_h(matrix.reason)}</p>")
    return "".join(parts)


def _matrix_md(matrix: MatrixResult) -> list[str]:
    lines = [f"### {matrix.layer.upper()} all pairs", ""]
    if matrix.status == "skipped":
        return [*lines, f"Skipped: {matrix.reason} ({matrix.fix})", ""]
    lines.append(f"{matrix.pairs} pairs in {len(matrix.rounds)} rounds, {sum(matrix.round_seconds):.1f} s; "
                 "Gb/s per direction, rows send, columns receive.")  # fmt: skip
    lines.append("")
    rows = []
    for source in matrix.nodes:
        row = [source]
        for target in matrix.nodes:
            cell = matrix.cell(source, target)
            hops = f" ({cell.hops} hops)" if cell and cell.relays else ""
            row.append("-" if source == target else _gbps(cell.tool_gbps) + hops if cell else "no link")
        rows.append(row)
    lines += _md_table(["from \\ to", *matrix.nodes], rows)
    if relayed := relayed_lines(matrix):
        lines += ["", *[f"- {line}" for line in relayed]]
    lines += ["", *[f"- {o.kind}: {o.text}" for o in matrix.outliers], ""]
    return lines


def html(report: RunReport) -> str:
    """One self-contained page: no scripts, no external resources."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>wirespeed report: run {_h(report.name)}</title><style>{STYLE}</style></head><body>",
        f"<h1>wirespeed report: run {_h(report.name)}</h1>",
        f'<p class="meta">nodes: {_h(", ".join(report.nodes) or "unknown")} · wirespeed {_h(__version__)}</p>',
        '<section id="takeaway"><h2>Takeaway</h2>',
        f'<p class="headline">{_h(report.headline())}</p>',
    ]
    if state := _state_line(report):
        parts.append(f'<p class="state">{_h(state)}</p>')
    if pairs := report.before_after:
        measured, skipped = takeaway.measured_and_skipped(pairs)
        parts.append('<p class="note">Every rung before and after the fixes; the other columns are after.</p>')
        parts.append(_table(takeaway.PHASE_COLUMNS, [takeaway.phase_cells(row) for row in measured]))
        parts += [f'<p class="note">{_h(line.strip())}</p>' for line in takeaway.spread_notes(measured)]
        parts += [f'<p class="note">{_h(line)}</p>' for line in skipped]
    elif report.rungs:
        parts.append(_table(takeaway.COLUMNS, _takeaway_rows(report)))
    parts.append("</section>")
    if steps := _step_rows(report):
        parts.append(f'<section id="steps"><h2>Steps</h2>{_table(STEP_COLUMNS, steps)}</section>')
    if fixes := _fix_rows(report):
        parts.append(f'<section id="fixes"><h2>Fixes</h2>{_table(FIX_COLUMNS, fixes)}</section>')
    timeline = report.timeline
    parts.append('<section id="over-time"><h2>Over time</h2>')
    if timeline.empty:
        parts.append("<p>No counter samples in this run (no rung ran long enough to be sampled).</p>")
    else:
        source = "the NIC's own counters (RDMA traffic included)" if timeline.sources == {"phy"} else NETDEV_NOTE
        parts.append(f'<p class="note">Shaded bands are the rungs. Counted from {_h(source)}.</p>')
        parts += throughput_charts(timeline)
        parts.append(cpu_chart(timeline))
        if timeline.unreadable_lines:
            parts.append(f'<p class="note">{timeline.unreadable_lines} sample line(s) could not be read.</p>')
    parts.append("</section>")
    parts.append('<section id="rungs"><h2>Rungs</h2>')
    if chart := busbw_chart(report):
        parts.append(chart)
    parts += [_rung_html(rung) for rung in report.rungs]
    parts.append("</section>")
    if report.run.tunes:
        parts.append('<section id="tune"><h2>NCCL settings searched</h2>')
        parts += [_tune_html(t) for t in report.run.tunes]
        parts.append("</section>")
    if report.run.matrices:
        parts.append('<section id="matrix"><h2>All pairs</h2>')
        parts += [_matrix_html(m) for m in report.run.matrices]
        parts.append("</section>")
    parts.append(f'<section id="checks"><h2>Checks</h2>{_checks_html(report.checks)}')
    if report.checks_after is not None:
        parts.append(f"<h3>After the fixes</h3>{_checks_html(report.checks_after)}")
    parts.append("</section>")
    parts.append('<section id="discovery"><h2>Discovery and cabling</h2>')
    discovery = _discovery(report)
    if discovery is None:
        parts.append("<p>No discovery.json in this run.</p>")
    else:
        parts.append(_table(NETDEV_COLUMNS, _netdev_rows(discovery)))
        parts.append(f"<pre>{_h(cabling_diagram(discovery).plain.rstrip())}</pre>")
        for node, facts in discovery.facts.items():
            parts.append(f"<h3>{_h(node)}</h3><pre>{_h(node_summary(facts).plain.rstrip())}</pre>")
    parts.append("</section>")
    rows = [[e.node, e.component, e.version] for e in report.environment]
    parts.append(
        f'<section id="environment"><h2>Environment</h2>{_table(("node", "component", "version"), rows)}</section>'
    )
    if report.imported:
        parts.append('<section id="imported"><h2>Imported results</h2>')
        for item in report.imported:
            columns, table_rows = _imported_summary(item.data)
            title = f"{item.name} ({item.data.tool}, from {item.data.file})"
            parts.append(f"<h3>{_h(title)}</h3>{_table(columns, table_rows)}")
        parts.append("</section>")
    if report.problems:
        items = "".join(f"<li>{_h(p)}</li>" for p in report.problems)
        parts.append(f'<section id="problems"><h2>Not read</h2><ul>{items}</ul></section>')
    parts.append("</body></html>\n")
    return "\n".join(parts)
