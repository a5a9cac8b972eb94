"""Writes the table of gate settings in docs/configuration.md (config key, flag, variable, help) from the settings
table the CLI, the config file and the environment are read with (fabriccheck/settings.py: KEYS).
`--check` writes nothing and exits 1 when the page differs (tests/test_settings_table.py runs the same comparison).

    python tools/build_config_docs.py            # rewrite the table in docs/configuration.md
    python tools/build_config_docs.py --check    # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from fabriccheck.settings import DOCS_BEGIN, DOCS_END, markdown_table  # noqa: E402  (runs from a checkout too)

PAGE = ROOT / "docs" / "configuration.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale; write nothing")
    check = parser.parse_args().check
    text = PAGE.read_text()
    head, begin, rest = text.partition(DOCS_BEGIN)
    _, end, tail = rest.partition(DOCS_END)
    if not begin or not end:
        print(f"{PAGE}: no {DOCS_BEGIN} ... {DOCS_END} block to fill", file=sys.stderr)
        return 2
    page = f"{head}{DOCS_BEGIN}\n{markdown_table()}{DOCS_END}{tail}"
    if check:
        if page != text:
            print(f"{PAGE} is stale: run python tools/build_config_docs.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
