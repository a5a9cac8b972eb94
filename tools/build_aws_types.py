"""Rebuild fabriccheck/data/aws_instance_types.json from a recorded EC2 DescribeInstanceTypes answer.

The answer moto ships (moto/ec2/resources/instance_types.json.gz) is a recording of the real API for every
instance type; it is mapped with the same function the live collector uses, so the fallback table and a
live answer agree field for field. Run: python tools/build_aws_types.py
"""

import gzip
import json
import os
from importlib.metadata import version
from pathlib import Path

import moto

from fabriccheck.providers.aws.instance_types import capability_from_instance_type

SOURCE = f"EC2 DescribeInstanceTypes answer recorded in moto {version('moto')} (ec2/resources/instance_types.json.gz)"
AS_OF = "2026-10"  # moto 5.2.5's release month

with gzip.open(os.path.join(os.path.dirname(moto.__file__), "ec2/resources/instance_types.json.gz")) as raw:
    recorded = json.load(raw)
types = {}
for name, item in sorted(recorded.items()):
    cap = capability_from_instance_type(item, SOURCE)
    types[name] = cap.model_dump(exclude={"instance_type", "provider", "source", "as_of"}, exclude_defaults=True)
out = Path(__file__).resolve().parent.parent / "fabriccheck" / "data" / "aws_instance_types.json"
doc = {"provider": "aws", "source": SOURCE, "as_of": AS_OF, "types": types}
out.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
print(f"wrote {len(types)} types to {out}")
