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

from fabriccheck.errors import FabricCheckError
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
IMEX_CLASS = "compute-domain-default-channel.nvidia.com"
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


def _field(obj: Any, path: str, where: str) -> Any:
    """The value at a dotted path of an object, None where a part is absent; a part that is not an object is one
    line naming the object and the field (bad input, never a traceback)."""
    value, walked = obj, ""
    for key in path.split("."):
        if value is None:
            return None
        if not isinstance(value, dict):
            raise FabricCheckError(f"{where}: {walked or 'the object'} is not an object")
        walked = f"{walked}.{key}" if walked else key
        value = value.get(key)
    return value


def _objects(obj: Any, path: str, where: str) -> list[dict[str, Any]]:
    """The objects of a list field ([] when absent); anything else is one line naming the object and the field."""
    value = _field(obj, path, where)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise FabricCheckError(f"{where}: {path} is not a list of objects")
    return value


def _namespaced(item: dict[str, Any], plural: str) -> tuple[tuple[str, str], str]:
    """(namespace, name) of an object, and how an error names it."""
    meta = _field(item, "metadata", plural) or {}
    key = (str(_field(meta, "namespace", plural) or "default"), str(_field(meta, "name", plural) or ""))
    return key, f"{plural} {key[0]}/{key[1]}"


def _requests(devices: Any, where: str) -> dict[str, tuple[str, str, int]]:
    """Each request of a claim spec by name: (device class, allocation mode, count). v1 and v1beta2 nest them under
    `exactly`; v1beta1 keeps them on the request. With `firstAvailable`, the first (preferred) subrequest."""
    found: dict[str, tuple[str, str, int]] = {}
    for request in _objects(devices, "requests", where):
        nested = _field(request, "exactly", where)
        exact: dict[str, Any] = nested if isinstance(nested, dict) else request
        options = _objects(request, "firstAvailable", where)
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
        self.claims: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
        for item in items.get("resourceclaims", []):
            key, where = _namespaced(item, "resourceclaims")
            self.claims[key] = (item, where)
        self.templates: dict[tuple[str, str], dict[str, tuple[str, str, int]]] = {}
        for item in items.get("resourceclaimtemplates", []):
            key, where = _namespaced(item, "resourceclaimtemplates")
            self.templates[key] = _requests(_field(item, "spec.spec.devices", where), where)
        # A ComputeDomain stands for the channel template NVIDIA's controller makes from it (same namespace).
        for domain in items.get("computedomains", []):
            (namespace, _), where = _namespaced(domain, "computedomains")
            channel = _field(domain, "spec.channel.resourceClaimTemplate.name", where)
            if channel:
                self.templates.setdefault((namespace, str(channel)), {"channel": (IMEX_CLASS, "ExactCount", 1)})
        self.class_kinds = dict(KNOWN_CLASSES)
        self.class_drivers: dict[str, str] = {}
        for device_class in items.get("deviceclasses", []):
            (_, name), where = _namespaced(device_class, "deviceclasses")
            expressions = [
                str(_field(s, "cel.expression", where) or "") for s in _objects(device_class, "spec.selectors", where)
            ]
            driver = _driver(expressions)
            if name and driver:
                self.class_drivers[name] = driver
            if name and name not in self.class_kinds:
                kind = _class_kind(expressions)
                if kind is not None:
                    self.class_kinds[name] = kind
        self.slices = _Slices(items.get("resourceslices"))

    def of_pod(self, pod: dict[str, Any], namespace: str) -> PodClaims:
        """The devices the pod's claims give it (an allocated claim's results, else its or its template's
        requests)."""
        where = f"pods {namespace}/{_field(pod, 'metadata.name', 'pods')}"
        node = str(_field(pod, "spec.nodeName", where) or "")
        made = {
            str(s.get("name")): str(s.get("resourceClaimName"))
            for s in _objects(pod, "status.resourceClaimStatuses", where)
            if s.get("resourceClaimName")
        }
        devices: Counter[str] = Counter()
        unknown: list[str] = []
        entries = _objects(pod, "spec.resourceClaims", where)
        for entry in entries:
            name = str(entry.get("name") or "")
            claim_name = entry.get("resourceClaimName") or made.get(name)
            claim = self.claims.get((namespace, str(claim_name))) if claim_name else None
            if claim is not None:
                self._claim(claim[0], claim[1], devices, unknown, node)
            elif entry.get("resourceClaimTemplateName"):
                template = self.templates.get((namespace, str(entry["resourceClaimTemplateName"])))
                if template is None:
                    unknown.append(self._missing("ResourceClaimTemplate", entry["resourceClaimTemplateName"]))
                else:
                    self._asked(template, devices, unknown, node)
            else:
                unknown.append(self._missing("ResourceClaim", claim_name or name))
        found = tuple(sorted((k, min(n, ALL)) for k, n in devices.items() if k != OTHER and n > 0))
        return PodClaims(found, tuple(dict.fromkeys(unknown)), bool(entries))

    def _missing(self, kind: str, name: object) -> str:
        plural = kind.lower() + "s"
        where = "" if plural in self.read else f" ({plural} were not read)"
        return f"{kind} {name} not found{where}"

    def _claim(self, claim: dict[str, Any], where: str, devices: Counter[str], unknown: list[str], node: str) -> None:
        asked = _requests(_field(claim, "spec.devices", where), where)
        results = _objects(claim, "status.allocation.devices.results", where)
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


class _Slices:
    """What the ResourceSlices publish: devices by (driver, pool, name) with their attributes, and how many each
    node's driver publishes. v1 and v1beta2 keep a device's attributes on it, v1beta1 under `basic`."""

    def __init__(self, items: list[dict[str, Any]] | None) -> None:
        self.attributes: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.published: Counter[tuple[str, str]] = Counter()
        for item in items or ():
            _, where = _namespaced(item, "resourceslices")
            driver = str(_field(item, "spec.driver", where) or "")
            pool, node = str(_field(item, "spec.pool.name", where) or ""), _field(item, "spec.nodeName", where)
            for device in _objects(item, "spec.devices", where):
                attributes = _field(device, "attributes", where) or _field(device, "basic.attributes", where) or {}
                self.attributes[(driver, pool, str(device.get("name") or ""))] = attributes
                if node:
                    self.published[(str(node), driver)] += 1

    def not_rdma(self, result: dict[str, Any]) -> bool:
        """Whether the allocated device's slice says it has no RDMA (`rdma` or `<driver>/rdma`: {bool: false})."""
        driver = str(result.get("driver") or "")
        attributes = self.attributes.get((driver, str(result.get("pool") or ""), str(result.get("device") or "")))
        value = (attributes or {}).get("rdma") or (attributes or {}).get(f"{driver}/rdma")
        return isinstance(value, dict) and value.get("bool") is False


def _driver(expressions: list[str]) -> str | None:
    """The driver a DeviceClass's CEL selectors name (`device.driver == "..."`)."""
    for expression in expressions:
        match = _DRIVER.search(expression)
        if match is not None:
            return match[1]
    return None


def _class_kind(expressions: list[str]) -> str | None:
    """The kind of device a DeviceClass of another name selects, from the driver its CEL selector names."""
    driver = _driver(expressions)
    if driver == _COMPUTE_DOMAIN_DRIVER:
        return IMEX_CHANNEL if any("channel" in e for e in expressions) else OTHER
    return _KNOWN_DRIVERS.get(driver) if driver else None
