"""`fabriccheck plan FILE`: read the JSON of `terraform show -json` (OpenTofu's `tofu show -json` is the same
format) into the resources a plan would leave, with their known values, what is unknown until apply, and their
configuration expressions, so each cloud's plan module (providers/<cloud>/plan.py) can map them to the model.

Format (Terraform "JSON Output Format", format_version 1.x): `planned_values.root_module` holds resources and
`child_modules` at any depth; `resource_changes[]` holds each instance's `change.actions`, `after` and
`after_unknown`; `configuration` holds each module's resource blocks as `expressions` (a `constant_value` or
the `references` it reads) and `module_calls`; `prior_state` holds what exists now. A value unknown until apply is
absent from `after` and `true` in `after_unknown` (an element of a list may be unknown alone): such a value is
resolved through the references of its expression (a security group's id is the group this plan creates), else
stays unknown, never a default. A value unknown with no expression at all is one the configuration leaves to the
provider (aws_instance.placement_group, a NIC's subnetwork): each cloud's module says what that means for it, as
the cloud would (no placement group; the network's own subnetwork). Terraform leaves `dynamic` blocks out of the
configuration, so a value inside one is unknown, not unset. (Terraform, internal/command/jsonconfig/expression.go.)

Imports nothing heavy: `fabriccheck plan --help` must stay fast.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabriccheck import pipes
from fabriccheck.errors import FabricCheckError
from fabriccheck.sources.terraform_resource import (
    PlanResource,
    Resolved,
    any_true,
    distinct,
    dotted,
    texts,
    unknown_value,
)

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory

_MODULE_STEP = re.compile(r'module\.([A-Za-z0-9_-]+)(\[(?:"[^"]*"|\d+)\])?\.?')
_INDEX = re.compile(r'^(.*?)\[("(?:[^"\\]|\\.)*"|\d+)\]$')
_RESOURCE_REF = re.compile(
    r'^([A-Za-z][A-Za-z0-9_-]*)\.([A-Za-z_][A-Za-z0-9_-]*)(\[("[^"]*"|\d+)\])?(?:\.([A-Za-z0-9_]+))?'
)
# Attributes that name the resource itself: a reference through any of them stands for the resource, which each
# cloud's plan module then names as its model does (a network by its id, a placement group by its name).
IDENTITY_ATTRIBUTES = frozenset({"id", "arn", "name", "self_link", "self_link_unique", "placement_group_id"})
_MAX_DEPTH = 16


def _module_path(module_address: str) -> tuple[str, ...]:
    """'module.a["x"].module.b' -> ('a', 'b'): the configuration keys module calls without instance keys."""
    return tuple(m.group(1) for m in _MODULE_STEP.finditer(module_address))


def _parent_module(module_address: str) -> tuple[str, str]:
    """'module.a[0].module.b' -> ('module.a[0]', 'b')."""
    steps = list(_MODULE_STEP.finditer(module_address))
    last = steps[-1]
    return module_address[: last.start()].rstrip("."), last.group(1)


def _base(address: str) -> str:
    match = _INDEX.match(address)
    return match.group(1) if match else address


def _provider_type(name: Any) -> str:
    """'registry.terraform.io/hashicorp/aws' -> 'aws'; 'registry.opentofu.org/hashicorp/google-beta' -> 'google'."""
    text = str(name or "").rsplit("/", 1)[-1]
    return "google" if text == "google-beta" else text


class Plan:
    """A parsed plan: the resources it would leave, indexed for reference resolution."""

    def __init__(self, doc: dict[str, Any], where: str) -> None:
        self.where = where
        self.doc = doc
        self.terraform_version = str(doc.get("terraform_version") or "")
        self.variables: dict[str, Any] = {
            k: v.get("value") for k, v in (doc.get("variables") or {}).items() if isinstance(v, dict)
        }
        configuration = doc.get("configuration") or {}
        self.provider_config: dict[str, Any] = configuration.get("provider_config") or {}
        self._root_config: dict[str, Any] = configuration.get("root_module") or {}
        self.resources: list[PlanResource] = []
        self.destroyed: list[str] = []
        self.by_address: dict[str, PlanResource] = {}
        self.by_base: dict[str, list[PlanResource]] = {}
        self.by_type: dict[str, list[PlanResource]] = {}
        self._blocks: dict[tuple[str, ...], dict[str, dict[str, Any]]] = {}  # module path -> block address -> block
        self._by_id: dict[str, PlanResource] | None = None
        self._read()

    # ---------------------------------------------------------------------------------------- reading

    def _read(self) -> None:
        changes: dict[str, dict[str, Any]] = {}
        for change in self.doc.get("resource_changes") or ():
            if isinstance(change, dict) and isinstance(change.get("address"), str):
                changes[change["address"]] = change
        planned: dict[str, dict[str, Any]] = {}
        modules: dict[str, str] = {}
        for module, item in _module_resources((self.doc.get("planned_values") or {}).get("root_module") or {}):
            planned[item["address"]] = item
            modules[item["address"]] = module
        prior: dict[str, dict[str, Any]] = {}
        prior_values = (self.doc.get("prior_state") or {}).get("values") or {}
        for _, item in _module_resources(prior_values.get("root_module") or {}):
            prior[item["address"]] = item
        addresses = list(planned) + [a for a in changes if a not in planned]
        for address in addresses:
            change = changes.get(address, {})
            item = planned.get(address) or {}
            mode = item.get("mode") or change.get("mode") or "managed"
            if mode != "managed":
                continue  # data sources are read, not launched; references to them stay unknown if not known
            actions = list((change.get("change") or {}).get("actions") or ["no-op"])
            if actions == ["delete"] or (actions == ["forget"]):
                self.destroyed.append(address)
                continue
            body = change.get("change") or {}
            values = item.get("values")
            if values is None:
                values = body.get("after") or (prior.get(address) or {}).get("values") or {}
            unknown = body.get("after_unknown") or {}
            action = "replace" if "delete" in actions and "create" in actions else actions[0]
            module = str(modules.get(address) or change.get("module_address") or "")
            resource = PlanResource(
                address=address,
                base=_base(address),
                module=module,
                type=str(item.get("type") or change.get("type") or ""),
                name=str(item.get("name") or change.get("name") or ""),
                index=item.get("index", change.get("index")),
                provider=_provider_type(item.get("provider_name") or change.get("provider_name")),
                values=values if isinstance(values, dict) else {},
                unknown=unknown,
                action=action,
            )
            config = self._config_of(resource)
            resource.config = config
            resource.provider_config_key = str(config.get("provider_config_key") or resource.provider)
            self.resources.append(resource)
            self.by_address[address] = resource
            self.by_base.setdefault(resource.base, []).append(resource)
            self.by_type.setdefault(resource.type, []).append(resource)

    def _config_module(self, module: str) -> dict[str, Any]:
        config = self._root_config
        for name in _module_path(module):
            call = (config.get("module_calls") or {}).get(name) or {}
            config = call.get("module") or {}
        return config

    def _config_of(self, resource: PlanResource) -> dict[str, Any]:
        path = _module_path(resource.module)
        blocks = self._blocks.get(path)
        if blocks is None:
            blocks = self._blocks[path] = {
                str(b.get("address")): b
                for b in self._config_module(resource.module).get("resources") or ()
                if isinstance(b, dict) and b.get("mode", "managed") == "managed"
            }
        return blocks.get(f"{resource.type}.{resource.name}") or {}

    # ---------------------------------------------------------------------------------------- values

    def of_type(self, *types: str) -> list[PlanResource]:
        return [r for t in types for r in self.by_type.get(t, ())]

    def expression(self, resource: PlanResource, *path: str | int) -> Any:
        """The configuration expression at `path` (blocks are lists of expression maps)."""
        expr: Any = resource.config.get("expressions") or {}
        for step in path:
            if isinstance(expr, dict) and ("references" in expr or "constant_value" in expr):
                return expr  # an attribute set as a whole (a list of objects): its references cover every part
            if isinstance(step, int):
                expr = expr[step] if isinstance(expr, list) and -len(expr) <= step < len(expr) else None
            else:
                expr = expr.get(step) if isinstance(expr, dict) else None
            if expr is None:
                return None
        return expr

    def configured(self, resource: PlanResource, *path: str | int) -> bool | None:
        """Whether the configuration sets the value at `path`; None when it cannot tell: the resource's block is
        not in the configuration, or a nested block on the way is not (Terraform leaves `dynamic` blocks out)."""
        if not resource.config:
            return None
        expr: Any = resource.config.get("expressions") or {}
        for depth, step in enumerate(path):
            if isinstance(expr, dict) and ("references" in expr or "constant_value" in expr):
                return True
            if isinstance(step, int):
                expr = expr[step] if isinstance(expr, list) and -len(expr) <= step < len(expr) else None
            else:
                expr = expr.get(step) if isinstance(expr, dict) else None
            if expr is None:
                return False if depth == len(path) - 1 else None
        return True

    def unset(self, resource: PlanResource, *path: str | int) -> bool:
        """The value at `path` is unknown only because the configuration leaves it to the provider to choose."""
        return resource.unknown_at(*path) and self.configured(resource, *path) is False

    def resolve(
        self, resource: PlanResource, *path: str | int, unset: list[Resolved] | None = None, depth: int = 0
    ) -> list[Resolved]:
        """What the value at `path` names: known values as strings (a scalar as one); a value known only after apply
        as what its expression's references name (`follow`), else an unknown value naming what it waits for. A
        value the configuration leaves to the provider is `unset` when the caller says what that means."""
        flag = resource.unknown_flag(*path)
        value = resource.known(*path)
        if not any_true(flag):
            return texts(value)
        known: list[Resolved] = []
        if isinstance(flag, list) and isinstance(value, list):  # a list known in part: its known elements stand
            flags = [*flag, *[True] * (len(value) - len(flag))]
            known = [t for v, f in zip(value, flags, strict=False) if not any_true(f) for t in texts(v)]
        expr = self.expression(resource, *path)
        refs = expr.get("references") if isinstance(expr, dict) else None
        if refs:
            followed = self.follow(resource.module, refs, resource.index, depth)
            return distinct(known + followed) if known else followed
        if unset is not None and self.configured(resource, *path) is False:
            return known + unset
        return [*known, unknown_value(dotted(resource.base, path))]

    def strings(
        self, resource: PlanResource, *path: str | int, attr: str = "id", unset: list[Resolved] | None = None
    ) -> list[str]:
        """The value at `path` as strings: a resource of this plan it names is its `attr` (its address while that is
        unknown, which names it in every fact built from this plan)."""
        found = self.resolve(resource, *path, unset=unset)
        return [self.attribute(r, attr) if isinstance(r, PlanResource) else r for r in found]

    def string(
        self, resource: PlanResource, *path: str | int, attr: str = "id", unset: list[Resolved] | None = None
    ) -> str | None:
        found = self.strings(resource, *path, attr=attr, unset=unset)
        return found[0] if found else None

    def target(self, resource: PlanResource, *path: str | int) -> PlanResource | None:
        """The resource of this plan that the value at `path` names (by its expression, or by its known id or
        address), if any."""
        for item in self.resolve(resource, *path):
            if isinstance(item, PlanResource):
                return item
            found = self.by_address.get(item) or self.by_id().get(item)
            if found is not None:
                return found
        return None

    def by_id(self) -> dict[str, PlanResource]:
        """The resources whose id is known (those that exist already), by id."""
        if self._by_id is None:
            self._by_id = {r.values["id"]: r for r in self.resources if isinstance(r.values.get("id"), str)}
        return self._by_id

    def follow(self, module: str, refs: list[str], index: Any = None, depth: int = 0) -> list[Resolved]:
        """What `refs` (as Terraform lists them: `aws_security_group.efa.id`, `aws_security_group.efa`) name in the
        scope of `module`: a resource of this plan (a reference through one of its IDENTITY_ATTRIBUTES, or to
        the resource itself), another attribute's value (followed in turn while unknown), a variable's or a
        module output's value, or an unknown value naming a reference that cannot be followed. Each object is
        followed once: Terraform lists every step of a reference (`x.y[0].id`, `x.y[0]`, `x.y`)."""
        found: list[Resolved] = []
        seen: set[str] = set()
        for ref in refs:
            head, _, rest = ref.partition(".") if isinstance(ref, str) else ("", "", "")
            if not rest or head in ("count", "each", "self", "path", "terraform"):
                continue
            if head == "var":
                name = rest.split(".", 1)[0].split("[", 1)[0]
                if name not in seen:
                    seen.add(name)
                    found += self._variable(module, name, depth)
            elif head == "module":
                call, _, output = rest.partition(".")
                output = output.split(".", 1)[0].split("[", 1)[0]
                name = call.split("[", 1)[0]
                if output and f"module.{call}.{output}" not in seen:
                    seen.update({f"module.{call}.{output}", f"module.{name}"})
                    found += self._output(module, call, output, ref, depth)
                elif not output and f"module.{name}" not in seen:  # the module as a whole: nothing to follow
                    seen.add(f"module.{name}")
                    found.append(unknown_value(ref))
            elif head in ("data", "local"):
                step = ".".join(ref.split(".")[:3] if head == "data" else ref.split(".")[:2])
                if step not in seen:
                    seen.add(step)
                    found.append(unknown_value(ref))
            else:
                found += self._resource_ref(module, ref, index, depth, seen)
        return distinct(found) if len(found) > 1 else found

    def _resource_ref(self, module: str, ref: str, index: Any, depth: int, seen: set[str]) -> list[Resolved]:
        """A reference to a managed resource: the instances it names, or an unknown value when this plan has none
        (destroyed, or a resource of another state). `aws_x.y` alone, from `aws_x.y[count.index]`, names the
        instance of the same index."""
        match = _RESOURCE_REF.match(ref)
        if not match:
            return []
        local = f"{match.group(1)}.{match.group(2)}"
        base = f"{module}.{local}" if module else local
        key = match.group(4)
        # `aws_x.y[0].id`, `aws_x.y[0]` and `aws_x.y` name one instance, while `aws_x.y[1].id` is another one.
        step = f"{base}{key}" if key is not None else base
        if step in seen or (key is None and f"{base}[" in seen):
            return []
        seen.update({step, f"{base}["} if key is not None else {step})
        targets = self.by_base.get(base)
        if not targets:
            return [unknown_value(ref)]
        if key is not None:
            wanted = key.strip('"') if key.startswith('"') else int(key)
            picked = [t for t in targets if t.index == wanted]
        elif len(targets) > 1 and any(t.index == index for t in targets):
            picked = [t for t in targets if t.index == index]
        else:
            picked = targets
        attr = match.group(5)
        if attr is None or attr in IDENTITY_ATTRIBUTES:
            return list(picked)
        return [item for target in picked for item in self._value(target, attr, depth)]

    def _value(self, target: PlanResource, attr: str, depth: int) -> list[Resolved]:
        """Another attribute of a resource of this plan (a subnetwork's network): its value, or, unknown, what its
        own expression names."""
        if depth >= _MAX_DEPTH:
            return [unknown_value(f"{target.address}.{attr}")]
        return self.resolve(target, attr, depth=depth + 1)

    def attribute(self, target: PlanResource, attr: str) -> str:
        """A resource's attribute as another resource reads it: its value, or its address while unknown (the same
        address names the resource in every fact built from this plan)."""
        value = target.known(attr)
        if value is not None and not target.unknown_at(attr) and not isinstance(value, (dict, list)):
            return str(value)
        return target.address

    def _variable(self, module: str, name: str, depth: int) -> list[Resolved]:
        """A variable's value: the root's from the plan, a module's through the expression its call sets (a bool
        or number, as a condition reads, names nothing and is left out)."""
        if not module:
            value = self.variables.get(name)
            return [unknown_value(f"var.{name}")] if value is None else texts(value)
        if depth > _MAX_DEPTH:
            return [unknown_value(f"var.{name}")]
        parent, call = _parent_module(module)
        call_config = (self._config_module(parent).get("module_calls") or {}).get(call) or {}
        expr = (call_config.get("expressions") or {}).get(name)
        if isinstance(expr, dict) and "constant_value" in expr:
            return texts(expr["constant_value"])
        refs = expr.get("references") if isinstance(expr, dict) else None
        if not refs:
            return [unknown_value(f"var.{name}")]
        return self.follow(parent, refs, None, depth + 1)

    def _output(self, module: str, call: str, output: str, ref: str, depth: int) -> list[Resolved]:
        """A child module's output, followed through its expression inside that module instance (`module.x[0].y`
        names one instance; `module.x.y` of a module with count or for_each does not: it stays unknown)."""
        name, _, key = call.partition("[")
        child = f"{module}.module.{name}" if module else f"module.{name}"
        config = self._config_module(child)
        expr = ((config.get("outputs") or {}).get(output) or {}).get("expression")
        instanced = any(r.module.startswith(f"{child}[") for r in self.resources)
        if key:
            child = f"{child}[{key}"
        elif instanced:
            return [unknown_value(ref)]
        if depth > _MAX_DEPTH or not isinstance(expr, dict):
            return [unknown_value(ref)]
        if "constant_value" in expr:
            return texts(expr["constant_value"])
        refs = expr.get("references")
        return self.follow(child, refs, None, depth + 1) if refs else [unknown_value(ref)]

    def constant(self, resource: PlanResource | None, expr: Any) -> Any:
        """A provider or resource setting: its constant, or a root variable it names."""
        if not isinstance(expr, dict):
            return None
        if "constant_value" in expr:
            return expr["constant_value"]
        refs = [r for r in expr.get("references") or () if isinstance(r, str) and r.startswith("var.")]
        if refs and (resource is None or not resource.module):
            return self.variables.get(refs[0][4:].split(".", 1)[0])
        return None

    def provider_setting(self, resource: PlanResource, key: str) -> Any:
        """A setting of the provider block the resource uses (region, project, subscription_id ...)."""
        candidates = [resource.provider_config_key, resource.provider_config_key.rsplit(":", 1)[-1], resource.provider]
        for candidate in candidates:
            block = self.provider_config.get(candidate)
            if isinstance(block, dict):
                value = self.constant(None, (block.get("expressions") or {}).get(key))
                if value is not None:
                    return value
        return None


def _module_resources(module: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(module address, resource) of a planned_values / prior_state module and its child modules at any depth."""
    found: list[tuple[str, dict[str, Any]]] = []
    stack = [module]
    while stack:
        current = stack.pop()
        if not isinstance(current, dict):
            continue
        address = str(current.get("address") or "")
        found += [
            (address, r)
            for r in current.get("resources") or ()
            if isinstance(r, dict) and isinstance(r.get("address"), str)
        ]
        stack += list(reversed(current.get("child_modules") or ()))
    return found


