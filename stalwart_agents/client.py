"""`Client` and its sessions: the tool check against the console, or in this process.

With `STALWART_URL` (and `STALWART_API_KEY`) in the environment, or given, every check goes to the
console, which keeps the session's signed history and records each decision as an event. Without
a server the same engine decides in this process, with a key this process holds. The answers are
the same either way.

With `decide="local"` (or `STALWART_DECIDE=local`) and the organisation's bundle public key
(`bundle_key=`, `STALWART_BUNDLE_KEY`), a client connected to the console decides in this process
from the console's signed bundle, at engine speed, and fails closed when the bundle is older than
`max_age` or does not verify (`stalwart_agents.connected`).

Where the console cannot answer (unreachable, an error), a check raises
`SelectorUnavailableError`: the call is not made, and nothing falls back to an unchecked call.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guard import engine
from guard.engine import execution
from guard.engine.execution import ExecutionContext
from stalwart_agents import connected, runtime


class SelectorUnavailableError(Exception):
    """The runtime or the console could not answer; the call must not be made."""


class RequestRefused(Exception):
    """The console refused the request itself (bad input, no permission); carries its answer."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"the console answered {status}: {json.dumps(body)[:500]}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Check:
    """A decision: `allow`, `confirm` or `refuse`, its reasons and detail."""

    decision: str
    reasons: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    rule: str | None = None
    approval: str | None = None  # the request people answer, for a `confirm` from the console

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Check:
        return cls(
            str(data["decision"]),
            list(data.get("reasons", [])),
            dict(data.get("detail", {})),
            data.get("rule"),
            data.get("approval"),
        )


class ApprovalDenied(Exception):
    """A person denied the call (or the request expired): nothing runs."""


class ApprovalTimeout(Exception):
    """Nobody answered in time; the call is not made."""


