"""Slurm: the scheduler's view of a GPU cluster (nodes, partitions, topology, jobs), joined to the cloud underneath."""