# ---------------------------------------------------------------------------------------------- loading


def read_plan(path: str) -> Plan:
    """The plan at `path` ('-' for standard input), checked: a state file, an errored plan, an empty or cut file is
    one line naming what it is."""
    import orjson

    where = "standard input" if path == "-" else path
    if path != "-":
        pipes.refuse_named_pipe(path)
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise FabricCheckError(f"{where}: cannot read ({exc.strerror})") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        raise FabricCheckError(f"{where}: empty file (expected the output of terraform show -json PLANFILE)")
    if data.lstrip()[:2] == b"PK":
        raise FabricCheckError(
            f"{where}: a binary plan file; convert it first: terraform show -json {where} > plan.json"
        )
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FabricCheckError(f"{where}: not valid JSON, or cut short ({exc})") from None
    return check_plan(doc, where)


def check_plan(doc: Any, where: str) -> Plan:
    if not isinstance(doc, dict):
        raise FabricCheckError(f"{where}: not a Terraform plan (expected a JSON object from terraform show -json)")
    version = doc.get("format_version")
    # 1.x since Terraform 1.0 (OpenTofu too); 0.1 and 0.2 (Terraform 0.12 to 0.15) have the same fields.
    if not isinstance(version, str) or not version.startswith(("1.", "0.1", "0.2")):
        raise FabricCheckError(
            f"{where}: field format_version: {version!r} is not a plan format this fabriccheck reads (1.x)"
        )
    if "planned_values" not in doc and "resource_changes" not in doc:
        if "values" in doc:
            raise FabricCheckError(
                f"{where}: a state file (terraform show -json without a plan), not a plan; run "
                "terraform plan -out plan.out && terraform show -json plan.out > plan.json"
            )
        raise FabricCheckError(f"{where}: not a Terraform plan (no planned_values or resource_changes)")
    if doc.get("errored") is True:
        raise FabricCheckError(f"{where}: the plan errored (errored: true); fix the plan's errors and plan again")
    return Plan(doc, where)


