"""Machine types outside the GPU tables: what they are, so that a CPU or TPU fleet never makes a run incomplete.

Lookup order for a machine type the catalog does not hold (catalog.yaml has the GPU and H4D series):
- a series without GPUs or a fabric, by its name (general-purpose, compute-, memory- and storage-optimized: Google
  Cloud, "Machine families resource and comparison guide", cloud.google.com/compute/docs/machine-resource). N1
  takes attached GPUs (guestAccelerators: T4, V100, P100, P4; Google Cloud "GPU machine types", N1 general-purpose
  with attached GPUs): each instance chooses its own, so they are the node's (`attached`), read from the answer,
  and its type keeps no fabric and no GPU NIC;
- a Cloud TPU machine type, by its name (ct5lp-hightpu-4t, ct5p-hightpu-4t, ct6e-standard-8t, tpu7x-standard-4t:
  GKE "Plan TPUs in GKE"; the machine type list as recorded by Cyclenerd/google-cloud-pricing-cost-calculator
  issue 89). Its chips reach each other over inter-chip interconnect (ICI) within a slice, not over a NIC fabric,
  and they are no GPUs: no fabric, no GPU, not judged for a fabric;
- else what the instances' own answer says: the Compute API lists an instance's accelerators in
  `guestAccelerators` ([{"acceleratorType": ".../acceleratorTypes/nvidia-l4", "acceleratorCount": 1}]). A type
  whose instances list none is no GPU type (no fabric); one whose instances list GPUs stays unknown (a GPU type
  with no fabric figures: not judged, named); a count that is not a count is unknown too, never "no fabric".
"""

from __future__ import annotations

import re
from typing import Any

from fabriccheck import catalog
from fabriccheck.inventory import Inventory
from fabriccheck.model import Capability, FabricKind

CPU_SERIES = frozenset(
    {
        "e2",
        "n1",
        "n2",
        "n2d",
        "n4",
        "n4d",
        "n4a",
        "c2",
        "c2d",
        "c3",
        "c3d",
        "c4",
        "c4a",
        "c4d",
        "t2a",
        "t2d",
        "m1",
        "m2",
        "m3",
        "m4",
        "x4",
        "z3",
        # Z4M carries Cloud RDMA (IRDMA on a Falcon VPC) for storage nodes, not for training: not judged.
        "z4m",
        "h3",
        "f1",
        "g1",
    }
)
CPU_SOURCE = "Google Cloud, Machine families resource and comparison guide (series without GPUs)"
# ct<generation><variant>-<kind>-<chips>t (TPU v3 to v6e), tpu<generation><variant>-<kind>-<chips>t (TPU7x).
_TPU = re.compile(r"^(?:ct\d+[a-z]*|tpu\d+[a-z]*)-[a-z]+-\d+t(?:-[a-z0-9]+)*$")
TPU_SOURCE = (
    "Google Cloud, Plan TPUs in GKE (Cloud TPU machine types): TPU chips joined by ICI within a slice, no GPU "
    "and no NIC fabric"
)
# Accelerator-optimized names: a GPU kind (highgpu, megagpu, ultragpu, edgegpu, maxgpu) or a GPU count (8g).
_GPU_NAME = re.compile(r"^[a-z][a-z0-9]*-(?:[a-z]*gpu-|[a-z]+-\d+g(?:$|-))")
ANSWER_SOURCE = "Compute API: the instances of this type list no guestAccelerators (a type without GPUs)"


def named_capability(machine_type: str) -> Capability | None:
    """The capability a CPU series or a Cloud TPU type has by its name alone, or None."""
    if machine_type.split("-", 1)[0] in CPU_SERIES:
        source = CPU_SOURCE
    elif _TPU.match(machine_type):
        source = TPU_SOURCE
    else:
        return None
    return Capability(instance_type=machine_type, provider="gcp", fabric=FabricKind.NONE, source=source)


def accelerator_count(value: Any) -> int | None:
    """The accelerators an instance's guestAccelerators lists (0 when none), or None when it is not readable."""
    if value is None:
        return 0
    if not isinstance(value, list):
        return None
    count = 0
    for entry in value:
        number = entry.get("acceleratorCount") if isinstance(entry, dict) else None
        if isinstance(number, str) and number.isdigit():
            number = int(number)  # an int64 field the API may quote
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            return None
        count += number
    return count


# Series whose instances attach GPUs of their choosing (guestAccelerators): the GPUs are the node's, not the type's.
ATTACHING_SERIES = frozenset({"n1"})


def attached(machine_type: str, value: Any) -> tuple[int, str | None] | None:
    """The GPUs an instance of an attaching series (N1) lists in guestAccelerators: (count, kind as the accelerator
    table names it, else as the API does; None for several kinds), or None for another series or no GPU. A value
    that is not a list of counts is a ValueError (the instance is unreadable, never "no GPU")."""
    if machine_type.split("-", 1)[0] not in ATTACHING_SERIES:
        return None
    count = accelerator_count(value)
    if count is None:
        raise ValueError(f"field guestAccelerators: {value!r} is not a list of accelerator counts")
    if not count:
        return None
    kinds = {_kind(entry.get("acceleratorType")) for entry in value if entry.get("acceleratorCount")}
    return count, (kinds.pop() if len(kinds) == 1 else None)


def _kind(url: Any) -> str | None:
    """nvidia-tesla-v100 (the last part of an acceleratorType URL) -> V100, as the accelerator table names it."""
    if not isinstance(url, str) or not url:
        return None
    name = url.rsplit("/", 1)[-1]
    words = name.removeprefix("nvidia-").removeprefix("tesla-")
    found = catalog.accelerator(words.upper()) or catalog.accelerator(words.split("-", 1)[0].upper())
    return found.name if found is not None else name


_TABLE, _NO_GPU, _GPU, _UNREADABLE = "table", "no-gpu", "gpu", "unreadable"


class MachineTypes:
    """The machine types of one normalizer's instances, each decided once by name, else from its instances."""

    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory
        self._verdicts: dict[str, str] = {}

    def add(self, machine: str, instance: dict[str, Any]) -> str | None:
        """Look at one instance of `machine`; the reason its guestAccelerators cannot be read, or None."""
        verdict = self._verdicts.get(machine)
        if verdict is None:
            verdict = self._verdicts[machine] = self._by_name(machine)
        if verdict != _NO_GPU:
            return None  # decided: by the tables, or by an instance that lists GPUs or cannot be read
        value = instance.get("guestAccelerators")
        count = accelerator_count(value)
        if count is None:
            self._verdicts[machine] = _UNREADABLE
            return f"field guestAccelerators: {value!r} is not a list of accelerator counts"
        if count:
            self._verdicts[machine] = _GPU
        return None

    def _by_name(self, machine: str) -> str:
        if not machine or machine in self.inventory.capabilities or catalog.catalog_entry(machine) is not None:
            return _TABLE
        cap = named_capability(machine)
        if cap is not None:
            self.inventory.capabilities[machine] = cap
            return _TABLE
        if _GPU_NAME.match(machine):
            return _GPU  # named as a GPU type (a5-highgpu-8g): unknown without its fabric figures, whatever it lists
        return _NO_GPU  # until an instance says otherwise

    def finish(self) -> None:
        """Types whose every instance listed no accelerator are no GPU types."""
        for machine, verdict in self._verdicts.items():
            if verdict == _NO_GPU and machine not in self.inventory.capabilities:
                self.inventory.capabilities[machine] = Capability(
                    instance_type=machine, provider="gcp", fabric=FabricKind.NONE, source=ANSWER_SOURCE
                )
