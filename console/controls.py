"""The rule of the tool switches and session holds a sequence alert raises, written once.

- A **tool is switched off** for a call when a `ToolSwitch` of the call's organisation names the
  call's agent and tool and has not been switched on again (`enabled_at` empty).
- A **session is held** for a call when a `SessionHold` of the organisation names the call's
  session and one of the agents the call answers for (the calling agent's; for a tool check, the
  session's own agent too, which a handoff continues) and has not been released (`released_at`
  empty). A call that names no session is never held.
- Agent and tool names are compared in their normal form (`name_key`): a switch of `desk` holds
  for `Desk`. Every writer stores them so (`firewall.matching`), and every reader looks them up so.

Each reader takes the rule from here, in the shape its path needs: the rows in force
(`switches_in_force`, `holds_in_force`: pages, bundles, the alert's own check before it raises a
second one), the ORM's `Exists` (`call_flags`), the SQL of the steady paths that read them in one
statement with other rows (`switched_sql` / `held_sql` and their parameters), and the sets a
process keeps (`kept_sql`, `Kept`). The runtime outside the console applies the same rule to the
holds and switches of its bundle (`stalwart_agents.bundle`), which are these rows in force.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, QuerySet, Value

from console.models import SessionHold, ToolSwitch
from firewall.engine.names import name_key


def switches_in_force(**filters: Any) -> QuerySet[ToolSwitch]:
    """The tool switches not switched on again, narrowed by `filters`."""
    return ToolSwitch.objects.filter(enabled_at=None, **filters)


def holds_in_force(**filters: Any) -> QuerySet[SessionHold]:
    """The session holds not released, narrowed by `filters`."""
    return SessionHold.objects.filter(released_at=None, **filters)


def held_agents(agent: str, *also: str) -> list[str]:
    """The agents whose hold of a session stops a call: the calling `agent` and `also` (the
    session's own agent, for a tool check), in normal form, each once, in a fixed order."""
    return sorted({name_key(agent), *(name_key(name) for name in also)})


def call_flags(
    rows: QuerySet,
    *,
    organisation_id: int,
    agent: str,
    tool: str,
    session: str,
    also: Sequence[str] = (),
) -> QuerySet:
    """`rows`, each annotated with the call's `tool_switched` and `session_held`, in their query."""
    switched = switches_in_force(
        organisation_id=organisation_id, agent=name_key(agent), tool=name_key(tool)
    )
    held = holds_in_force(
        organisation_id=organisation_id, agent__in=held_agents(agent, *also), session=session
    )
    return rows.annotate(
        tool_switched=Exists(switched),
        session_held=Exists(held) if session else Value(False),
    )


def switched_sql(alias: str) -> str:
    """`EXISTS (...)`: whether the call's tool is switched off; `switched_params` fill it."""
    table = ToolSwitch._meta.db_table
    return (
        f"EXISTS (SELECT 1 FROM {table} {alias} WHERE {alias}.organisation_id = %s"
        f" AND {alias}.agent = %s AND {alias}.tool = %s AND {alias}.enabled_at IS NULL)"
    )


def switched_params(organisation_id: int, agent: str, tool: str) -> list[Any]:
    return [organisation_id, name_key(agent), name_key(tool)]


def held_sql(alias: str, agents: int = 1) -> str:
    """`EXISTS (...)`: whether the call's session is held for one of `agents` agents;
    `held_params` fill it (an empty session is never held)."""
    table = SessionHold._meta.db_table
    names = ", ".join(["%s"] * agents)
    return (
        f"EXISTS (SELECT 1 FROM {table} {alias} WHERE {alias}.organisation_id = %s"
        f" AND {alias}.agent IN ({names}) AND {alias}.session = %s"
        f" AND {alias}.session <> '' AND {alias}.released_at IS NULL)"
    )


def held_params(organisation_id: int, agents: Iterable[str], session: str) -> list[Any]:
    """`held_sql`'s parameters; `agents` as `held_agents` gives them."""
    return [organisation_id, *agents, session]


def kept_sql(limit: int) -> str:
    """Every switch and hold in force of an organisation (`%s` twice), as rows ('s', agent,
    tool) and ('h', agent, session), at most `limit`: what `Kept` is built from."""
    return (
        f"SELECT 's', agent, tool FROM {ToolSwitch._meta.db_table} "
        f"WHERE organisation_id = %s AND enabled_at IS NULL "
        f"UNION ALL SELECT 'h', agent, session FROM {SessionHold._meta.db_table} "
        f"WHERE organisation_id = %s AND released_at IS NULL AND session <> '' "
        f"LIMIT {int(limit)}"
    )


@dataclass(frozen=True)
class Kept:
    """An organisation's switches and holds in force, as a process keeps them: (agent, tool)
    and (agent, session) pairs, in normal form."""

    switched: frozenset[tuple[str, str]]
    held: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, rows: Iterable[Sequence[str]]) -> Kept:
        """From `kept_sql`'s rows."""
        rows = list(rows)
        return cls(
            frozenset((agent, tool) for what, agent, tool in rows if what == "s"),
            frozenset((agent, session) for what, agent, session in rows if what == "h"),
        )

    def flags(self, *, agent: str, tool: str, session: str) -> tuple[bool, bool]:
        """The call's (tool switched off, session held)."""
        agent = name_key(agent)
        switched = (agent, name_key(tool)) in self.switched
        return switched, bool(session) and (agent, session) in self.held
