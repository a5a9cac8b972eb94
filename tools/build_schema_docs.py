"""Write docs/json-schema.md from the report's JSON Schema (fabriccheck/builders/schema_page.py).

    python tools/build_schema_docs.py            # rewrite docs/json-schema.md
    python tools/build_schema_docs.py --check    # exit 1 when it is stale
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout, installed or not
from fabriccheck.builders.schema_page import main

if __name__ == "__main__":
    sys.exit(main())
