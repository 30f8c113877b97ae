"""What discovery found across the cluster: every node's facts, the cabling map, and the nodes (or probes) that
could not be read. Pure: the engine fills it (live or from snapshots), views and rungs read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.fabric.cabling import CablingMap, cabling_from_json
from wirespeed.core.fabric.facts import NodeFacts, facts_from_json, to_jsonable


@dataclass
class Discovery:
    facts: dict[str, NodeFacts]
    cabling: CablingMap
    errors: dict[str, str] = field(default_factory=dict)  # node -> one-line reason it could not be read
    probe_errors: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": {name: facts.to_json() for name, facts in self.facts.items()},
            "cabling": to_jsonable(self.cabling),
            "errors": self.errors,
            "probe_errors": self.probe_errors,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Discovery:
        """Read back what `to_json` wrote (a run's discovery.json)."""
        return cls(
            facts={name: facts_from_json(raw) for name, raw in (data.get("nodes") or {}).items()},
            cabling=cabling_from_json(data.get("cabling") or {}),
            errors=dict(data.get("errors") or {}),
            probe_errors={k: dict(v) for k, v in (data.get("probe_errors") or {}).items()},
        )
