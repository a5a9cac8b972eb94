"""A VM's power state, as `az vm list -d` prints it and as the instance view gives it.

- `az vm list -d` (show details) adds `powerState`: the displayStatus of the instance view's PowerState/* status,
  e.g. "VM running", "VM deallocated" (Azure/azure-cli@457e8bc222b3d1de54b18a34e4f4663fc792cf0f
  src/azure-cli/azure/cli/command_modules/vm/custom.py, get_vm_details); "" when the view has none.
- The instance view (ARM `properties.instanceView`, flattened to `instanceView` by `az`: what
  `VirtualMachines.ListAll?statusOnly=true` and `az vmss list-instances --expand instanceView` give) lists
  `statuses` whose code is "PowerState/running" and so on (azure-rest-api-specs@ba16d1ab3479ee43b0db0da3dbc19cc2306a221e
  .../ComputeRP/stable/2024-07-01/examples/virtualMachineExamples/VirtualMachine_Get_InstanceView.json).
- The states are those of "States and billing status of Azure Virtual Machines" (azure-compute-docs
  articles/virtual-machines/states-billing.md): starting, running, stopping, stopped, deallocating, deallocated.

Running and starting VMs are judged (clusters.JUDGED_STATES: "running", "pending"); stopped and deallocated ones,
and those on their way there, are counted by state and neither judged nor charged, as on AWS and GCP. A VM whose
answer gives no power state, or one Azure does not document, is judged as running: it may run, and a finding is
never hidden because a field was missing.
"""

from __future__ import annotations

from typing import Any

# Azure's power state word -> the neutral state (model.Node.state); `az vm list -d`'s "VM <word>" the same.
_STATES = {
    "starting": "pending",
    "running": "running",
    "stopping": "stopping",
    "stopped": "stopped",
    "deallocating": "deallocating",
    "deallocated": "deallocated",
}
_SHOWN = {f"VM {word}": state for word, state in _STATES.items()}
_CODES = {f"PowerState/{word}": state for word, state in _STATES.items()}
RUNNING = "running"


def power_state(item: dict[str, Any], props: dict[str, Any]) -> str | None:
    """The neutral state of a VM answer (an `az vm list -d` item, or one with its instance view), or None when the
    answer gives no power state (a plain `az vm list`, a VM list without instance views)."""
    shown = item.get("powerState")
    if shown is not None:
        found = _SHOWN.get(shown) if type(shown) is str else None
        return found or (_STATES.get(shown[3:].strip().lower(), RUNNING) if isinstance(shown, str) else RUNNING)
    view = props.get("instanceView")
    if not isinstance(view, dict):
        return None
    statuses = view.get("statuses")
    for status in reversed(statuses) if isinstance(statuses, list) else ():  # the power state comes last
        code = status.get("code") if isinstance(status, dict) else None
        found = _CODES.get(code) if type(code) is str else None
        if found is not None:
            return found
        if isinstance(code, str) and code.lower().startswith("powerstate/"):
            return _STATES.get(code.split("/", 1)[1].lower(), RUNNING)
    return RUNNING


def stateless_note(where: str, standalone: bool) -> str:
    """What the report says when a VM list gave no power states."""
    how = "az vm list -d" if standalone else "az vmss list-instances --expand instanceView"
    return f"{where} gives no power states (make it with {how}): its VMs are judged as running"
