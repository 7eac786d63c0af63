"""Deciding in the agent's process from the console's bundle (`Client(..., decide="local")`).

The console governs, the agent's process decides: a `BundleFeed` fetches the organisation's signed
bundle (`GET /v1/bundle`, see `stalwart_agents.bundle`) and keeps it current from a background
thread that long-polls with the version it holds (`If-None-Match`, `?wait=`), so a hold or a
switch raised on the console arrives as soon as the console hears of it (Redis pub/sub, else its
re-check each second) and a round trip. A console with too many long-polls waiting answers at
once with `Retry-After`: the feed asks again then, its bundle kept fresh by the 304's stamp. A
`ConnectedSession` is a `LocalSession` -- the same `RuntimeSession`, at engine speed -- whose
every check first asks the feed for the bundle, then applies the bundle's controls after the tool
check exactly as the console's sessions do:

- a tool switched off for the agent is refused (`tool_disabled`);
- a write in a session the console holds waits for a person (`confirm`, `session_held`);
- a write whose write switch is off is not run (`BLOCKED`, `writes_disabled`);
- the settings (taint policy, licence, the said-checks' modes, language) are the bundle's, made
  stricter by the session's own, and followed when the bundle changes.

**Fail closed.** With no bundle verified, a bundle that does not verify under the configured
public keys (or is signed with a key this process was not given: a rotated key), or a bundle whose last fresh signature is older than `max_age` seconds (the console
down, or unreachable), every check raises `SelectorUnavailableError`: no call is decided, none
runs. A bundle or a stamp replayed from the past verifies but refreshes nothing, and one that
is not bound to the request it answers (the nonce each request sends, signed back by the console)
is refused, so a runtime that starts cannot be started on an old bundle either (see
`stalwart_agents.bundle`).

**Keys.** The session's history and the tokens the tool check takes are signed with this process's
own key (as `LocalSession`'s); the console's guard key never leaves the console. The bundle, its
stamps and approval grants are signed with the organisation's bundle key, whose public half this
process is configured with. A person's approval goes through the console's queue: the runtime
files the request (`POST /v1/approvals`), the person answers on the Approvals page, the console
signs a grant for exactly that call at that point of the session, and the runtime, having
verified it, signs its own token for the call (`wait_for_approval`).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from guard.engine.decision import ALLOW, CONFIRM, Decision
from stalwart_agents import bundle as bundles
from stalwart_agents import runtime

#: Defaults of the knobs (`Client(max_age=..., wait=...)`, `STALWART_BUNDLE_MAX_AGE`).
MAX_AGE = 60.0
WAIT = 25.0
#: How long the feed waits before asking again after a failed request (doubling up to the last).
RETRY = (0.2, 0.5, 1.0, 2.0, 5.0)


def _unavailable(message: str) -> Exception:
    from stalwart_agents.client import SelectorUnavailableError

    return SelectorUnavailableError(message)


class BundleFeed:
    """The organisation's bundle for one agent, fetched, verified and kept current."""

    def __init__(
        self,
        client: Any,
        *,
        agent: str,
        public_key: str,
        max_age: float = MAX_AGE,
        wait: float = WAIT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.agent = agent
        self.key = bundles.VerifyKey(public_key)
        self.max_age = float(max_age)
        self.wait = float(wait)
        self.clock = clock
        self._lock = threading.Lock()
        self._bundle: bundles.Bundle | None = None
        self._verified_at = float("-inf")
        self._latest = float("-inf")  # the newest `issued_at` verified
        self._broken: str | None = None
        self._error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pause = 0.0  # what the console's last `Retry-After` asked for

    # -- what decides ---------------------------------------------------------------------------

    def current(self) -> bundles.Bundle:
        """The bundle to decide with, or `SelectorUnavailableError` (see the module docstring)."""
        with self._lock:
            found, broken, verified_at = self._bundle, self._broken, self._verified_at
            error = self._error
        if broken is not None:
            raise _unavailable(f"no bundle to decide with: {broken}")
        if found is None:
            raise _unavailable(f"no bundle from the console: {error or 'none fetched yet'}")
        age = self.clock() - verified_at
        if age > self.max_age:
            why = f" ({error})" if error else ""
            raise _unavailable(
                f"the console's bundle is {age:.1f} s old, past its max age of "
                f"{self.max_age:g} s{why}"
            )
        return found

    @property
    def version(self) -> str | None:
        with self._lock:
            return self._bundle.version if self._bundle is not None else None

    # -- fetching -------------------------------------------------------------------------------

    def start(self) -> BundleFeed:
        """Fetch the bundle now (`SelectorUnavailableError` if that fails), then keep it current."""
        if self._thread is None:
            self.fetch(wait=0.0)
            self.current()
            self._thread = threading.Thread(
                target=self._follow, name=f"stalwart-bundle-{self.agent}", daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()

    def fetch(self, *, wait: float) -> None:
        """One request for the bundle; what it answers is verified before anything uses it."""
        query = {"agent": self.agent} if self.agent else {}
        if wait:
            query["wait"] = f"{wait:g}"
        url = f"{self.client.url}/v1/bundle"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {
            "Authorization": f"Bearer {self.client.api_key}",
            "User-Agent": "stalwart-agents/1",
        }
        held = self.version
        if held is not None:
            headers["If-None-Match"] = f'"{held}"'
        nonce = bundles.new_nonce()  # the console signs it back: an answer to this request only
        headers["Stalwart-Bundle-Nonce"] = nonce
        request = urllib.request.Request(url, method="GET", headers=headers)
        self._pause = 0.0
        try:
            with urllib.request.urlopen(  # noqa: S310 - the console's own URL
                request, timeout=wait + self.client.timeout
            ) as response:
                self._pause = self._retry_after(response.headers.get("Retry-After"))
                fresh = response.headers.get("Stalwart-Bundle-Fresh")
                body = response.read(64 * 1024 * 1024)
        except urllib.error.HTTPError as exc:
            self._pause = self._retry_after(exc.headers.get("Retry-After"))
            if exc.code == 304:
                self._stamped(
                    exc.headers.get("Stalwart-Bundle-Stamp"),
                    exc.headers.get("Stalwart-Bundle-Fresh"),
                    nonce,
                )
                return
            if exc.code in (401, 403):
                # The console withdrew this key's trust (revoked, or no longer a role that
                # checks calls): nothing decides under it from now on.
                with self._lock:
                    self._broken = f"the console refused this key ({exc.code})"
                return
            self._failed(f"the console answered {exc.code}")
            return
        except (urllib.error.URLError, OSError, ValueError) as exc:
            self._failed(f"the console at {self.client.url} cannot answer: {exc}")
            return
        try:
            envelope = json.loads(body)
            # a feed of no agent's name takes only the bundle made for all agents
            found = bundles.verify_bundle(envelope, self.key, agent=self.agent)
            bundles.verify_fresh(fresh, self.key, found, nonce)
        except (ValueError, bundles.BundleRefused) as exc:
            with self._lock:
                self._broken = str(exc)
            return
        with self._lock:
            if found.issued_at <= self._latest:
                return  # replayed from the past: it refreshes nothing, replaces nothing
            self._bundle, self._latest = found, found.issued_at
            self._verified_at = self.clock()
            self._broken = self._error = None

    def _retry_after(self, header: str | None) -> float:
        """Seconds a busy console asked to wait before the next long-poll (`Retry-After`),
        bounded so the bundle is asked for again well before it is past its max age."""
        if not header:
            return 0.0
        try:
            asked = float(header)
        except ValueError:
            return 0.0
        if asked != asked or asked <= 0:  # NaN or nothing
            return 0.0
        return min(asked, 30.0, max(0.1, self.max_age / 3))

    def _stamped(self, header: str | None, fresh: str | None, nonce: str) -> None:
        with self._lock:
            held = self._bundle
        if held is None:
            self._failed("the console answered 304 to no bundle held")
            return
        try:
            at = bundles.verify_stamp(header, self.key, held)
            bundles.verify_fresh(fresh, self.key, held, nonce)
        except bundles.BundleRefused as exc:
            with self._lock:
                self._broken = str(exc)
            return
        with self._lock:
            if at > self._latest:
                self._latest = at
                self._verified_at = self.clock()
                self._broken = self._error = None

    def _failed(self, why: str) -> None:
        with self._lock:
            self._error = why

    def _follow(self) -> None:
        failures = 0
        while not self._stop.is_set():
            self.fetch(wait=self.wait)
            with self._lock:
                failed = self._error is not None or self._broken is not None
            if self._pause:
                # A console with too many long-polls waiting answered at once (304 and a fresh
                # stamp, or a 503): ask again when it said, not in a tight loop.
                self._stop.wait(self._pause)
                failures = failures + 1 if failed else 0
            elif failed:
                self._stop.wait(RETRY[min(failures, len(RETRY) - 1)])
                failures += 1
            else:
                failures = 0


_compiled: dict[str, Any] = {}
_compiled_lock = threading.Lock()


def _policy(found: bundles.Bundle) -> Any:
    """The bundle's published firewall version, compiled once per version key (a version never
    changes, so its key names one content), or None when the organisation has none."""
    from firewall import engine as firewall_engine

    published = found.firewall
    if published is None or published.get("version") is None:
        return None
    key = str(published.get("key"))
    with _compiled_lock:
        hit = _compiled.get(key)
    if hit is None:
        hit = firewall_engine.compile_policy(
            {
                "name": published.get("policy") or "policy",
                "default_verdict": published.get("default_verdict"),
                "rules": published.get("rules") or [],
            }
        )
        with _compiled_lock:
            if len(_compiled) >= 64:
                _compiled.clear()
            _compiled[key] = hit
    return hit


def has_sequences(found: bundles.Bundle) -> bool:
    """Whether the bundle's published firewall version has an enabled sequence rule (which reads
    every call, so every call it decides is recorded, as the console records them)."""
    rules = (found.firewall or {}).get("rules") or []
    return any(
        isinstance(rule, Mapping)
        and rule.get("sequence")
        and rule.get("enabled", True) is not False
        for rule in rules
    )


def _refused(call: Mapping[str, Any], reason: str) -> dict[str, Any]:
    from firewall.engine.decision import refused

    return refused(reason, dict(call.get("arguments") or {})).to_dict()


def firewall_decide(
    found: bundles.Bundle, call: Mapping[str, Any], *, reads: bool, session: str = ""
) -> dict[str, Any]:
    """The firewall's answer to a call from the bundle, as `POST /v1/firewall/evaluate` gives it
    (nothing recorded, no token spent): the published version, then the tool switched off for
    the agent (`tool_disabled`) and the session held (a call that is not a read goes to a person,
    `session_held`). With no published version nothing decides: refused, as on the console."""
    from firewall import engine as firewall_engine

    agent = str(call.get("agent") or "")
    try:
        policy = _policy(found)
    except firewall_engine.FirewallError:
        policy, result = None, _refused(call, "policy_invalid")
    else:
        # an active policy with nothing published is refused for that, as the console says
        unpublished = found.firewall is not None and found.firewall.get("version") is None
        result = _refused(call, "policy_not_published" if unpublished else "no_active_policy")
    if policy is not None:
        try:
            result = policy.evaluate(dict(call)).to_dict()
        except firewall_engine.FirewallError:
            result = _refused(call, "policy_invalid")
    published = found.firewall or {}
    result["policy"] = published.get("policy")
    result["policy_version"] = published.get("version")
    if found.tool_switched(agent, str(call.get("tool") or "")):
        result = {**_refused(call, "tool_disabled"), "policy": result["policy"]}
        result["policy_version"] = published.get("version")
    elif session and result["decision"] == "allow" and not reads and found.held(agent, session):
        result = {
            **result,
            "verdict": "require_approval",
            "decision": "confirm",
            "reasons": [*result["reasons"], "session_held"],
        }
    return result


def bundle_for(
    feed: BundleFeed, agent: str, own: str, under: bundles.Bundle | None = None
) -> bundles.Bundle:
    """The current bundle holding `agent`'s switches and holds: `feed`'s (the bundle of `own`,
    the agent it was fetched for; `under` where it was read already) when `agent` is `own`,
    else `agent`'s own feed from the same client (`SelectorUnavailableError` where it cannot
    answer)."""
    from firewall.engine.names import name_key

    if name_key(agent) == name_key(own):
        return under if under is not None else feed.current()
    return feed.client.feed(agent).current()  # `Client.feed` names agents in their normal form


class BundleControls:
    """The bundle's controls, plugged into a `RuntimeSession` (`runtime.RuntimeSession.controls`)."""

    def __init__(
        self,
        feed: BundleFeed,
        *,
        catalogue: Any,
        rulebook: Any,
        own: Mapping[str, Any],
        key: bytes,
    ) -> None:
        self.feed = feed
        self.catalogue = catalogue
        self.rulebook = rulebook
        self.own = dict(own)
        self.key = key
        self._version: str | None = None

    def settings_of(self, found: bundles.Bundle) -> dict[str, Any]:
        """The runtime's settings under a bundle: the organisation's, made stricter by the session's."""
        organisation = {
            k: v
            for k, v in found.settings.items()
            if k not in ("on_unread", "compiled_records_only")
        }
        return runtime.stricter_settings(organisation, self.own)

    def before_check(self, session: runtime.RuntimeSession) -> bundles.Bundle:
        found = self.feed.current()
        if found.version != self._version:
            # A new bundle may carry new settings: the session follows them (wirings are shared
            # per content, so this is a lookup unless the settings changed).
            session.wired = runtime.wiring(
                self.catalogue,
                key=self.key,
                rulebook=self.rulebook,
                settings=self.settings_of(found),
            )
            self._version = found.version
        # The decision logs name the firewall version each decision was made under.
        session.policy_version = (found.firewall or {}).get("version")
        return found

    def after_check(
        self,
        session: runtime.RuntimeSession,
        call: Mapping[str, Any],
        decision: Decision,
        under: bundles.Bundle,
    ) -> Decision:
        """What sequence alerts switched on, after the check: they only make it stricter.

        The rule is the console's check's (`console.controls`): the tool switched off for the
        agent making the call, the session held for that agent or for the session's own (a
        handoff continues the session). Another agent's switches and holds come in its own
        bundle (the console sends each agent's), fetched the first time it calls; where that
        bundle cannot answer, `SelectorUnavailableError` and nothing is decided."""
        tool = str(call.get("tool") or "")
        agent = str(call.get("agent") or session.agent)
        caller = bundle_for(self.feed, agent, session.agent, under)
        if caller.tool_switched(agent, tool):
            return Decision("refuse", ("tool_disabled",), {"tool": tool}, None)
        known = session.wired.catalogue.tools.get(tool)
        writes = known is None or known.kind != "read"
        if (
            writes
            and decision.decision == ALLOW
            and "confirmed" not in decision.reasons
            and (under.held(session.agent, session.session) or caller.held(agent, session.session))
        ):
            return Decision(
                CONFIRM, (*decision.reasons, "session_held"), decision.detail, decision.rule
            )
        return decision

    def held_write(self, session: runtime.RuntimeSession, call: Mapping[str, Any]) -> bool:
        """Whether `call` is a write in a session the console holds now (for the session's agent
        or the agent making it): its yes is the console's approvers' (`runtime.HeldOnConsole`).
        `SelectorUnavailableError` where the bundle cannot answer."""
        known = session.wired.catalogue.tools.get(str(call.get("tool") or ""))
        if known is not None and known.kind == "read":
            return False
        under = self.feed.current()
        agent = str(call.get("agent") or session.agent)
        caller = bundle_for(self.feed, agent, session.agent, under)
        return under.held(session.agent, session.session) or caller.held(agent, session.session)

    def blocked(self, session: runtime.RuntimeSession, tool: str, write: bool) -> str | None:
        if write and not self.feed.current().writes_enabled(tool):
            return "writes_disabled"
        return None
