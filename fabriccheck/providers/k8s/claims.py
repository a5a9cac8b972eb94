"""Dynamic Resource Allocation (`resource.k8s.io` v1, v1beta1, v1beta2): the devices a pod's ResourceClaims give
it, by kind (GPUs, fabric NICs, IMEX channels), beside its device-plugin resources. An allocated claim says what it
got (`status.allocation.devices.results[]`: request, driver, pool, device); before allocation, its spec (or its
ResourceClaimTemplate's) says what it asks for (per request: device class, `ExactCount` with `count`, or `All`).
A device class is known by its name or, for a class of another name, by the driver its DeviceClass selects
(`device.driver == "..."`); a class known by neither is named, and the pod's fabric is not judged. ResourceSlices say
how many devices `All` takes on the pod's node (those of the class's driver), and whether an allocated NIC has RDMA
(kubernetes-sigs/dranet publishes `rdma` per device: a NIC without it is not the fabric).

Shapes: the Kubernetes API reference, resource.k8s.io/v1 ResourceClaim, ResourceClaimTemplate, DeviceClass,
ResourceSlice (kubernetes.io/docs/reference/kubernetes-api/workload-resources/resource-claim-v1/; v1 nests a
request's class under `exactly`, v1beta1 keeps it on the request: kubernetes.io/docs/concepts/scheduling-eviction/
dynamic-resource-allocation/); a pod's `spec.resourceClaims[]` (resourceClaimName or resourceClaimTemplateName)
and `status.resourceClaimStatuses[]` (the claim made from a template for it); NVIDIA's ComputeDomain
(resource.nvidia.com/v1beta1, `spec.channel.resourceClaimTemplate.name`: GoogleCloudPlatform/
container-engine-accelerators gpudirect-rdma/nccl-test-a4x-max-jobset.yaml, copy in /work/shared/samples/k8s).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from fabriccheck.model import MAX_COUNT

# The kinds of device a pod's claims give it, as the judging counts them.
GPU = "gpu"
FABRIC_NIC = "fabric-nic"  # an EFA interface, an InfiniBand / RoCE NIC
IMEX_CHANNEL = "imex-channel"  # an IMEX channel of a ComputeDomain: multi-node NVLink between pods
OTHER = "other"  # known, and nothing the judging counts (the ComputeDomain daemon's own claim)
ALL = MAX_COUNT  # allocationMode All before allocation: every matching device of the node (the caller caps it)

# Device classes by name, each with its source.
KNOWN_CLASSES = {
    # AWS containers blog "Simplify AI infrastructure for AWS Trainium and Elastic Fabric Adapter with Kubernetes
    # DRA" (aws.amazon.com/blogs/containers/...) and karpenter.sh/docs/tasks/dra: `deviceClassName:
    # efa.networking.k8s.aws`; Neuron devices `neuron.aws.com` in the same template.
    "efa.networking.k8s.aws": FABRIC_NIC,
    "neuron.aws.com": GPU,
    # NVIDIA/k8s-dra-driver-gpu: the classes its chart installs (`kubectl get deviceclass` in its README):
    # gpu.nvidia.com, mig.nvidia.com, vfio.gpu.nvidia.com, compute-domain-default-channel.nvidia.com (the IMEX
    # channel workload pods claim), compute-domain-daemon.nvidia.com (the IMEX daemon's own).
    "gpu.nvidia.com": GPU,
    "mig.nvidia.com": GPU,
    "vfio.gpu.nvidia.com": GPU,
    "compute-domain-default-channel.nvidia.com": IMEX_CHANNEL,
    "compute-domain-daemon.nvidia.com": OTHER,
    # GKE A4X Max RDMA NICs (GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma/
    # nccl-test-a4x-max-jobset.yaml: `deviceClassName: mrdma.google.com`, count 8).
    "mrdma.google.com": FABRIC_NIC,
    # kubernetes-sigs/dranet (also GKE's managed DRANET): DeviceClass `dranet` selecting `device.driver ==
    # "dra.net"`, RDMA NICs claimed with `device.attributes["dra.net"].rdma == true`.
    "dranet": FABRIC_NIC,
}
# Drivers a DeviceClass of another name may select (same sources as above).
_KNOWN_DRIVERS = {"gpu.nvidia.com": GPU, "dra.net": FABRIC_NIC, "neuron.aws.com": GPU}
_COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
_DRIVER = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class PodClaims:
    """What a pod's claims give it: devices by kind, and what could not be told (words naming the class, claim or
    template); `used` says whether the pod has any claim at all."""

    devices: tuple[tuple[str, int], ...] = ()
    unknown: tuple[str, ...] = ()
    used: bool = False

    def count(self, kind: str) -> int:
        return sum(n for k, n in self.devices if k == kind)


def _name(item: dict[str, Any]) -> str:
    return str((item.get("metadata") or {}).get("name") or "")


def _namespaced(item: dict[str, Any]) -> tuple[str, str]:
    meta = item.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def _requests(devices: dict[str, Any]) -> dict[str, tuple[str, str, int]]:
    """Each request of a claim spec by name: (device class, allocation mode, count). v1 and v1beta2 nest them under
    `exactly`; v1beta1 keeps them on the request. With `firstAvailable`, the first (preferred) subrequest."""
    found: dict[str, tuple[str, str, int]] = {}
    for request in devices.get("requests") or ():
        if not isinstance(request, dict):
            continue
        nested = request.get("exactly")
        exact: dict[str, Any] = nested if isinstance(nested, dict) else request
        options = [o for o in request.get("firstAvailable") or () if isinstance(o, dict)]
        if not exact.get("deviceClassName") and options:
            exact = options[0]
        mode = str(exact.get("allocationMode") or "ExactCount")
        count = exact.get("count")
        number = count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 1
        found[str(request.get("name") or "")] = (str(exact.get("deviceClassName") or ""), mode, number)
    return found


class Claims:
    """One cluster's DRA objects, and the devices each pod's claims give it."""

    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.read = {plural for plural in ("resourceclaims", "resourceclaimtemplates") if plural in items}
        self.claims = {_namespaced(i): i for i in items.get("resourceclaims", [])}
        self.templates = {
            _namespaced(i): ((i.get("spec") or {}).get("spec") or {}).get("devices") or {}
            for i in items.get("resourceclaimtemplates", [])
        }
        # A ComputeDomain stands for the channel template NVIDIA's controller makes from it (same namespace).
        for domain in items.get("computedomains", []):
            namespace, _ = _namespaced(domain)
            channel = ((domain.get("spec") or {}).get("channel") or {}).get("resourceClaimTemplate") or {}
            if channel.get("name"):
                request = {"name": "channel", "exactly": {"deviceClassName": IMEX_CLASS}}
                self.templates.setdefault((namespace, str(channel["name"])), {"requests": [request]})
        self.class_kinds = dict(KNOWN_CLASSES)
        self.class_drivers: dict[str, str] = {}
        for device_class in items.get("deviceclasses", []):
            name, driver = _name(device_class), _driver(device_class)
            if name and driver:
                self.class_drivers[name] = driver
            if name and name not in self.class_kinds:
                kind = _class_kind(device_class)
                if kind is not None:
                    self.class_kinds[name] = kind
        self.slices = _Slices(items.get("resourceslices"))

    def of_pod(self, pod: dict[str, Any], namespace: str) -> PodClaims:
        """The devices the pod's claims give it (an allocated claim's results, else its or its template's
        requests)."""
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        node = str(spec.get("nodeName") or "")
        made = {
            str(s.get("name")): str(s.get("resourceClaimName"))
            for s in status.get("resourceClaimStatuses") or ()
            if isinstance(s, dict) and s.get("resourceClaimName")
        }
        devices: Counter[str] = Counter()
        unknown: list[str] = []
        entries = [c for c in spec.get("resourceClaims") or () if isinstance(c, dict)]
        for entry in entries:
            name = str(entry.get("name") or "")
            claim_name = entry.get("resourceClaimName") or made.get(name)
            claim = self.claims.get((namespace, str(claim_name))) if claim_name else None
            if claim is not None:
                self._claim(claim, devices, unknown, node)
            elif entry.get("resourceClaimTemplateName"):
                template = self.templates.get((namespace, str(entry["resourceClaimTemplateName"])))
                if template is None:
                    unknown.append(self._missing("ResourceClaimTemplate", entry["resourceClaimTemplateName"]))
                else:
                    self._asked(_requests(template), devices, unknown, node)
            else:
                unknown.append(self._missing("ResourceClaim", claim_name or name))
        found = tuple(sorted((k, min(n, ALL)) for k, n in devices.items() if k != OTHER and n > 0))
        return PodClaims(found, tuple(dict.fromkeys(unknown)), bool(entries))

    def _missing(self, kind: str, name: object) -> str:
        plural = kind.lower() + "s"
        where = "" if plural in self.read else f" ({plural} were not read)"
        return f"{kind} {name} not found{where}"

    def _claim(self, claim: dict[str, Any], devices: Counter[str], unknown: list[str], node: str) -> None:
        asked = _requests((claim.get("spec") or {}).get("devices") or {})
        allocation = (claim.get("status") or {}).get("allocation") or {}
        results = [r for r in (allocation.get("devices") or {}).get("results") or () if isinstance(r, dict)]
        if not results:
            self._asked(asked, devices, unknown, node)
            return
        for result in results:
            request = str(result.get("request") or "").split("/", 1)[0]  # "name/subrequest" with firstAvailable
            device_class = asked.get(request, ("", "", 0))[0]
            kind = self.class_kinds.get(device_class) or _KNOWN_DRIVERS.get(str(result.get("driver") or ""))
            if kind is None:
                unknown.append(f"device class {device_class or result.get('driver')} (not one fabriccheck knows)")
            elif kind == FABRIC_NIC and self.slices.not_rdma(result):
                devices[OTHER] += 1  # a NIC its slice says has no RDMA (dranet's `rdma: false`): not the fabric
            else:
                devices[kind] += 1

    def _asked(
        self, asked: dict[str, tuple[str, str, int]], devices: Counter[str], unknown: list[str], node: str
    ) -> None:
        for device_class, mode, number in asked.values():
            kind = self.class_kinds.get(device_class)
            if kind is None:
                unknown.append(f"device class {device_class or '(none)'} (not one fabriccheck knows)")
            elif mode == "All":
                # Every device of the class's driver the node's slices publish, when they say; else all the node has.
                published = self.slices.published.get((node, self.class_drivers.get(device_class, "")))
                devices[kind] += published if published is not None else ALL
            else:
                devices[kind] += number


IMEX_CLASS = "compute-domain-default-channel.nvidia.com"


class _Slices:
    """What the ResourceSlices publish: devices by (driver, pool, name) with their attributes, and how many each
    node's driver publishes. v1 and v1beta2 keep a device's attributes on it, v1beta1 under `basic`."""

    def __init__(self, items: list[dict[str, Any]] | None) -> None:
        self.attributes: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.published: Counter[tuple[str, str]] = Counter()
        for item in items or ():
            spec = item.get("spec") or {}
            driver, pool = str(spec.get("driver") or ""), str((spec.get("pool") or {}).get("name") or "")
            for device in spec.get("devices") or ():
                if not isinstance(device, dict):
                    continue
                attributes = device.get("attributes") or (device.get("basic") or {}).get("attributes") or {}
                self.attributes[(driver, pool, str(device.get("name") or ""))] = attributes
                if spec.get("nodeName"):
                    self.published[(str(spec["nodeName"]), driver)] += 1

    def not_rdma(self, result: dict[str, Any]) -> bool:
        """Whether the allocated device's slice says it has no RDMA (`rdma` or `<driver>/rdma`: {bool: false})."""
        driver = str(result.get("driver") or "")
        attributes = self.attributes.get((driver, str(result.get("pool") or ""), str(result.get("device") or "")))
        value = (attributes or {}).get("rdma") or (attributes or {}).get(f"{driver}/rdma")
        return isinstance(value, dict) and value.get("bool") is False


def _driver(device_class: dict[str, Any]) -> str | None:
    for selector in (device_class.get("spec") or {}).get("selectors") or ():
        match = _DRIVER.search(str(((selector or {}).get("cel") or {}).get("expression") or ""))
        if match is not None:
            return match[1]
    return None


def _class_kind(device_class: dict[str, Any]) -> str | None:
    """The kind of device a DeviceClass of another name selects, from the driver its CEL selector names."""
    for selector in (device_class.get("spec") or {}).get("selectors") or ():
        expression = str(((selector or {}).get("cel") or {}).get("expression") or "")
        match = _DRIVER.search(expression)
        if match is None:
            continue
        driver = match[1]
        if driver == _COMPUTE_DOMAIN_DRIVER:
            return IMEX_CHANNEL if "channel" in expression else OTHER
        if driver in _KNOWN_DRIVERS:
            return _KNOWN_DRIVERS[driver]
    return None
