"""fabriccheck: find cloud GPU-cluster settings that leave the training fabric unused, and what they cost."""

__version__ = "0.1.0"
