"""A rule's message and its effect must tell the same story (issue 17, item 14).

The penalty model reads a rule's `effect`, the reader reads its `message`: when they disagree, the report
contradicts itself ("falls back to TCP" beside "cannot run"). Two claims about the traffic between peers are
checked, in the words rule messages use:
- it still flows, over TCP on the ordinary NIC (a fallback): the `tcp-fallback` effect, and the healthy state
  of a type without a fabric (`weaker-fabric`);
- it does not flow at all (peers unreachable, the job fails or hangs): the `unreachable` effect, "cannot run".
A message may not make the claim its effect contradicts. Effects that change neither (`partial-fabric`,
`loose-placement`, `none`: a fraction of the fabric, more latency, not counted) make neither claim outright.
"""

from __future__ import annotations

import re

# The fallback claim: traffic goes over TCP / sockets / the ordinary NIC.
FALLBACK = re.compile(
    r"\bfall(?:s|ing)? back\b"
    r"|\bover (?:ordinary |plain )?TCP\b"
    r"|\bTCP sockets\b"
    r"|\buses? sockets\b"
    r"|\bwith ordinary TCP\b"
    r"|\bover the (?:single |ordinary )?(?:host NICs?|ENA interfaces?|front-end Ethernet|gVNIC NICs?)\b",
    re.IGNORECASE,
)
# The unreachable claim: peers cannot exchange traffic at all.
UNREACHABLE = re.compile(
    r"\b(?:cannot|can ?not|can't|does not|do not|never) (?:all )?reach\b"
    r"|\bunreachable\b"
    r"|\bcannot run\b"
    r"|\b(?:not|if) at all\b"
    r"|\bfails? to connect\b"
    r"|\brefused\b"
    r"|\bhangs?\b",
    re.IGNORECASE,
)

# effect -> (the claim it contradicts, what the effect means, for the error line)
_CONTRADICTS: dict[str, tuple[tuple[re.Pattern[str], ...], str]] = {
    "unreachable": ((FALLBACK,), "peers cannot reach each other at all (the penalty is 'cannot run')"),
    "tcp-fallback": ((UNREACHABLE,), "traffic falls back to TCP over the ordinary NIC (the penalty is a slowdown)"),
    "weaker-fabric": ((UNREACHABLE,), "a type without the fabric trains over TCP (the penalty is a slowdown)"),
    "partial-fabric": ((FALLBACK, UNREACHABLE), "part of the fabric is used (the penalty is a slowdown)"),
    "loose-placement": ((FALLBACK, UNREACHABLE), "the fabric is used with more latency (the penalty is a slowdown)"),
    "split-nvlink-domain": (
        (FALLBACK, UNREACHABLE),
        "traffic NVLink could carry crosses the scale-out fabric (the penalty is a slowdown)",
    ),
    "nvlink-down": (
        (FALLBACK, UNREACHABLE),
        "multi-node NVLink is down and every node uses its own NICs (the penalty is a slowdown)",
    ),
    "pcie-acs": (
        (FALLBACK, UNREACHABLE),
        "PCIe ACS sends GPU-NIC traffic through the CPU: the fabric runs slower (the penalty is a slowdown)",
    ),
    "none": ((FALLBACK, UNREACHABLE), "nothing the penalty counts"),
}


def disagreement(effect: str, message: str) -> str | None:
    """Why `message` contradicts `effect`, in a few words, or None when they agree."""
    contradicted, meaning = _CONTRADICTS.get(effect, ((), ""))
    for claim in contradicted:
        found = claim.search(" ".join(message.split()))
        if found:
            return (
                f'says "{found.group(0)}", but effect {effect} means {meaning}; reword the message or change the effect'
            )
    return None
