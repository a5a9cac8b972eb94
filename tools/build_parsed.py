"""Rebuild fabriccheck/data/parsed.json (fabriccheck/builders/parsed.py): run after editing a built-in rule or a
data table (tests/test_shipped.py fails until it is run).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout, installed or not
from fabriccheck.builders.parsed import main

if __name__ == "__main__":
    main()