class ProofUnfinished(Exception):
    """A graph proof that gave no result: it ended in error, or did not finish in time.

    Never read as a clean proof. `status` is the job's last status (`error`, `queued`,
    `running`), `job` the console's last answer about it (None in this process).
    """

    def __init__(self, message: str, *, status: str, job: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.job = dict(job) if job is not None else None


Context = Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None


def _facts(context: Context) -> Mapping[str, Any] | None:
    return context() if callable(context) else context


DECIDE = ("console", "local")


class Client:
    """`Client()` reads `STALWART_URL` and `STALWART_API_KEY`; use it as a context manager.

    Against a console, `decide` says where a session's checks are decided: `"console"` (the
    default: each check is a request to the console, which keeps the history and records the
    event) or `"local"` (in this process, from the console's signed bundle; needs `bundle_key`,
    the organisation's public key from `GET /v1/bundle/key`, or several, as a list or separated
    by commas, to trust the current and the next key while a rotation rolls out). `max_age` is how old, in seconds
    since the console last signed it, a bundle may be and still decide; `wait` how long each
    long-poll for a new bundle waits. Read from `STALWART_DECIDE`, `STALWART_BUNDLE_KEY` and
    `STALWART_BUNDLE_MAX_AGE` when not given.
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 10.0,
        decide: str | None = None,
        bundle_key: str | Sequence[str] | None = None,
        max_age: float | None = None,
        wait: float = connected.WAIT,
    ) -> None:
        self.url = (url if url is not None else os.environ.get("STALWART_URL", "")).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("STALWART_API_KEY", "")
        self.timeout = timeout
        self._key = secrets.token_bytes(32)  # in-process: the runtime's own signing key
        self.decide = decide if decide is not None else os.environ.get("STALWART_DECIDE", "console")
        if self.decide not in DECIDE:
            raise ValueError(f"decide: is console or local, not `{self.decide}`")
        self.bundle_key = (
            bundle_key if bundle_key is not None else os.environ.get("STALWART_BUNDLE_KEY", "")
        )
        if max_age is None:
            max_age = float(os.environ.get("STALWART_BUNDLE_MAX_AGE") or connected.MAX_AGE)
        if not 0 < max_age <= 86_400:
            raise ValueError("max_age: seconds, more than 0 and at most a day")
        self.max_age = float(max_age)
        self.wait = float(wait)
        if self.decide == "local":
            if not self.url:
                raise ValueError("decide=local: needs the console's url (STALWART_URL)")
            if not self.bundle_key:
                raise ValueError(
                    "decide=local: needs the organisation's bundle public key (bundle_key, "
                    "STALWART_BUNDLE_KEY; GET /v1/bundle/key)"
                )
            connected.bundles.VerifyKey(self.bundle_key)  # a key that is not one: refused now
        self._feeds: dict[str, connected.BundleFeed] = {}
        self._feeds_lock = threading.Lock()
        self._log: Any = None  # (spool, shipper): the decision logs of local sessions

    @property
    def remote(self) -> bool:
        return bool(self.url)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop following the console's bundles (the threads end after their current request)
        and stop shipping the decision logs: what was not shipped yet stays in the spool, and
        the next client of this console and key ships it (or of another key of its organisation,
        once that one's shipper has learned it: see `decision_log`)."""
        with self._feeds_lock:
            feeds, self._feeds = list(self._feeds.values()), {}
        for feed in feeds:
            feed.close()
        with self._feeds_lock:
            log, self._log = self._log, None
        if log is not None:
            spool, shipper = log
            shipper.stop()
            if not shipper.running:  # a lane still in a request closes nothing under it
                spool.close()

    def decision_log(self) -> Any:
        """The spool a local session's decisions are written to, shipped to this console by a
        background shipper (started on first use; see `stalwart_agents.spool`). It lives at
        `STALWART_SPOOL`, else in the user's state folder under a name of this console and key,
        so two consoles (or two keys) never share a spool: a `STALWART_SPOOL` that another
        console or key took first (`spool.SpoolTaken`) gives this one a spool beside it, named
        for this console and key. Its shipper also ships the spools beside it that another key
        of this console and organisation left (`spool.siblings`; a key rotated): see
        `spool.Shipper`."""
        from stalwart_agents import spool

        with self._feeds_lock:
            if self._log is None:
                named = spool.owner_of(self.url, self.api_key)[:16]  # the spool's owner, shortened
                given = os.environ.get("STALWART_SPOOL")

                def opened(path: str | Path) -> Any:
                    return spool.decision_log(
                        url=self.url,
                        api_key=self.api_key,
                        path=path,
                        siblings=functools.partial(spool.siblings, given),
                    )

                if not given:
                    self._log = opened(spool.default_path().with_name(f"decisions-{named}.sqlite3"))
                    return self._log[0]
                try:
                    self._log = opened(given)
                except spool.SpoolTaken:
                    taken = Path(given)
                    self._log = opened(taken.with_name(f"{taken.stem}-{named}{taken.suffix}"))
            return self._log[0]

    def feed(self, agent: str = "") -> connected.BundleFeed:
        """The bundle feed of one agent, started on first use (`SelectorUnavailableError` when
        the first bundle cannot be fetched or does not verify). Agents are named in their normal
        form, as the console makes each agent's bundle (`Desk` and `desk` share one)."""
        from firewall.engine.names import name_key

        agent = name_key(agent) if agent else ""
        with self._feeds_lock:
            found = self._feeds.get(agent)
            if found is None:
                found = connected.BundleFeed(
                    self,
                    agent=agent,
                    public_key=self.bundle_key,
                    max_age=self.max_age,
                    wait=self.wait,
                )
                self._feeds[agent] = found
        return found.start()

    def rulebook(self, name: str, *, agent: str = "") -> dict[str, Any]:
        """The compiled record of the console's rulebook `name`, from the verified bundle."""
        found = self.feed(agent).current().rulebooks.get(name)
        if found is None:
            raise KeyError(f"the console holds no rulebook `{name}`")
        return dict(found["record"])

    def session(
        self,
        agent: str,
        *,
        catalogue: Mapping[str, Any],
        rulebook: Mapping[str, Any] | str | None = None,
        settings: Mapping[str, Any] | None = None,
        approver: Callable[[Mapping[str, Any]], bool] | None = None,
        context: Context = None,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        sink: Callable[[dict], None] | None = None,
    ) -> Session:
        """A session of `agent`: the one runtime, in this process or behind the console.

        `settings` are the tool check's (`taint_policy`, `licence_valid_until`, `label_trust`,
        `checks`, ...) with `said` (the modes of S1, S2 and the confirmation reading) and
        `language`; against the console they can only make the organisation's stricter.
        `approver(request) -> bool` asks a person in this process (a `confirm` then has an
        answer); `context` the facts for every check (a call's own `context=` adds to them);
        `tools` the functions that run tools (for `execute` and the undo's compensations).
        `catalogue` and `rulebook` may be sealed once (`stalwart_agents.runtime.seal`): sessions
        opened with the same sealed object then cost a lookup, whatever the catalogue's size.
        `sink(record)` is given one record per decision and per call that ran, in this process.
        """
        if self.remote and self.decide == "local":
            # Decided here, recorded there: the decision logs, unless the host gives its own sink.
            return self._connected_session(
                agent,
                catalogue=catalogue,
                rulebook=rulebook,
                settings=settings,
                approver=approver,
                context=context,
                tools=tools,
                sink=sink,
            )
        if self.remote:
            body: dict[str, Any] = {
                "agent": agent,
                "catalogue": runtime.unsealed(catalogue),
                "rulebook": runtime.unsealed(rulebook),
            }
            if settings:
                body["settings"] = dict(settings)
            answer = self.post("/v1/sessions", body)
            return RemoteSession(self, answer["id"], agent, context=context, tools=tools)
        if isinstance(rulebook, str):
            rulebook = _compiled(rulebook)
        try:
            opened = runtime.open_session(
                agent,
                catalogue=catalogue,
                key=self._key,
                rulebook=rulebook,
                settings=settings,
                approver=approver,
                context=context,
                tools=dict(tools or {}),
                sink=sink,
            )
        except (runtime.SettingsRefused, engine.GuardError) as exc:
            raise RequestRefused(400, {"settings": [str(exc)]}) from exc
        return LocalSession(opened)

    def _connected_session(
        self,
        agent: str,
        *,
        catalogue: Mapping[str, Any],
        rulebook: Mapping[str, Any] | str | None,
        settings: Mapping[str, Any] | None,
        approver: Callable[[Mapping[str, Any]], bool] | None,
        context: Context,
        tools: Mapping[str, Callable[..., Any]] | None,
        sink: Callable[[dict], None] | None,
    ) -> ConnectedSession:
        """A session deciding in this process from the console's bundle (`connected.py`)."""
        feed = self.feed(agent)
        found = feed.current()
        own = dict(settings or {})
        unknown = sorted(set(own) - set(runtime.SESSION_SETTINGS))
        if unknown:
            raise RequestRefused(
                400,
                {
                    f"settings.{name}": [
                        "not a setting a session may give: it is the organisation's (Settings page)"
                    ]
                    for name in unknown
                },
            )
        try:  # the session's own settings are checked before they are merged
            from guard.engine.checks import NAMES
            from guard.engine.settings import load_settings

            load_settings(runtime.split_settings(own)[0], known_checks=NAMES)
        except (runtime.SettingsRefused, engine.GuardError, ValueError, TypeError) as exc:
            raise RequestRefused(400, {"settings": [str(exc)]}) from exc
        if isinstance(rulebook, str):
            if found.settings.get("compiled_records_only"):
                raise RequestRefused(
                    400, {"rulebook": ["this organisation accepts compiled rulebook records only"]}
                )
            rulebook = _compiled(rulebook)
        elif isinstance(rulebook, Mapping):
            # A record is checked as the console checks one a session is opened with.
            from rulebooks import compiler

            problems = compiler.record_problems(rulebook)
            if problems:
                raise RequestRefused(400, {"rulebook": problems})
        try:
            opened = runtime.open_from_bundle(
                agent,
                feed=feed,
                catalogue=catalogue,
                key=self._key,
                rulebook=rulebook,
                own=own,
                approver=approver,
                context=context,
                tools=dict(tools or {}),
                sink=sink if sink is not None else self.decision_log(),
            )
        except (runtime.SettingsRefused, engine.GuardError) as exc:
            raise RequestRefused(400, {"settings": [str(exc)]}) from exc
        return ConnectedSession(opened, client=self, feed=feed)

    def verify_graph(
        self,
        graph: Mapping[str, Any],
        *,
        catalogue: Mapping[str, Any] | None = None,
        rulebook: Mapping[str, Any] | str | None = None,
        session_steps: int | None = None,
        turns: int | None = None,
        name: str | None = None,
        timeout: float = 300.0,
        poll: float = 1.0,
    ) -> dict[str, Any]:
        """Prove an agents' graph (`agent.export()`) and return its report (`stalwart-verify/1`).

        `catalogue` (`agent.catalogue()`) and `rulebook` (a record, or Colang text) stand for the
        graph's own; `session_steps` is the depth proved to (default 60), `turns` the turns (3).
        Against the console the graph is submitted as a job (`POST /v1/proofs`) and followed
        until it finishes; in this process the same engine proves it here. The report's
        `gate.passed` says whether the gate passes. Raises `RequestRefused` for a job that is not
        valid (every error by field path), `ProofUnfinished` when the job ends in error or does
        not finish within `timeout` seconds: an unfinished proof is never returned as clean.
        """
        if not self.remote:
            return _verify_here(
                graph,
                catalogue=catalogue,
                rulebook=rulebook,
                session_steps=session_steps,
                turns=turns,
                name=name,
            )
        from proof import jobspec

        body = jobspec.job_body(
            graph,
            catalogue=catalogue,
            rulebook=rulebook,
            session_steps=session_steps,
            turns=turns,
            name=name,
        )
        job = self.post("/v1/proofs", body)
        ident = job["id"]
        deadline = time.monotonic() + timeout
        finished = {"passed", "failed"}
        while True:
            answer = self.get(f"/v1/proofs/{ident}")
            status = answer.get("status")
            if status in finished:
                report = answer.get("report")
                gate = report.get("gate") if isinstance(report, dict) else None
                if not isinstance(gate, dict) or gate.get("passed") != (status == "passed"):
                    raise ProofUnfinished(
                        f"the console's answer about proof {ident} holds no usable report",
                        status=str(status),
                        job=answer,
                    )
                return report
            if status == "error":
                raise ProofUnfinished(
                    f"proof {ident} could not run: {answer.get('error') or 'no reason given'}",
                    status="error",
                    job=answer,
                )
            if status not in ("queued", "running"):
                raise ProofUnfinished(
                    f"proof {ident} is `{status}`, which is not a status of a proof",
                    status=str(status),
                    job=answer,
                )
            if time.monotonic() >= deadline:
                raise ProofUnfinished(
                    f"proof {ident} did not finish within {timeout:g} s (it is {status}, "
                    f"{answer.get('progress', 0)}%)",
                    status=str(status),
                    job=answer,
                )
            time.sleep(poll)

    def get(self, path: str) -> Any:
        return self._send(
            urllib.request.Request(
                self.url + path,
                method="GET",
                headers={
                    "Authorization": f"Bearer {self.api_key}",
                    "User-Agent": "stalwart-agents/1",
                },
            )
        )

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return self._send(
            urllib.request.Request(
                self.url + path,
                data=json.dumps(body).encode(),
                method="POST",
                headers={
                    "Content-Type": "application/json",
                    "Authorization": f"Bearer {self.api_key}",
                    "User-Agent": "stalwart-agents/1",
                },
            )
        )

    def _send(self, request: urllib.request.Request) -> Any:
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            try:
                answer = json.loads(exc.read())
            except ValueError:
                answer = {"detail": exc.reason}
            if exc.code >= 500:
                raise SelectorUnavailableError(f"the console failed ({exc.code})") from exc
            raise RequestRefused(exc.code, answer) from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise SelectorUnavailableError(
                f"the console at {self.url} cannot answer: {exc}"
            ) from exc


def _compiled(source: str) -> Any:
    """A Colang source compiled in this process, as the console compiles it."""
    from rulebooks import compiler

    try:
        return compiler.hold_rulebook(source.encode("utf-8"), filename="policy.co")
    except compiler.RulebookError as exc:
        raise compiler.RulebookNotHeld(f"the rulebook is not held: {exc}") from exc


def _verify_here(graph: Mapping[str, Any], **given: Any) -> dict[str, Any]:
    """`verify_graph` in this process: the job read as the console reads it, proved here."""
    from proof import jobspec
    from proof.engine import ProofError, report_dict, verify_graph

    try:
        spec = jobspec.spec_of(graph, **given)
        doc = jobspec.job_document(spec)
    except jobspec.JobInvalid as exc:
        raise RequestRefused(400, exc.errors) from exc
    try:
        report = verify_graph(doc, depth=spec.session_steps, turns=spec.turns, file=spec.name)
    except ProofError as exc:
        raise ProofUnfinished(f"the proof could not run: {exc}", status="error") from exc
    except Exception as exc:  # noqa: BLE001 - never a clean result from a proof that failed
        raise ProofUnfinished(
            f"the proof could not run: {exc or type(exc).__name__}", status="error"
        ) from exc
    return report_dict(report)


class Session:
    """One conversation of one agent: read turns, check calls, record what ran."""

    agent: str

    def read(self, turn: str) -> None:
        raise NotImplementedError

    def check_tool_call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        origins: Mapping[str, str] | None = None,
        context: Context = None,
        token: str | None = None,
        labels: list[str] | None = None,
        checks: Sequence[str] | None = None,
        usage: Mapping[str, Any] | None = None,
        compensation_of: int | None = None,
        plan: Mapping[str, Any] | None = None,
        plan_token: str | None = None,
        plan_step: int | None = None,
        cost: float | None = None,
        agent: str | None = None,
        run: Mapping[str, str] | None = None,
    ) -> Check:
        """Decide one call. `origins` say where each value came from (the runtime derives them
        from the turns it read; a claim can only lower them); `labels` outside content the call
        carries; `checks` the checks switched on for it; `usage` what the host counted for it;
        `compensation_of` the history index this call undoes; `plan` the approved plan
        (`{id, steps}`) with its `plan_token` (and, optionally, the `plan_step` it claims to be);
        `cost` what the call will cost, in cents, where the host knows it (the tool's own `cost:`
        counts too; the larger is held against `cap_cost`); `agent` the agent making the call,
        where one session holds a conversation across agents (default: the session's); `run` the
        framework's run and thread ids (`{"run_id", "thread_id"}`), shown with the decision (in
        its `detail.run`, and on the console's event)."""
        raise NotImplementedError

    def record(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        result: Any,
        *,
        origins: Mapping[str, str] | None = None,
        labels: list[str] | None = None,
        cost: float | None = None,
        agent: str | None = None,
    ) -> None:
        raise NotImplementedError

    def approve(self, check: Check | str) -> str:
        """Sign a person's yes to exactly the call `check` asked about (in this process)."""
        raise SelectorUnavailableError(
            "the console's approvers answer this call: wait_for_approval(check) for their token"
        )

    def wait_for_approval(
        self, check: Check | str, *, timeout: float = 300.0, poll: float = 1.0
    ) -> str:
        """Wait for a person's answer to a `confirm`; return the token to check the call again with.

        Raises `ApprovalDenied` when it is denied or expires, `ApprovalTimeout` when nobody answers
        within `timeout` seconds. A session checked in this process has nobody to ask: it raises
        `SelectorUnavailableError`, and the call is not made.
        """
        raise SelectorUnavailableError(
            "no console to put the call to a person: set STALWART_URL to wait for an approval"
        )

    def on_approval(
        self,
        check: Check | str,
        callback: Callable[[str | None, str], None],
        *,
        timeout: float = 300.0,
    ) -> threading.Thread:
        """Call `callback(token_or_None, status)` from a thread once the request is answered."""

        def wait() -> None:
            try:
                callback(self.wait_for_approval(check, timeout=timeout), "approved")
            except ApprovalDenied as exc:
                callback(None, str(exc))
            except (ApprovalTimeout, SelectorUnavailableError) as exc:
                callback(None, f"unanswered: {exc}")

        thread = threading.Thread(target=wait, daemon=True)
        thread.start()
        return thread


