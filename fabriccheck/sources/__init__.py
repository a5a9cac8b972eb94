"""Where inventories come from besides the clouds themselves (saved snapshots), and the plumbing every
cloud's collector in fabriccheck/providers shares (sources/common.py)."""
