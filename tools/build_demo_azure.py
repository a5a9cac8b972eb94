"""Rebuild the demo subscription under fixtures/demo/azure (fabriccheck/builders/demo_azure.py makes it).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout, installed or not
from fabriccheck.builders.demo_azure import main

if __name__ == "__main__":
    main()
