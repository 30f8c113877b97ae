"""Who and where: the cluster file, node sets, Slurm, become (sudo), the ssh mesh, the shipped agent, the
bench lock, and the switch (RouterOS). Pure."""
