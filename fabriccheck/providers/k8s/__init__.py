"""Kubernetes: pods judged against the nodes they run on (dumps, manifests, live through the kubernetes client)."""