def load_plan(path: str, terraform_dir: Path | None = None) -> Inventory:
    """The plan at `path` as an inventory: each cloud's resources mapped by its provider's plan module; with
    `terraform_dir`, each node carries the file and line of its resource block."""
    from fabriccheck.cloud import resolve
    from fabriccheck.inventory import Inventory
    from fabriccheck.provider import declarations
    from fabriccheck.sources.shape import unexpected_shape

    where = "standard input" if path == "-" else path
    with unexpected_shape(where):  # a hand-edited or misshapen plan is one line naming the file
        plan = read_plan(path)
        inventory = Inventory(source=f"terraform plan {plan.where}")
        planned = {r.provider for r in plan.resources}  # Terraform's provider names (aws, azurerm, google)
        for declared in sorted(declarations(), key=lambda d: min(d.terraform_providers, default="")):
            if planned & set(declared.terraform_providers):
                declared.map_plan(plan, inventory)
        resolve(inventory)
    if terraform_dir is not None:
        from fabriccheck.sources.terraform_files import block_locations, config_address

        found = block_locations(terraform_dir)
        for node in [*inventory.nodes, *inventory.specs]:
            if node.source is not None:
                block = found.get(config_address(node.source.address))
                if block is not None:
                    node.source.file, node.source.line = block.file, block.line
    inventory.notes += _plan_notes(plan, inventory)
    return inventory


def _plan_notes(plan: Plan, inventory: Inventory) -> list[str]:
    notes = []
    judged = len(inventory.nodes) + len(inventory.specs)
    if plan.destroyed and not plan.resources:
        notes.append(f"the plan only destroys resources ({len(plan.destroyed)}): nothing to judge")
    elif plan.destroyed:
        notes.append(f"{len(plan.destroyed)} resource(s) the plan destroys were judged as absent")
    if plan.resources and not judged:
        notes.append(
            f"the plan's {len(plan.resources)} resource(s) launch no instance, VM or scaling group fabriccheck judges"
        )
    return notes
