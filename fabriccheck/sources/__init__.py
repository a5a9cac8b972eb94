"""Where inventories come from besides the clouds themselves (saved snapshots, Terraform plans), and the plumbing
every cloud's collector in fabriccheck/providers shares: error records with their scope (scope.py), retries
(retries.py), progress and request counts (progress.py), a bounded worker pool (parallel.py), typed access to
parsed answers (shape.py), dump layouts (dumps.py, stream.py, projected.py, items.py, pools.py, fleet.py)."""
