"""--quiet and --no-color, which every command takes (cli.app.Command adds them), and the NO_COLOR variable.

Light on imports: the command's options set them before it runs, and the report writers read them."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass
class Mode:
    """How the running command prints: `quiet`, only its verdict line and errors (no progress, no tables, no
    warnings); `no_color`, no ANSI colour whatever the terminal."""

    quiet: bool = False
    no_color: bool = False


MODE = Mode()


def color_allowed() -> bool:
    """Colour unless --no-color, or NO_COLOR is set to anything but the empty string (https://no-color.org:
    "when present and not an empty string (regardless of its value), prevents the addition of ANSI color")."""
    return not MODE.no_color and not os.environ.get("NO_COLOR")
