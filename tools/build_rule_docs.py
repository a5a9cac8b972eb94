"""Write the rule reference docs/rules/ from rules/ (fabriccheck/builders/rule_pages.py).

    python tools/build_rule_docs.py            # rewrite docs/rules/
    python tools/build_rule_docs.py --check    # exit 1 when docs/rules/ is stale
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout, installed or not
from fabriccheck.builders.rule_pages import main

if __name__ == "__main__":
    sys.exit(main())
