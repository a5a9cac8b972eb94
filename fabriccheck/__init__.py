"""fabriccheck: find cloud GPU-cluster settings that leave the training fabric unused, and what they cost.

The Python API (fabriccheck.api): `audit(provider, source)` returns the Report every output format renders, and
`render(report, fmt)` renders it. They are imported on first use, so that `fabriccheck --help` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabriccheck.version import __version__

if TYPE_CHECKING:
    from fabriccheck.api import Dump, Live, Plan, SavedInventory, audit
    from fabriccheck.flow import Options
    from fabriccheck.report import Report
    from fabriccheck.reports import render

__all__ = ["Dump", "Live", "Options", "Plan", "Report", "SavedInventory", "__version__", "audit", "render"]

_LAZY = {
    "audit": "fabriccheck.api",
    "Dump": "fabriccheck.api",
    "Live": "fabriccheck.api",
    "Plan": "fabriccheck.api",
    "SavedInventory": "fabriccheck.api",
    "Options": "fabriccheck.flow",
    "Report": "fabriccheck.report",
    "render": "fabriccheck.reports",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fabriccheck' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
