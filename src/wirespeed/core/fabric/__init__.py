"""The nodes and the wire: facts a node reports, discovery, the cabling map, ports and halves, RDMA and
GPUDirect, a ring's relays, counters, the meter and the live board, and units. Pure."""
