"""fabriccheck's version: what every report names as its tool (pyproject.toml's [project] version, which
tests/test_shipped.py holds it to)."""

__version__ = "0.1.0"