def _approval_id(check: Check | Mapping[str, Any] | str) -> str:
    """The approval a check (or an executor's CONFIRM outcome, or an id) asks for."""
    if isinstance(check, Mapping):  # an executor's CONFIRM outcome
        check = str(check.get("approval") or "")
    ident = check.approval if isinstance(check, Check) else check
    if not ident:
        raise ValueError("this check asked for no approval")
    return str(ident)


def _console_answer(client: Client, request_id: str, *, timeout: float, poll: float) -> str:
    """The token (or grant) of the console's approval request once a person approved it;
    `ApprovalDenied` when denied or expired, `ApprovalTimeout` when nobody answered in time."""
    deadline = time.monotonic() + timeout
    while True:
        answer = client.get(f"/v1/approvals/{request_id}")
        if answer["status"] == "approved" and answer.get("token"):
            return str(answer["token"])
        if answer["status"] in ("denied", "expired"):
            raise ApprovalDenied(f"the call was {answer['status']}")
        if time.monotonic() >= deadline:
            raise ApprovalTimeout(f"no answer to {request_id} within {timeout:g} s")
        time.sleep(poll)


def _check_body(tool, arguments, origins, labels, context, token, **more) -> dict[str, Any]:  # noqa: ANN001
    """What the console checks: the call, with the facts of `context` and a person's token."""
    body = _call_body(tool, arguments, origins, labels)
    for name, value in more.items():
        if value is not None:
            body[name] = list(value) if name == "checks" else value
    facts = _facts(context)
    if facts is not None:
        body["context"] = dict(facts)
    if token:
        body["token"] = token
    return body


