"""Rebuild the GCP demo project under fixtures/demo/gcp (fabriccheck/builders/demo_gcp.py makes it).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout, installed or not
from fabriccheck.builders.demo_gcp import main

if __name__ == "__main__":
    main()
