"""An EC2 DescribeInstanceTypes item as the model's capability: EFA, network cards and bandwidth, GPUs."""

from __future__ import annotations

import re
from typing import Any

from fabriccheck.model import Capability, FabricKind
from fabriccheck.providers.aws import values

# NetworkPerformance as EC2 words it: "3200 Gigabit", "4x 100 Gigabit", "Up to 25 Gigabit", "Moderate".
_PERFORMANCE = re.compile(r"^(?:(\d+)x\s*)?(?:Up to\s+)?(\d+(?:\.\d+)?)\s*Gigabit$")


def _total_gbps(performance: Any) -> float | None:
    match = _PERFORMANCE.match(performance.strip()) if isinstance(performance, str) else None
    return int(match.group(1) or 1) * float(match.group(2)) if match else None


def capability_from_instance_type(item: dict[str, Any], source: str) -> Capability:
    """DescribeInstanceTypes item -> Capability (the same mapping the shipped AWS table was built with).

    Bandwidth as AWS defines it: `NetworkInfo.NetworkPerformance` is the instance's total. The per-card
    `PeakBandwidthInGbps` / `BaselineBandwidthInGbps` figures do not add up to it: on g6e.48xlarge each of the
    4 cards says 400 while the instance has 400 in all (the cards share it), on p6-b200 each of the 8 cards
    says 200 while the instance has 3200. So the fabric's bandwidth is the total (the sum of the cards only
    when the total is not stated), and card 0, which carries the primary ENA interface, gets its own figure
    but never more than an even share of the total.

    Each value read must have the type the API gives it (values.py): an EfaSupported of "yes", a count of "4"
    raise UnreadableValue, and the type's capability is unknown rather than "no EFA"."""
    network = item.get("NetworkInfo") or {}
    cards = network.get("NetworkCards") or []
    efa = bool(values.flag(network, "EfaSupported", "NetworkInfo.EfaSupported"))
    card_gbps = [_card_gbps(card, i) for i, card in enumerate(cards)]
    total = _total_gbps(network.get("NetworkPerformance")) or (sum(card_gbps) or None)
    ethernet = card_gbps[0] if card_gbps and card_gbps[0] else total
    if ethernet and total and len(cards) > 1:
        ethernet = min(ethernet, total / len(cards))
    gpus = (item.get("GpuInfo") or {}).get("Gpus") or []
    neuron = (item.get("NeuronInfo") or {}).get("NeuronDevices") or []
    accelerators = sum(values.count(g, "Count", f"GpuInfo.Gpus[{i}].Count") or 0 for i, g in enumerate(gpus))
    accelerators += sum(
        values.count(n, "Count", f"NeuronInfo.NeuronDevices[{i}].Count") or 0 for i, n in enumerate(neuron)
    )
    name = (gpus[0].get("Name") if gpus else None) or (neuron[0].get("Name") if neuron else None)
    efa_info = network.get("EfaInfo") or {}
    most = values.count(efa_info, "MaximumEfaInterfaces", "NetworkInfo.EfaInfo.MaximumEfaInterfaces", required=efa)
    return Capability(
        instance_type=item["InstanceType"],
        provider="aws",
        fabric=FabricKind.EFA if efa else FabricKind.NONE,
        fabric_interfaces=(most or 0) if efa else 0,
        fabric_gbps=total if efa else None,
        ethernet_gbps=ethernet or None,
        network_cards=values.count(network, "MaximumNetworkCards", "NetworkInfo.MaximumNetworkCards"),
        accelerators=accelerators,
        accelerator_name=name,
        source=source,
    )


def _card_gbps(card: dict[str, Any], index: int) -> float:
    field = f"NetworkInfo.NetworkCards[{index}]"
    peak = values.number(card, "PeakBandwidthInGbps", f"{field}.PeakBandwidthInGbps")
    return peak or values.number(card, "BaselineBandwidthInGbps", f"{field}.BaselineBandwidthInGbps") or 0.0