def _call_body(tool: str, arguments: Mapping[str, Any], origins, labels) -> dict[str, Any]:  # noqa: ANN001
    body: dict[str, Any] = {"tool": tool, "arguments": dict(arguments)}
    if origins:
        body["origins"] = dict(origins)
    if labels:
        body["labels"] = list(labels)
    return body


Tool = Callable[[dict[str, Any], ExecutionContext], Any]
#: The outcomes after which the run's earlier writes are undone (the runtime's rule).
UNDO_AFTER = runtime.UNDO_AFTER
Authorize = Callable[[dict[str, Any], ExecutionContext], bool]


def execute_here(
    *,
    ledger: dict[str, Any],
    entries: Sequence[Mapping[str, Any]],
    tool: str,
    arguments: Mapping[str, Any],
    function: Tool,
    write: bool,
    tenant: str,
    session: str,
    agent: str,
    user: str = "",
    authorize: Authorize | None = None,
    confirm: bool = False,
    idempotent: bool = False,
) -> dict[str, Any]:
    """The executor's rules in this process, for a call the tool check did not refuse.

    The write's key is derived from the intent (`entries` are the session history's contents, so
    the same call again with nothing in between is a retry with the same key); a key the
    in-memory `ledger` holds answers with the recorded result (`duplicate`, `suppressed`) and the
    tool is not called. Then tenancy and the domain's `authorize` (`BLOCKED`), a `confirm` that
    nobody here can answer (`CONFIRM`, nothing run), and the tool, a timeout retried with the same
    key. The caller records in its history what ran (`SUCCEEDED` without `suppressed`); the ledger
    keeps the result under the key. A write whose every attempt timed out may have had its effect:
    its key is kept as `Claimed`, and the same write again is `UNCERTAIN` (`effect_uncertain`),
    never called again, unless the catalogue marks the tool `idempotent` (the console's rule).
    """
    begun = _begin_here(
        ledger,
        entries,
        tool,
        arguments,
        write,
        tenant,
        session,
        agent,
        user,
        authorize,
        confirm,
        idempotent,
    )
    if isinstance(begun, dict):
        return begun
    status, value = execution.call_tool(function, arguments, begun)
    return _end_here(ledger, begun.key, status, value)


