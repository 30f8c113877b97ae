"""What discovery reads on a node, one probe per value: each reads sysfs, /proc or a command's output through a
`NodeSource` (live, snapshot or recording alike) and returns a small typed value, or `Unknown` saying why not.
`engine/collect.py` assembles them into `NodeFacts`.

- `common`: reading a file or an output into a value or an `Unknown`.
- `hardware`: PCI functions, root ports, DMI, GPUs.
- `net`: net devices, RDMA devices, the management and fabric interfaces, NIC offloads and shaping.
- `tools`: tool versions, NCCL and nccl-tests, watched packages.
- `config`: sysctls, firewall, routes, the files `fix` manages.
- `host`: privileges, memory, kernel logs, the job user's environment and files, fix journals.

A probe's output key (`NodeSource.output`'s name) is what a snapshot replays by: never rename one.
"""
