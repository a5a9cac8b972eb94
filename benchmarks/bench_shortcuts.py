"""What each kept shortcut saves: a dump read and judged with it, and with it switched off, one at a time.

The house keeps no shortcut that saves under a tenth of the run it speeds up (issue 19). Each row below switches
one off in a fresh interpreter (monkeypatched to its plain definition, here only) and times the stage it speeds
up: reading the dump (`load_dump`: parse + normalize) or judging it (`flow.run`: clusters, facts, rules, penalty),
best of `--repeat` runs of each, alternating. Fleets: AWS 10,000 instances (bench_dump), Azure 5,000 VMs and GCP
5,000 instances (bench_azure, bench_gcp).

Run: python benchmarks/bench_shortcuts.py [--repeat 5] [--only gcp]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

# Each shortcut: (name, the stage it speeds up, the code that switches it off).
SHORTCUTS: list[tuple[str, str, str]] = [
    ("none switched off", "both", ""),
    (
        "projection: dumps parsed with only the fields read (msgspec)",
        "read",
        "from fabriccheck.sources import projected\nprojected.read = lambda path, kind: None",
    ),
    (
        "pools: a shape read once per pool",
        "read",
        "from fabriccheck.sources.pools import Pools\n"
        "Pools.shape = lambda self, rest, read_shape, lookups=(): self.intern(read_shape(rest))",
    ),
    (
        "collector paused while reading and judging",
        "both",
        "import contextlib, importlib\nfrom fabriccheck import gcpause\n"
        "gcpause.paused_gc = lambda freeze=True: contextlib.nullcontext()\n"
        "for m in ('flow', 'providers.aws.dump', 'providers.azure.dump', 'providers.gcp.dump'):\n"
        "    importlib.import_module('fabriccheck.' + m).paused_gc = gcpause.paused_gc",
    ),
    (
        "facts once per node shape",
        "judge",
        "from fabriccheck.facts import FactBuilder, support\n"
        "def fresh(self, key):\n"
        "    shape = key[0]\n"
        "    attachment = support(shape.provider).fabric_attachment(shape, self.capability(shape))\n"
        "    return self._build(shape, key[1], attachment), attachment\n"
        "FactBuilder._node = fresh",
    ),
    (
        "verdicts kept by the values they read",
        "judge",
        "from fabriccheck import judge\nplain = judge.judge\n"
        "judge.judge = lambda *args, **kwargs: plain(*args, **kwargs, memo=False)",
    ),
    (
        "a rule's node values once per value of a pool's facts",
        "judge",
        "from fabriccheck import judge\n"
        "class Forget(dict):\n    def __setitem__(self, key, value): pass\n"
        "init = judge.Verdicts.__init__\n"
        "def plain(self, memo=True):\n    init(self, memo)\n    self._node_values = Forget()\n"
        "judge.Verdicts.__init__ = plain",
    ),
    (
        "a cluster's slowdown kept by its distinct members",
        "judge",
        "from fabriccheck import cost\ncost._slowdown = cost._slowdown.__wrapped__",
    ),
    (
        "GCP networks and firewall reach looked up once per value",
        "judge",
        "from fabriccheck.providers.gcp import lookup\n"
        "lookup.GcpIndex._network = lambda self, node, url: lookup._Found(*self._find(node, url))\n"
        "def find(self, node, url):\n"
        "    why = self.uncollected(node, url, 'networks', 'networks')\n"
        "    if why:\n        return None, why, False\n"
        "    network = self.networks.get((self.owner(node, url), url))\n"
        "    return network, None if network else f'network {lookup.name_of(url)} was not among the collected"
        " networks', True\n"
        "lookup.GcpIndex._find = find\n"
        "lookup.GcpIndex._reach = lambda self, node, nic: self._find_reach(node, nic.network or '', nic.subnet)",
    ),
]

RUN = """
import sys, time
from pathlib import Path
{switch}
from fabriccheck import flow
from fabriccheck.providers.{cloud}.dump import load_dump
start = time.perf_counter()
inventory = load_dump(Path(sys.argv[1]))
read = time.perf_counter()
report = flow.run(inventory, flow.Options())
done = time.perf_counter()
assert report.complete
print(read - start, done - read, len(report.findings))
"""


def build(cloud: str, folder: Path) -> Path:
    if cloud == "aws":
        from bench_dump import build_fleet

        build_fleet(folder, 10_000)
        return folder
    if cloud == "azure":
        from fabriccheck.builders import demo_azure

        demo_azure.write(demo_azure.fleet(5_000), folder / demo_azure.SUBSCRIPTION)
        return folder
    from fabriccheck.builders import demo_gcp

    demo_gcp.fleet(5_000).write(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", choices=["aws", "azure", "gcp"])
    args = parser.parse_args()
    for cloud in [args.only] if args.only else ["aws", "azure", "gcp"]:
        with tempfile.TemporaryDirectory() as tmp:
            folder = build(cloud, Path(tmp))
            shortcuts = [s for s in SHORTCUTS if cloud == "gcp" or not s[0].startswith("GCP")]
            best: dict[str, tuple[float, float, str]] = {}
            for _ in range(args.repeat):
                for name, _stage, switch in shortcuts:
                    done = subprocess.run(
                        [sys.executable, "-c", RUN.format(switch=switch, cloud=cloud), str(folder)],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    read, judged, findings = done.stdout.split()
                    was = best.get(name)
                    times = (float(read), float(judged), findings)
                    best[name] = times if was is None else (min(was[0], times[0]), min(was[1], times[1]), findings)
            base_read, base_judge, base_findings = best["none switched off"]
            print(f"{cloud}: read {base_read:.3f} s, judge {base_judge:.3f} s, {base_findings} findings", end="")
            print(f" (best of {args.repeat})")
            for name, stage, _ in shortcuts[1:]:
                read, judged, findings = best[name]
                parts = []
                if stage in ("read", "both"):
                    parts.append(f"read {read:.3f} s (saves {1 - base_read / read:.0%})")
                if stage in ("judge", "both"):
                    parts.append(f"judge {judged:.3f} s (saves {1 - base_judge / judged:.0%})")
                same = "" if findings == base_findings else f"  FINDINGS DIFFER: {findings}"
                print(f"  off: {name}: {', '.join(parts)}{same}")


if __name__ == "__main__":
    main()