async def execute_here_async(
    *,
    ledger: dict[str, Any],
    entries: Sequence[Mapping[str, Any]],
    tool: str,
    arguments: Mapping[str, Any],
    function: Callable[[dict[str, Any], ExecutionContext], Awaitable[Any]],
    write: bool,
    tenant: str,
    session: str,
    agent: str,
    user: str = "",
    authorize: Authorize | None = None,
    idempotent: bool = False,
) -> dict[str, Any]:
    """`execute_here` for a coroutine function: the same rules, the tool awaited on the loop."""
    begun = _begin_here(
        ledger,
        entries,
        tool,
        arguments,
        write,
        tenant,
        session,
        agent,
        user,
        authorize,
        False,
        idempotent,
    )
    if isinstance(begun, dict):
        return begun
    status, value = await execution.call_tool_async(function, arguments, begun)
    return _end_here(ledger, begun.key, status, value)


def _begin_here(  # noqa: PLR0913 - the executor's inputs, as execute_here takes them
    ledger: dict[str, Any],
    entries: Sequence[Mapping[str, Any]],
    tool: str,
    arguments: Mapping[str, Any],
    write: bool,
    tenant: str,
    session: str,
    agent: str,
    user: str,
    authorize: Authorize | None,
    confirm: bool,
    idempotent: bool = False,
) -> dict[str, Any] | ExecutionContext:
    """The outcome when the tool is not to be called, else the context to call it with."""
    key = ""
    if write:
        key = execution.intent_key(
            organisation="local",
            session=session,
            tool=tool,
            arguments=arguments,
            step=execution.intent_step(entries, tool, arguments),
        )
        claimed = isinstance(ledger.get(key), Claimed)
        if claimed and not idempotent:
            # An attempt before this one may have had its effect, and the tool cannot tell.
            return {"outcome": "UNCERTAIN", "key": key, "reasons": ["effect_uncertain"]}
        if key in ledger and not claimed:
            return {
                "outcome": "SUCCEEDED",
                "key": key,
                "result": ledger[key],
                "duplicate": True,
                "suppressed": True,
                "reasons": ["duplicate_suppressed"],
            }
    named = execution.foreign_tenant(arguments, tenant)
    ctx = ExecutionContext(
        tenant=tenant, person=user, session=session, agent=agent, tool=tool, key=key
    )
    if named is not None or (authorize is not None and authorize(dict(arguments), ctx) is not True):
        return {
            "outcome": "BLOCKED",
            "reasons": [f"tenant: {named}" if named else "authorization_denied"],
        }
    if confirm:
        return {"outcome": "CONFIRM"}
    return ctx


@dataclass(frozen=True)
class Claimed:
    """A write's key in the ledger whose every attempt timed out: its effect is unknown."""

    error: str = ""


def _end_here(ledger: dict[str, Any], key: str, status: str, value: Any) -> dict[str, Any]:
    if status == "uncertain" and key:
        ledger[key] = Claimed(str(value or ""))
    if status in ("blocked", "failed", "uncertain"):
        kind = {"blocked": "BLOCKED", "failed": "FAILED", "uncertain": "UNCERTAIN"}[status]
        return {"outcome": kind, "key": key, "reasons": [status], "detail": {"error": value}}
    if key:
        ledger[key] = value
    return {"outcome": "SUCCEEDED", "key": key, "result": value, "duplicate": status == "replayed"}


def _check_of(decision: Any) -> Check:
    answer = decision.to_dict()
    return Check(
        answer["decision"],
        list(answer.get("reasons", [])),
        dict(answer.get("detail", {})),
        answer.get("rule"),
        answer.get("detail", {}).get("approval"),
    )


