"""Provider-only resources: the `aws`, `azure` and `gcp` namespaces of the inventory (security groups, scale
sets, resource policies ...), kept beside the neutral model so that every stage above can read them."""
