"""The NCCL and libfabric settings that reach a pod's ranks, wherever they are set: a container's `env` (a value, or
`valueFrom.configMapKeyRef`), its `envFrom` ConfigMaps (the values of those the dump or manifests hold; a Secret's
values are never read), and, for an MPIJob, what its launcher's `mpirun -x` passes the ranks on every worker.

Sources: the Kubernetes API reference, Container `env[]` / `envFrom[]` (configMapRef, secretRef, prefix);
Open MPI's mpirun(1) `-x NAME=VALUE` / `-x NAME` (export NAME, with the launcher's own value, to every rank);
the MPIJob launchers of aws-samples/awsome-distributed-training (eks-nccl-tests-mpijob.yaml: `-x FI_PROVIDER=efa`
in `command`) and Azure/aks-rdma-infiniband (aks-rccl-mpi-job.yaml: `bash -c` with `mpirun ... -x NAME=VALUE \\`
in `args`), copies in /work/shared/samples/k8s and k8s4.
"""

from __future__ import annotations

import itertools
import re
import shlex
from typing import Any

ENV_PREFIXES = ("NCCL_", "FI_")
_ASSIGNMENT = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_REFERENCE = re.compile(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$")

Env = tuple[tuple[str, str], ...]


class ConfigMaps:
    """The ConfigMaps a dump or the manifests hold, by (namespace, name), and what the pods' env named but nobody
    read: ConfigMaps not held, and Secrets (never read), as namespace/name."""

    def __init__(self, items: list[dict[str, Any]] | None) -> None:
        self.read = items is not None
        self.data: dict[tuple[str, str], dict[str, str]] = {}
        self.unread: set[str] = set()
        self.secrets: set[str] = set()
        for item in items or ():
            meta = _obj(item.get("metadata"))
            data = item.get("data") or {}
            key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
            self.data[key] = {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def get(self, namespace: str, name: str) -> dict[str, str] | None:
        found = self.data.get((namespace, name))
        if found is None:
            self.unread.add(f"{namespace}/{name}")
        return found

    def notes(self, cluster: str) -> list[str]:
        """What the report says of the env sources that were not read: settings there are not judged."""
        found = []
        if self.unread:
            where = "not in the dump or manifests" if self.read else "not read (no configmaps.json)"
            found.append(
                f"ConfigMaps {', '.join(sorted(self.unread))} (cluster {cluster}) that GPU pods take env from were "
                f"{where}: NCCL / libfabric settings there are not judged"
            )
        if self.secrets:
            found.append(
                f"Secrets {', '.join(sorted(self.secrets))} (cluster {cluster}) that GPU pods take env from are never "
                "read: NCCL / libfabric settings there are not judged"
            )
        return found


def container_env(
    container: dict[str, Any], config_maps: ConfigMaps | None, namespace: str = "default"
) -> list[tuple[str, str]]:
    """A container's NCCL_* and FI_* settings: its env values, the ConfigMap keys it refers to, its envFrom
    ConfigMaps' keys (with their prefix). What the dump does not hold is left out: a value not known is no finding."""
    found: list[tuple[str, str]] = []
    for source in _objs(container.get("envFrom")):
        secret = _obj(source.get("secretRef"))
        if config_maps is not None and secret.get("name"):
            config_maps.secrets.add(f"{namespace}/{secret['name']}")
        ref = _obj(source.get("configMapRef"))
        data = config_maps.get(namespace, str(ref["name"])) if config_maps and ref.get("name") else None
        prefix = str(source.get("prefix") or "")
        found += [(prefix + k, v) for k, v in (data or {}).items() if (prefix + k).startswith(ENV_PREFIXES)]
    for variable in _objs(container.get("env")):
        if not str(variable.get("name", "")).startswith(ENV_PREFIXES):
            continue
        name = str(variable["name"])
        if "value" in variable:
            found.append((name, str(variable["value"])))
            continue
        secret = _obj(_obj(variable.get("valueFrom")).get("secretKeyRef"))
        if config_maps is not None and secret.get("name"):
            config_maps.secrets.add(f"{namespace}/{secret['name']}")
        ref = _obj(_obj(variable.get("valueFrom")).get("configMapKeyRef"))
        data = config_maps.get(namespace, str(ref.get("name"))) if config_maps and ref.get("name") else None
        if data is not None and str(ref.get("key")) in data:
            found.append((name, data[str(ref["key"])]))
    return found


def _words(container: dict[str, Any]) -> list[str]:
    """The container's command and args as shell words: a `bash -c` script is split as the shell would."""
    words: list[str] = []
    parts = [p for key in ("command", "args") if isinstance(container.get(key), list) for p in container[key]]
    for part in parts:
        text = str(part)
        if any(c.isspace() for c in text.strip()):
            try:
                words += shlex.split(text.replace("\\\n", " "), comments=True)
            except ValueError:
                words += text.split()
        else:
            words.append(text)
    return words


def mpirun_env(container: dict[str, Any], own: dict[str, str]) -> Env:
    """The NCCL_* and FI_* settings a launcher container's mpirun passes its ranks: `-x NAME=VALUE`, and `-x NAME`
    with the value the launcher has (its env, or an `export NAME=VALUE` in its script). A value that is a shell
    variable the launcher does not set is left out."""
    words = _words(container)
    known = dict(own)
    for word in words:
        match = _ASSIGNMENT.match(word)
        if match and match[1].startswith(ENV_PREFIXES):
            known[match[1]] = match[2]
    passed: dict[str, str] = {}
    for flag, value in itertools.pairwise(words):
        if flag not in ("-x", "--x"):
            continue
        match = _ASSIGNMENT.match(value)
        name, setting = (match[1], match[2]) if match else (value, known.get(value))
        reference = _REFERENCE.match(setting or "")
        if reference is not None:
            setting = known.get(reference[1])
        if name.startswith(ENV_PREFIXES) and setting is not None and "$" not in setting:
            passed[name] = setting
    return tuple(sorted(passed.items()))


def _obj(value: Any) -> dict[str, Any]:
    """An object field, or {} for anything else: a misshapen env or launcher is read as having none (the pod's own
    shape is the normalizer's to refuse)."""
    return value if isinstance(value, dict) else {}


def _objs(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


class Launchers:
    """What each MPIJob's launcher passes its ranks, by workload (namespace/MPIJob/name)."""

    def __init__(self, config_maps: ConfigMaps | None) -> None:
        self.config_maps = config_maps
        self.by_workload: dict[str, Env] = {}

    def add(self, namespace: str, name: str, mpijob: dict[str, Any]) -> None:
        specs = _obj(_obj(mpijob.get("spec")).get("mpiReplicaSpecs"))
        launcher = next((_obj(v) for k, v in specs.items() if str(k).lower() == "launcher"), {})
        spec = _obj(_obj(launcher.get("template")).get("spec"))
        passed: dict[str, str] = {}
        for container in _objs(spec.get("containers")):
            own = dict(container_env(container, self.config_maps, namespace))
            passed.update(mpirun_env(container, own))
        if passed:
            self.by_workload[f"{namespace}/MPIJob/{name}"] = tuple(sorted(passed.items()))

    def env_of(self, workload: str) -> Env:
        return self.by_workload.get(workload, ())