class LocalSession(Session):
    """A session decided in this process: a thin door onto `runtime.RuntimeSession`."""

    def __init__(self, session: runtime.RuntimeSession) -> None:
        self.runtime = session
        self.agent = session.agent
        self.tenant = session.tenant

    # What the runtime holds, for hosts and tests that look at it.
    @property
    def history(self) -> engine.History:
        return self.runtime.history

    @history.setter
    def history(self, value: engine.History) -> None:
        self.runtime.history = value

    @property
    def _check(self) -> engine.ToolCheck:
        return self.runtime.wired.check

    @property
    def ledger(self) -> dict[str, Any]:
        return self.runtime.ledger

    @property
    def turns(self) -> list[str]:
        return self.runtime.turns

    def read(self, turn: str) -> None:
        self.runtime.read(turn)

    def check_tool_call(
        self,
        tool,
        arguments,
        *,
        origins=None,
        context=None,
        token=None,  # noqa: ANN001
        labels=None,
        checks=None,
        usage=None,
        compensation_of=None,
        plan=None,
        plan_token=None,
        plan_step=None,
        cost=None,
        agent=None,
        run=None,
    ) -> Check:
        try:
            decision = self.runtime.check(
                tool,
                arguments,
                agent=agent,
                run=run,
                origins=origins,
                labels=labels,
                compensation_of=compensation_of,
                plan=plan,
                plan_token=plan_token,
                plan_step=plan_step,
                context=context,
                token=token,
                checks=checks,
                usage=usage,
                cost=cost,
            )
        except engine.UnknownCheck as exc:
            raise RequestRefused(400, {"checks": [str(exc)]}) from exc
        except runtime.FrameworkIdsInvalid as exc:
            raise RequestRefused(400, {k: [v] for k, v in exc.errors.items()}) from exc
        except Exception as exc:  # noqa: BLE001 - the runtime could not answer: no call is made
            raise SelectorUnavailableError(f"the tool check could not answer: {exc}") from exc
        return _check_of(decision)

    def record(
        self,
        tool,
        arguments,
        result,
        *,
        origins=None,
        labels=None,
        cost=None,
        agent=None,  # noqa: ANN001
    ) -> None:
        self.runtime.record(
            tool, arguments, result, origins=origins, labels=labels, cost=cost, agent=agent
        )

    def approve(self, check: Check | str) -> str:
        ident = check.approval if isinstance(check, Check) else check
        try:
            return self.runtime.approve(str(ident or ""))
        except KeyError as exc:
            raise ValueError(str(exc.args[0])) from exc

    def approve_call(self, tool: str, arguments: Mapping[str, Any]) -> str:
        """Sign the host's own yes to exactly this call at this point, where something after the
        tool check held it for a person (the firewall's `require_approval`): the call is then
        checked again with the token, and runs only as approved."""
        return self.runtime.token_for(self.runtime.call_of(tool, arguments))

    def deny(self, check: Check | str) -> None:
        self.runtime.deny(check.approval if isinstance(check, Check) else check)

    def approve_plan(self, plan: Mapping[str, Any]) -> str:
        """Sign a person's approval of a plan (`{id, steps}`) in this process: its plan token."""
        return self.runtime.approve_plan(plan)

    def wait_for_approval(self, check, *, timeout=300.0, poll=1.0) -> str:  # noqa: ANN001
        """Ask the session's approver (in this process): the token on yes.

        `ApprovalDenied` on no; with no approver nobody can answer here, so
        `SelectorUnavailableError` is raised and the call is not made.
        """
        ident = _approval_id(check)
        try:
            token = self.runtime.ask(ident)
        except runtime.NoApprover as exc:
            raise SelectorUnavailableError(
                "nobody to put the call to in this process: give the session an approver, or set "
                "STALWART_URL to wait for the console's approvers"
            ) from exc
        except KeyError as exc:
            raise ValueError(str(exc.args[0])) from exc
        if token is None:
            raise ApprovalDenied("the call was denied")
        return token

    def execute(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        function: Tool | None = None,
        *,
        origins: Mapping[str, str] | None = None,
        labels: list[str] | None = None,
        context: Context = None,
        token: str | None = None,
        authorize: Authorize | None = None,
        user: str = "",
        checks: Sequence[str] | None = None,
        usage: Mapping[str, Any] | None = None,
        compensation_of: int | None = None,
        cost: float | None = None,
        agent: str | None = None,
        run: Mapping[str, str] | None = None,
        undo_on_refusal: bool = True,
    ) -> dict[str, Any]:
        """The executor in this process: check, then run once per intent (ledger in memory).

        A `confirm` comes back as `CONFIRM` with nothing run and its `approval` (answer it with
        `wait_for_approval` or `approve`, then execute again with the token); a refusal, a block
        or a failure undoes the run's earlier writes last first (`undone`), the check's refusal
        only with `undo_on_refusal` (see `runtime.RuntimeSession.execute`).
        """
        try:
            return self.runtime.execute(
                tool,
                arguments,
                function,
                authorize=authorize,
                user=user,
                undo_on_refusal=undo_on_refusal,
                origins=origins,
                labels=labels,
                context=context,
                token=token,
                checks=checks,
                usage=usage,
                compensation_of=compensation_of,
                cost=cost,
                agent=agent,
                run=run,
            )
        except engine.UnknownCheck as exc:
            raise RequestRefused(400, {"checks": [str(exc)]}) from exc
        except runtime.FrameworkIdsInvalid as exc:
            raise RequestRefused(400, {k: [v] for k, v in exc.errors.items()}) from exc

    async def execute_async(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        function: Callable[[dict[str, Any], ExecutionContext], Awaitable[Any]],
        *,
        token: str | None = None,
        **given: Any,
    ) -> dict[str, Any]:
        """`execute` for a coroutine `function(arguments, context)`, on the caller's event loop:
        the check and the recording run there (pure CPU), the tool is awaited, no thread."""
        try:
            return await self.runtime.execute_async(tool, arguments, function, token=token, **given)
        except engine.UnknownCheck as exc:
            raise RequestRefused(400, {"checks": [str(exc)]}) from exc

    def undo(self) -> list[dict[str, Any]]:
        """Undo this run's writes now, last first (a host that cancels the run)."""
        return self.runtime.undo_run()


