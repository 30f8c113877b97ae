"""How `wirespeed init` finds the other nodes: mDNS against the probe of the fabric subnets, in one run on one
emulated cluster whose nodes announce ssh (`testbed up --mdns`). Needs root, avahi-daemon, avahi-utils and dbus.

Both run on the first node, as init does. Reported: seconds to the candidate list, and how many candidates each
found (mDNS through a switch often gives one address per node; the probe finds every address).

    sudo .venv/bin/python benchmarks/bench_init.py [--nodes 4] [--rounds 3] [--json out]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from wirespeed.engine.clusters import load_cluster_file
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build

PREFIX = "wbi-"
ON_NODE = r"""
import json, shutil, sys, time
from concurrent.futures import ThreadPoolExecutor
from wirespeed.adapters.process import run_process
from wirespeed.core.cluster import sshmesh
from wirespeed.engine import init

halves = init.fabric_addresses(init._local_facts())
own = [c.split("/")[0] for cidrs in halves.values() for c in cidrs]
t0 = time.perf_counter()
out = run_process(["avahi-browse", "-p", "-r", "-f", "-t", "_ssh._tcp"], timeout_s=30)
mdns = [p.address for p in sshmesh.parse_avahi_browse(out.stdout, halves) if p.address not in own]
t1 = time.perf_counter()
targets = sshmesh.probe_targets([c for cidrs in halves.values() for c in cidrs], own)
with ThreadPoolExecutor(max_workers=64) as pool:
    probed = [a for a, ok in zip(targets, pool.map(init._ssh_port_open, targets)) if ok]
t2 = time.perf_counter()
print(json.dumps({"mdns_s": t1 - t0, "mdns": len(mdns), "probe_s": t2 - t1, "probe": len(probed),
                  "probed_addresses": len(targets)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    state = build.up(prefix=PREFIX, nodes=args.nodes, topology="switch", cables=1, mdns=True)
    try:
        remote = Remote(load_cluster_file(state.cluster_file))
        first = remote.cluster.nodes[0]
        rows = []
        for _ in range(args.rounds):
            result = remote.run(first, [sys.executable, "-c", ON_NODE], timeout_s=300)
            assert result.ok, result.message + result.stderr
            rows.append(json.loads(result.stdout))
        remote.stop_all()
    finally:
        build.down(PREFIX)
    mdns_s = statistics.median(r["mdns_s"] for r in rows)
    probe_s = statistics.median(r["probe_s"] for r in rows)
    print(f"{args.nodes} nodes on a switch, median of {args.rounds}")
    print(f"mDNS  {mdns_s:6.2f} s  {rows[0]['mdns']} candidate addresses")
    print(f"probe {probe_s:6.2f} s  {rows[0]['probe']} candidate addresses of {rows[0]['probed_addresses']} probed")
    print(f"probe / mDNS: {probe_s / mdns_s:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"nodes": args.nodes, "rounds": rows}, indent=2))


if __name__ == "__main__":
    main()
