"""Slurm: the scheduler's view of a GPU cluster (nodes, partitions, topology, jobs), joined to the cloud underneath."""

from fabriccheck.provider import ProviderDeclaration

DECLARATION = ProviderDeclaration(
    name="slurm",
    package=__name__,
    title="Slurm",
    # No SDK: its live read runs Slurm's own commands or asks slurmrestd over HTTP (cli/slurm.py).
    unplaced="named",
    demo_runs_on="aws",  # the demo's ParallelCluster runs on the demo's AWS account (tools/build_demo_slurm.py)
)