class ConnectedSession(LocalSession):
    """A session decided in this process from the console's signed bundle (`connected.py`).

    Every check asks the bundle first: past its max age, or not verifying, the check raises
    `SelectorUnavailableError` and nothing is decided or run. `wait_for_approval` files the call
    in the console's approvals queue (unless the session was given its own `approver`), waits for
    the person's answer, verifies the console's signed grant and signs this process's token.
    """

    def __init__(
        self, session: runtime.RuntimeSession, *, client: Client, feed: connected.BundleFeed
    ) -> None:
        super().__init__(session)
        self.client = client
        self.feed = feed
        self.id = session.session
        self._filed: dict[tuple[str, int], str] = {}  # (call digest, history point) -> request id

    def evaluate(self, tool: str, arguments: Mapping[str, Any], **call: Any) -> dict[str, Any]:
        """The firewall's answer from the bundle, for a call of this session's agent
        (`stage`, `skill`, `destination` as `POST /v1/firewall/evaluate` takes them): the
        published version that decides, then the bundle's switch and hold. What it decides goes
        to the decision log as the console records an evaluation (a deny, an egress, every call
        when the policy has sequence rules), so the console's feed and sequence matchers see the
        calls decided here too; `SelectorUnavailableError` where the bundle cannot answer."""
        known = self.runtime.wired.catalogue.tools.get(tool)
        body = {"tool": tool, "arguments": dict(arguments), "agent": self.agent, **call}
        # the switch and hold of the agent making the call (`agent=`: a handoff), in its bundle
        found = connected.bundle_for(self.feed, str(body.get("agent") or ""), self.agent)
        result = connected.firewall_decide(
            found,
            body,
            reads=known is not None and known.kind == "read",
            session=self.id,
        )
        self.runtime.log_evaluation(body, result, sequences=connected.has_sequences(found))
        return result

    def wait_for_approval(self, check, *, timeout=300.0, poll=1.0) -> str:  # noqa: ANN001
        pending = self._pending(check)
        if self.runtime.approver is not None and not self.held(pending.call):
            return super().wait_for_approval(check, timeout=timeout, poll=poll)
        agent, asked = self._asked(pending)
        filed = self.file_request(check)
        try:
            token = _console_answer(self.client, filed, timeout=timeout, poll=poll)
        except ApprovalDenied:
            self._filed.pop(asked, None)  # asked again, it is a new question
            self.runtime.deny(pending.id)
            raise
        try:
            grant = connected.bundles.verify_grant(token, self.feed.key)
        except connected.bundles.BundleRefused as exc:
            raise SelectorUnavailableError(f"the console's answer does not verify: {exc}") from exc
        wanted = {
            "approval": filed,
            "agent": agent,
            "session": self.id,
            "call": connected.bundles.call_digest({**pending.call, "agent": agent}),
            # The person approved the call at the point it was asked at: a session that went on
            # meanwhile would sign the token at another point, which nobody approved.
            "history_at": len(self.runtime.history),
        }
        wrong = sorted(name for name, value in wanted.items() if grant.get(name) != value)
        expires = grant.get("expires_at")
        if not isinstance(expires, (int, float)) or expires < time.time():
            wrong.append("expires_at")
        if wrong:
            raise SelectorUnavailableError(
                f"the console's grant is not for this call at this point: {', '.join(wrong)}"
            )
        return self.runtime.approve(pending.id, granted=True)

    def _pending(self, check: Any) -> Any:
        try:
            return self.runtime.request(_approval_id(check))
        except KeyError as exc:
            raise ValueError(str(exc.args[0])) from exc

    def _asked(self, pending: Any) -> tuple[str, tuple[str, int]]:
        """The agent making the pending call, and the call's key among the requests filed: the
        same call asked again at the same point of the history is one request, as the console's
        check files one (`approvals._asked_already`), and its answer answers both."""
        agent = str(pending.call.get("agent") or self.agent)
        digest = connected.bundles.call_digest({**pending.call, "agent": agent})
        return agent, (digest, len(self.runtime.history))

    def file_request(self, check: Any) -> str:
        """The id of the console's approval request for the call `check` put to a person, filed
        in its queue the first time it is asked about at this point of the history."""
        pending = self._pending(check)
        agent, asked = self._asked(pending)
        at = asked[1]
        filed = self._filed.get(asked)
        if filed is None:
            detail = pending.decision.detail
            origins = {
                str(name): str(item.get("origin", "model"))
                for name, item in (detail.get("origins") or {}).items()
                if isinstance(item, Mapping)
            }
            tool = str(pending.call.get("tool") or "")
            known = self.runtime.wired.catalogue.tools.get(tool)
            answer = self.client.post(
                "/v1/approvals",
                {
                    "agent": agent,
                    "session": self.id,
                    "call": {
                        "tool": tool,
                        "arguments": dict(pending.call.get("arguments") or {}),
                    },
                    "reasons": list(pending.decision.reasons),
                    "origins": origins,
                    "history_at": at,
                    # shown to approvers masked, as the console's own requests show them
                    "secret": sorted(known.secret) if known is not None else [],
                    # the person the call is for, who may not answer it
                    "user": pending.user,
                },
            )
            filed = self._filed[asked] = str(answer["id"])
        return filed

    def held(self, call: Mapping[str, Any]) -> bool:
        """Whether `call` is a write in a session the console holds now: its yes is then the
        console's approvers' alone (`wait_for_approval`), never one signed in this process."""
        return self.runtime.controls.held_write(self.runtime, call)


