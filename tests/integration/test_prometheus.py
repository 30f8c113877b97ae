"""`wirespeed watch --serve` on the emulated cluster: scraped with a real HTTP client while iperf3 runs, its
counters grow by what the interface's own counters say the wire carried; and a real Prometheus server (Debian's
`prometheus`, on loopback) scraping it computes the shaped line rate with `rate()`. Every dashboard query is then
evaluated by that server too."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from wirespeed.engine.remote import Remote

from .helpers import running_testbed

pytestmark = pytest.mark.root
PREFIX = "wpm-"
SENDER, RECEIVER = "wpm-1", "wpm-2"
HALF = "enp1s0f1np1"
SHAPED_BPS = 10**9
DASHBOARD = Path(__file__).resolve().parents[2] / "dashboards" / "wirespeed.json"


@pytest.fixture(scope="module")
def bed() -> Iterator[Remote]:
    with running_testbed(PREFIX, nodes=2, topology="direct", half_rate_bps=SHAPED_BPS) as (_, remote):
        yield remote


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 30.0, pause_s: float = 0.1) -> Any:
    """Poll `check` until it returns something true; fail naming `what` after a generous `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(pause_s)


Scrape = dict[str, list[tuple[dict[str, str], float]]]


def scrape(url: str) -> Scrape:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    found: Scrape = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found.setdefault(s.name, []).append((s.labels, s.value))
    return found


def value(found: Scrape, name: str, **labels: str) -> float | None:
    hits = [v for got, v in found.get(name, []) if all(got.get(k) == want for k, want in labels.items())]
    assert len(hits) <= 1, (name, labels, hits)
    return hits[0] if hits else None


@dataclass
class Exporter:
    url: str
    port: int
    process: subprocess.Popen[bytes]
    textfile: Path  # --textfile DIR: DIR/wirespeed.prom

    def samples(self, node: str) -> float:
        return value(scrape(self.url), "wirespeed_samples_total", node=node) or 0.0

    def after_new_samples(self, count: int = 2) -> Scrape:
        """A scrape taken once every node has sent `count` samples more than when asked: what it holds was read
        on the nodes after this call began."""
        start = {node: self.samples(node) for node in (SENDER, RECEIVER)}
        wait_for(f"{count} new samples", lambda: all(self.samples(n) >= start[n] + count for n in start))
        return scrape(self.url)


@pytest.fixture(scope="module")
def exporter(bed: Remote, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exporter]:
    """`wirespeed watch --serve 127.0.0.1:0` as a user runs it; the port it printed; stopped with Ctrl-C."""
    logs = tmp_path_factory.mktemp("exporter")
    stderr_path = logs / "stderr"
    with open(logs / "stdout", "wb") as stdout, open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "wirespeed", "watch", "--cluster", bed.cluster.source, "--serve", "127.0.0.1:0",
             "--no-live", "--interval", "0.25", "--textfile", str(logs / "textfile")],
            stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:

        def printed() -> re.Match[str] | None:
            text = stderr_path.read_text()
            assert process.poll() is None, text
            return re.search(r"serving Prometheus metrics on (http://127\.0\.0\.1:(\d+)/metrics)", text)

        match = wait_for("the URL line", printed)
        found = Exporter(match.group(1), int(match.group(2)), process, logs / "textfile" / "wirespeed.prom")
        wait_for("samples from both nodes", lambda: found.samples(SENDER) >= 2 and found.samples(RECEIVER) >= 2)
        yield found
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    assert process.returncode in (0, 130), stderr_path.read_text()[-2000:]


def address(remote: Remote, node: str, iface: str) -> str:
    result = remote.run(remote.cluster.node(node), ["ip", "-j", "-4", "addr", "show", "dev", iface])
    return str(json.loads(result.stdout)[0]["addr_info"][0]["local"])


def sysfs_tx_bytes(remote: Remote) -> int:
    result = remote.run(remote.cluster.node(SENDER), ["cat", f"/sys/class/net/{HALF}/statistics/tx_bytes"])
    assert result.ok, result.message
    return int(result.stdout)


@contextlib.contextmanager
def iperf3(remote: Remote, seconds: int, port: int) -> Iterator[dict[str, Any]]:
    """SENDER to RECEIVER over HALF for `seconds`, two streams, in the background; when the block ends it has
    ended and the dict holds iperf3's JSON (`end`), or the test fails."""
    target = address(remote, RECEIVER, HALF)
    server = remote.start(remote.cluster.node(RECEIVER), ["iperf3", "-s", "-1", "-B", target, "-p", str(port)])
    outcome: dict[str, Any] = {}

    def client() -> None:
        for _ in range(50):  # until the server listens
            result = remote.run(remote.cluster.node(SENDER),
                                ["iperf3", "-c", target, "-p", str(port), "-t", str(seconds), "-P", "2", "-J"],
                                timeout_s=seconds + 30)  # fmt: skip
            if "Connection refused" not in result.stdout + result.stderr:
                outcome["result"] = result
                return
            subprocess.run(["sleep", "0.2"], check=True)

    thread = threading.Thread(target=client)
    thread.start()
    try:
        yield outcome
    finally:
        thread.join(timeout=seconds + 60)
        server.stop()
    result = outcome.get("result")
    assert result is not None and result.ok, result.message if result else "iperf3 never connected"
    outcome.update(json.loads(result.stdout))
    assert "sum_sent" in outcome.get("end", {}), outcome.get("error")


def test_scrapes_grow_by_what_the_wire_carried(bed: Remote, exporter: Exporter) -> None:
    before_sysfs = sysfs_tx_bytes(bed)
    before = exporter.after_new_samples()  # read on the node after the sysfs read: the half is idle meanwhile
    labels = {"node": SENDER, "interface": HALF}
    start_tx = value(before, "wirespeed_phy_transmit_bytes_total", **labels)
    assert start_tx is not None and abs(start_tx - before_sysfs) < 64 * 1024  # the same counter (ARP aside)
    assert value(before, "wirespeed_counter_source_info", **labels, source="netdev") == 1  # veths: no PHY counters
    start_cable = value(before, "wirespeed_cable_transmit_bytes_total", node=SENDER, port="port 1")
    assert start_cable is not None
    with iperf3(bed, 3, 5331) as flow:
        during = wait_for(  # while it runs: the counter moves between scrapes
            "the counter to grow",
            lambda: (
                (s := scrape(exporter.url))
                and (value(s, "wirespeed_phy_transmit_bytes_total", **labels) or 0) > start_tx + 50e6
                and s
            ),
        )
    after_sysfs = sysfs_tx_bytes(bed)
    after = exporter.after_new_samples()
    end_tx = value(after, "wirespeed_phy_transmit_bytes_total", **labels)
    mid_tx = value(during, "wirespeed_phy_transmit_bytes_total", **labels)
    assert end_tx is not None and mid_tx is not None and start_tx < mid_tx < end_tx
    wire = after_sysfs - before_sysfs
    scraped = end_tx - start_tx
    sent = flow["end"]["sum_sent"]["bytes"]
    cable = (value(after, "wirespeed_cable_transmit_bytes_total", node=SENDER, port="port 1") or 0) - start_cable
    print(f"scraped {scraped:,.0f} B, interface {wire:,} B, iperf3 sent {sent:,} B, cable counter {cable:,.0f} B")
    assert scraped == pytest.approx(wire, rel=0.05)
    assert scraped == pytest.approx(sent, rel=0.05)  # the payload plus its headers (MTU 9000)
    assert cable == pytest.approx(scraped, rel=0.05)  # the cable's own counter, its twin half idle
    written = {
        s.name: s.value
        for f in text_string_to_metric_families(exporter.textfile.read_text())
        for s in f.samples
        if s.labels.get("node") == SENDER and s.labels.get("interface") == HALF
    }
    assert abs(written["wirespeed_phy_transmit_bytes_total"] - end_tx) < 64 * 1024  # --textfile: the same counter


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def api(base: str, path: str, **params: str) -> Any:
    url = f"{base}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as response:
        data = json.loads(response.read())
    assert data["status"] == "success", data
    return data["data"]


def dashboard_queries() -> list[str]:
    """The dashboard's PromQL with Grafana's variables as Grafana would fill them in."""
    dashboard = json.loads(DASHBOARD.read_text())
    texts = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    fill = {"$__rate_interval": "4s", "$__range": "30s", "$node": ".*"}
    for name, text in fill.items():
        texts = [t.replace(name, text) for t in texts]
    return texts


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs Debian's prometheus (apt install prometheus)")
def test_prometheus_rate_is_the_shaped_line_rate(bed: Remote, exporter: Exporter, tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: wirespeed\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{exporter.port}']\n"
    )
    log = tmp_path / "prometheus.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:

        def scraping() -> bool:
            assert server.poll() is None, log.read_text()[-2000:]
            try:
                found = api(base, "/api/v1/query", query='up{job="wirespeed"} == 1')
            except OSError:
                return False  # not listening yet
            return bool(found["result"])

        wait_for("prometheus to scrape the exporter", scraping)
        with iperf3(bed, 10, 5332) as flow:
            pass
        started = flow["start"]["timestamp"]["timesecs"]
        ended = started + flow["end"]["sum_sent"]["seconds"]
        stamp = f'timestamp(wirespeed_samples_total{{node="{SENDER}"}})'

        def scraped_after_the_flow() -> bool:
            return any(float(r["value"][1]) > ended + 1 for r in api(base, "/api/v1/query", query=stamp)["result"])

        wait_for("a scrape after the flow", scraped_after_the_flow)
        query = f'rate(wirespeed_phy_transmit_bytes_total{{node="{SENDER}",interface="{HALF}"}}[4s]) * 8'
        data = api(base, "/api/v1/query_range", query=query, start=str(started + 5), end=str(ended - 1), step="1")
        [series] = data["result"]
        rates = [float(v) for _, v in series["values"]]
        median = statistics.median(rates)
        print(f"rate() * 8 over the flow: median {median / 1e9:.4f} Gb/s, {min(rates) / 1e9:.4f} to "
              f"{max(rates) / 1e9:.4f} over {len(rates)} steps; shaped {SHAPED_BPS / 1e9:g} Gb/s")  # fmt: skip
        assert median == pytest.approx(SHAPED_BPS, rel=0.05)
        middle = str((started + ended) / 2 + 2)
        for text in dashboard_queries():  # every panel's query parses and evaluates; the wire's find series
            found = api(base, "/api/v1/query", query=text, time=middle)
            if "wirespeed_bench_" not in text and "increase(" not in text:
                assert found["result"], text
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
