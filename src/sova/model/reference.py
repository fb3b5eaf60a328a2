"""The scenario-format reference, generated from the same field descriptions the validator uses."""

from __future__ import annotations

from sova.model import scenario_fields as S
from sova.model.rule_reader import RULE_FIELDS
from sova.model.scenario_events import EVENT_FIELDS
from sova.model.schema import markdown_table

BEGIN = "<!-- BEGIN GENERATED REFERENCE (make docs) -->"
END = "<!-- END GENERATED REFERENCE -->"


def scenario_reference() -> str:
    parts = [BEGIN, ""]
    sections = [
        ("`[scenario]`", S.SCENARIO_FIELDS),
        ("`[topology]`", S.TOPOLOGY_FIELDS),
        ("`[[hosts]]` (defaults for all hosts may go in `[defaults.host]`)", S.HOST_FIELDS),
        ("`nic` table of a host", S.NIC_FIELDS),
        ("`[[storage]]`", S.STORAGE_FIELDS),
        ("`[[vms]]` (defaults for all VMs may go in `[defaults.vm]`)", S.VM_FIELDS),
        ("`[[workloads]]`: common keys", S.WORKLOAD_FIELDS),
    ]
    sections += [(f'`kind = "{k}"` parameters', f) for k, f in S.WORKLOAD_PARAMS.items()]
    sections += [
        ("`[profiles.NAME]`", S.PROFILE_FIELDS),
        ("`[control]`: the executor's safety rails", S.CONTROL_FIELDS),
        ("`[outputs]`", S.OUTPUT_FIELDS),
        ("`[[rules]]`: placement rules (docs/operations.md)", RULE_FIELDS),
        ("`[[events]]`: operators' actions and faults during the run (docs/operations.md)", EVENT_FIELDS),
        ("`[[slos]]`: tenants' storage SLOs (SASLO's Table 1; docs/storage-slo.md)", S.SLO_FIELDS),
        ("`[trials]`: Virtue's method, many Random placements re-placed by each profile", S.TRIALS_FIELDS),
        ("`[simulator]`: model parameters (every experiment shares the defaults)", S.SIMULATOR_FIELDS),
    ]
    for title, fields in sections:
        parts += [f"### {title}", "", markdown_table(fields), ""]
    parts.append(END)
    return "\n".join(parts)


def splice(document: str) -> str:
    """The document with its generated section replaced by the current reference."""
    head, _, rest = document.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return head + scenario_reference() + tail
