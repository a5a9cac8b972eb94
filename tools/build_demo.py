"""Rebuild the demo account under fixtures/demo/aws (fabriccheck/builders/demo_aws.py makes it).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout, installed or not
from fabriccheck.builders.demo_aws import main

if __name__ == "__main__":
    main()
