"""The proof engine: pure Python, no Django, no I/O (the caller gives every file as text).

- `verify_agent_file(agent_yaml_text, files=..., depth=60, turns=3)` -> `Report`: what
  `stalwart verify` does; `verify_graph(doc, ...)` for a `qls-graph/1` document given whole;
- `build_agent_graph(...)` -> the `qls-graph/1` document; `load_graph(doc)` -> `Graph` or
  `GraphInvalid` (every problem with its JSON path); `merge_overlay(doc, overlay)`;
- `prove(graph, depth=, turns=, progress=)` -> `ProofResult` (two engines, compared; cached by
  digest; `progress(answered, total)` is told as the questions are decided);
- `hunt(result)` -> findings; `REGISTRY` / `render_rules_table()` -> the rules;
- `render_text`, `render_json`, `render_sarif` -> the report, three ways.

`ProofError` is the root of every exception it raises.
"""

from __future__ import annotations

from .build import merge_overlay
from .codechecks import rules_digest
from .errors import ConfigInvalid, GraphInvalid, Problem, ProofError, SourceUnreadable
from .findings import Finding
from .graphdoc import FORMAT, Graph, graph_digest, load_graph
from .hunt import hunt
from .prove import (
    DEFAULT_CACHE,
    DEFAULT_DEPTH,
    DEFAULT_MAX_STATES,
    DEFAULT_TURNS,
    Progress,
    ProofCache,
    ProofResult,
    prove,
)
from .render_json import render_json, report_dict
from .render_sarif import render_sarif, sarif_dict
from .render_text import render_text
from .report import Report
from .rules import (
    BY_ID,
    REGISTRY,
    RuleInfo,
    render_rule_text,
    render_rules_reference,
    render_rules_table,
    rule_page_fields,
    rule_page_path,
)
from .verify import (
    build_agent_graph,
    load_agent_sources,
    module_candidates,
    verify_agent_file,
    verify_graph,
)

__all__ = [
    "BY_ID",
    "DEFAULT_CACHE",
    "DEFAULT_DEPTH",
    "DEFAULT_MAX_STATES",
    "DEFAULT_TURNS",
    "FORMAT",
    "REGISTRY",
    "ConfigInvalid",
    "Finding",
    "Graph",
    "GraphInvalid",
    "Problem",
    "ProofCache",
    "ProofError",
    "ProofResult",
    "Progress",
    "Report",
    "RuleInfo",
    "SourceUnreadable",
    "build_agent_graph",
    "graph_digest",
    "hunt",
    "load_agent_sources",
    "load_graph",
    "merge_overlay",
    "module_candidates",
    "prove",
    "render_json",
    "render_rule_text",
    "render_rules_reference",
    "rule_page_fields",
    "rule_page_path",
    "render_rules_table",
    "render_sarif",
    "render_text",
    "report_dict",
    "rules_digest",
    "sarif_dict",
    "verify_agent_file",
    "verify_graph",
]
