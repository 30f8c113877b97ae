"""The HTML report of a real run on the emulated cluster, as a browser shows it: headless Chromium renders the page
to a PNG, which must not be blank, and its DOM must hold the takeaway table, the rung sections and the plots."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.engine.remote import Remote

from .helpers import running_testbed

pytestmark = pytest.mark.root
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")


def browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


@pytest.fixture(scope="module")
def bed() -> Iterator[Remote]:
    with running_testbed("wrp-", nodes=2, topology="direct", cables=2, half_rate_bps=10**9) as (_, remote):
        yield remote


def cli(*argv: str) -> int:
    return main(list(argv), Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=160))


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the rows of an 8-bit RGB or RGBA PNG (what Chromium writes), unfiltered."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks += body
        pos += 12 + length
    width, height, depth, color_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and color_type in (2, 6), f"PNG depth {depth} colour type {color_type}"
    channels = 3 if color_type == 2 else 4
    raw, stride, rows = zlib.decompress(chunks), width * channels, []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line if channels == 3 else bytes(b for j, b in enumerate(line) if j % 4 != 3)))
        previous = line
    return width, height, rows


def test_the_report_of_a_real_run_renders_with_tables_and_plots(bed: Remote, tmp_path: Path) -> None:
    chromium = browser()
    if chromium is None:
        pytest.skip("no headless Chromium (apt install chromium-headless-shell; `make` installs it)")
    runs = tmp_path / "runs"
    assert cli("bench", "tcp-halves", "--cluster", bed.cluster.source, "--seconds", "2", "--runs", str(runs)) == 0
    assert cli("report", "--runs", str(runs)) == 0
    [run] = list(runs.iterdir())
    page = run / "report.html"
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,2400"]
    shot = tmp_path / "report.png"
    done = subprocess.run([*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=60)
    assert shot.exists(), done.stderr[-2000:]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=60).stdout
    # what the browser built, not just what was written: the takeaway table, the rung, the plots with lines in them
    assert 'id="takeaway"' in dom and "<table>" in dom and "tcp-halves" in dom
    assert dom.count('class="chart"') >= 3 and "<polyline" in dom
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 2400)
    pixels = [row[i : i + 3] for row in rows[::4] for i in range(0, len(row), 12)]  # a 1-in-16 grid
    colours = set(pixels)
    inked = sum(1 for p in pixels if p != b"\xff\xff\xff") / len(pixels)
    assert len(colours) >= 20, f"only {len(colours)} colours: blank or unstyled"
    assert inked >= 0.03, f"{inked:.1%} of the page is not white: blank"
    blue = sum(1 for r, g, b in pixels if b > 150 and r < 90)  # the plot lines and bars are #1f77b4
    assert blue >= 20, "no plot drawn"