class RemoteSession(Session):
    """A session the console decides and records: the same runtime, over its database."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        agent: str,
        *,
        context: Context = None,
        tools: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        self.client = client
        self.id = session_id
        self.agent = agent
        self.context = context
        self.tools = dict(tools or {})
        # One call at a time from this process (a model turn's parallel calls run in threads):
        # the console checks each call against the effects reported before it, and a call that
        # ran here is reported only after its tool returned.
        self._serial = threading.RLock()

    def _facts(self, context: Context) -> Context:
        if self.context is None or context is None:
            return context if context is not None else self.context
        return {**dict(_facts(self.context) or {}), **dict(_facts(context) or {})}

    def read(self, turn: str) -> None:
        self.client.post(f"/v1/sessions/{self.id}/read", {"turn": turn})

    def check_tool_call(
        self,
        tool,
        arguments,
        *,
        origins=None,
        context=None,
        token=None,  # noqa: ANN001
        labels=None,
        checks=None,
        usage=None,
        compensation_of=None,
        plan=None,
        plan_token=None,
        plan_step=None,
        cost=None,
        agent=None,
        run=None,
    ) -> Check:
        body = _check_body(
            tool,
            arguments,
            origins,
            labels,
            self._facts(context),
            token,
            checks=checks,
            usage=usage,
            compensation_of=compensation_of,
            plan=plan,
            plan_token=plan_token,
            plan_step=plan_step,
            cost=cost,
            agent=agent if agent and agent != self.agent else None,
            run=dict(run) if run else None,
        )
        return Check.from_dict(self.client.post(f"/v1/sessions/{self.id}/check", body))

    def record(
        self,
        tool,
        arguments,
        result,
        *,
        origins=None,
        labels=None,
        cost=None,
        agent=None,  # noqa: ANN001
    ) -> None:
        body = {**_call_body(tool, arguments, origins, labels), "result": result}
        if cost is not None:
            body["cost"] = cost
        if agent and agent != self.agent:
            body["agent"] = agent
        self.client.post(f"/v1/sessions/{self.id}/record", body)

    def execute(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        function: Tool | None = None,
        *,
        undo_on_refusal: bool = True,
        **given: Any,
    ) -> dict[str, Any]:
        """Run a call through the console's executor (see `_execute`); a refusal, a block or a
        failure undoes the run's earlier writes, last first (`undone`), each undo sent through
        the executor as the undo of its step. With `undo_on_refusal=False` the check's refusal
        (`REFUSED`, `REJECTED`) undoes nothing, as a door's own refusal before it. Calls from
        several threads run one at a time."""
        with runtime.one_call_at_a_time(self, self._serial):
            outcome = self._execute(tool, arguments, function, **given)
            undoes = UNDO_AFTER if undo_on_refusal else UNDO_AFTER - {"REFUSED", "REJECTED"}
            if outcome.get("outcome") in undoes and given.get("compensation_of") is None:
                undone = self.undo()
                if undone:
                    outcome["undone"] = undone
            return outcome

    def undo(self) -> list[dict[str, Any]]:
        """Undo the run's writes now, last first: the console plans it, this process runs it."""
        plan = self.client.post(f"/v1/sessions/{self.id}/undo", {})
        report: list[dict[str, Any]] = []
        for step in plan.get("steps", []):
            item = {k: step[k] for k in ("index", "tool", "status") if k in step}
            if step.get("status") == "compensate":
                item["compensation"] = step["compensation"]
                function = self.tools.get(step["compensation"])
                if function is None:
                    item.update(status="failed", reasons=["no_function"])
                else:
                    ran = self._execute(
                        step["compensation"],
                        step.get("arguments") or {},
                        function,
                        compensation_of=step["index"],
                        agent=step.get("agent"),
                    )
                    ok = ran.get("outcome") in ("SUCCEEDED", "PARTIAL")
                    item["status"] = "compensated" if ok else "failed"
                    if not ok:
                        item["reasons"] = list(ran.get("reasons") or [])
            elif step.get("missing"):
                item["missing"] = list(step["missing"])
            report.append(item)
        return report

    def _execute(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        function: Tool | None = None,
        *,
        origins: Mapping[str, str] | None = None,
        labels: list[str] | None = None,
        context: Context = None,
        token: str | None = None,
        authorize: Authorize | None = None,
        user: str = "",
        checks: Sequence[str] | None = None,
        usage: Mapping[str, Any] | None = None,
        compensation_of: int | None = None,
        cost: Any = None,
        agent: str | None = None,
        run: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Run a call through the console's executor; the tool itself runs here, once per intent.

        The console checks the call, applies the write switch and tenancy, asks a person when the
        check says so (`CONFIRM` with `approval`: wait for it, then call again with the token) and
        claims the intent's key in its ledger; only then is `function(arguments, context)` called,
        with `context.key` to pass on to the system it writes to and `context.tenant` from the
        API key's organisation. What it did is reported back and recorded once.
        """
        body = _check_body(
            tool,
            arguments,
            origins,
            labels,
            self._facts(context),
            token,
            checks=checks,
            usage=usage,
            compensation_of=compensation_of,
            cost=cost,
        )
        named = {}
        if agent and agent != self.agent:
            named["agent"] = agent
        if run:
            named["run"] = dict(run)
        body.update(named)
        if user:
            body["user"] = user
        if function is None:
            function = self.tools.get(tool)
        if function is None:
            raise ValueError(f"no function runs `{tool}`: pass one, or give the session `tools`")
        from stalwart_agents.chat import as_tool

        function = as_tool(function)
        begun = self.client.post(f"/v1/sessions/{self.id}/execute", body)
        if begun.get("outcome") != "RUN":
            return begun
        ctx = ExecutionContext(
            tenant=begun["tenant"],
            person=user,
            session=self.id,
            agent=agent or self.agent,
            tool=tool,
            key=begun.get("key", ""),
        )
        report = {**_call_body(tool, arguments, origins, labels), "key": ctx.key, **named}
        if compensation_of is not None:
            report["compensation_of"] = compensation_of
        if cost is not None:
            report["cost"] = cost
        if authorize is not None and authorize(dict(arguments), ctx) is not True:
            report["blocked"] = "the domain refused the call"
        else:
            status, value = execution.call_tool(function, arguments, ctx)
            if status == "uncertain":
                return {"outcome": "UNCERTAIN", "key": ctx.key, "reasons": ["timeout"]}
            if status in ("blocked", "failed"):
                report[status] = str(value)
            else:
                report["result"] = value
                report["replayed"] = status == "replayed"
        return self.client.post(f"/v1/sessions/{self.id}/effects", report)

    def wait_for_approval(self, check, *, timeout=300.0, poll=1.0) -> str:  # noqa: ANN001
        return _console_answer(self.client, _approval_id(check), timeout=timeout, poll=poll)
