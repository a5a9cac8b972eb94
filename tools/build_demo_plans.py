"""Build the demo's Terraform plans under fixtures/demo/plans (fabriccheck/builders/demo_plans.py makes them).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout, installed or not
from fabriccheck.builders.demo_plans import main

if __name__ == "__main__":
    main()
