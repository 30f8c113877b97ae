"""`bench matrix` on a four-node emulated ring, after `fix --yes` installed the ring's routes and forwarding: all six
pairs in both directions, the two pairs that share no cable through the node between them (2 hops), and the cable
halves that carried relayed traffic recorded per round."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.records.matrix import matrix_from_json
from wirespeed.ui.matrix import matrix_view

from .helpers import running_testbed

pytestmark = pytest.mark.root

PREFIX = "rmx-"
COUNT = 4
NODES = [f"{PREFIX}{i}" for i in range(1, COUNT + 1)]
OPPOSITE = {(NODES[0], NODES[2]), (NODES[2], NODES[0]), (NODES[1], NODES[3]), (NODES[3], NODES[1])}


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def test_four_node_ring_matrix_measures_every_pair_through_the_relays(tmp_path: Path) -> None:
    with running_testbed(PREFIX, nodes=COUNT, topology="ring") as (_, remote):
        cluster = remote.cluster.source
        code, _, err = cli("discover", "--cluster", cluster)
        assert code == 0, err
        code, _, err = cli("fix", "--cluster", cluster, "--yes", "--json", "--record", str(tmp_path / "fix.json"))
        assert code == 0, err

        runs = str(tmp_path / "runs")
        code, out, err = cli("bench", "matrix", "--layer", "tcp", "--seconds", "2", "--cluster", cluster,
                             "--runs", runs, "--json")  # fmt: skip
        assert code in (0, 1), err  # 1: a flagged cell is a finding, not a failure to measure
        data = json.loads(out)
        (tcp,) = data["matrices"]
        assert (tcp["layer"], tcp["status"], tcp["pairs"], len(tcp["rounds"])) == ("tcp", "ran", 6, 3), tcp["reason"]
        cells = {(c["source"], c["target"]): c for c in tcp["cells"]}
        assert len(cells) == 12 and all(c["tool_gbps"] for c in cells.values()), cells
        for pair, cell in cells.items():
            print(pair, f"{cell['tool_gbps']:.2f} of {cell['expected_gbps']}", cell["hops"], cell["relays"],
                  cell["shared_with"], cell["ceiling"])  # fmt: skip
            if pair in OPPOSITE:
                assert cell["hops"] == 2 and len(cell["relays"]) == 1, cell
                assert cell["relays"][0] not in pair
            else:
                assert (cell["hops"], cell["relays"]) == (1, []), cell
        relayed_rounds = {x["round"] for x in tcp["relayed_cables"]}
        assert relayed_rounds == {c["round"] for p, c in cells.items() if p in OPPOSITE}
        print("relayed cables:", [(x["node"], x["iface"], x["tx_gbps"]) for x in tcp["relayed_cables"]])

        console = Console(file=io.StringIO(), width=120)
        console.print(matrix_view(matrix_from_json(tcp)))
        shown = console.file.getvalue()  # type: ignore[attr-defined]
        print(shown)
        assert "2 hops via" in shown and all(len(line) <= 120 for line in shown.splitlines())
