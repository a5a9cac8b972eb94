"""Provider-only resources: the `aws`, `azure`, `gcp`, `k8s` and `slurm` namespaces of the inventory (security
groups, scale sets, resource policies ...), kept beside the neutral model so that every stage above can read them; and
the provider parts of a node or NIC (GcpNodePart, PodPart, SlurmPart, AzureNicPart), which the neutral model holds in
its typed extension slots. These rooms build on values.py only (but aws.py, which model.py does not import), so
model.py can import the parts without a circle."""
