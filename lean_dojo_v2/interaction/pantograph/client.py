"""``AsyncPantographClient``: the typed, low-level async API of one Pantograph REPL.

One method per REPL command; replies become the typed objects of :mod:`.protocol`; an error
object becomes :class:`~.protocol.PantographError` (except for ``goal.tactic``, whose four outcome
shapes all come back as a :class:`~.protocol.TacticOutcome`). Requests are serialised (one in
flight; replies are FIFO), each under a client-side watchdog. A timeout, a crash or a garbage line
kills the process and raises an :class:`~lean_dojo_v2.interaction.types.EnvCrashedError` subclass;
the client relaunches in the background and bumps :attr:`generation`, so states from before are known
to be stale. REPL options are restored after every relaunch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import weakref
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from ...data.jsonio import loads
from ...errors import DataFormatError, LeanNotFoundError
from ..types import EnvClosedError, EnvCrashedError, InteractionError, StaleStateError
from .config import PantographConfig
from .locate import (
    Located,
    ReplVersion,
    check_versions,
    lake_lean_path,
    locate_repl,
    query_version,
)
from .process import ReplProcess, ReplStartError, launch_directory
from .protocol import (
    CompilationUnit,
    ContinuedGoal,
    DistilTarget,
    GoalPrint,
    InspectResult,
    PantographError,
    StartedGoal,
    TacticOutcome,
)

logger = logging.getLogger("lean_dojo_v2.interaction.pantograph")


class GoalTacticFields(TypedDict, total=False):
    """The fields of ``goal.tactic`` other than the tactic text (:meth:`goal_tactic`)."""

    mode: str | None
    expr: str | None
    have: str | None
    let: str | None
    draft: str | None
    binder_name: str | None
    goal_id: int | None
    auto_resume: bool | None


# Commands that run Lean code: the REPL `timeout` option bounds them.
_TIMED = frozenset(
    {
        "goal.tactic",
        "goal.start",
        "goal.continue",
        "frontend.process",
        "frontend.distil",
        "frontend.track",
        "expr.echo",
        "env.add",
    }
)
_TACTIC_FIELDS = ("tactic", "mode", "expr", "have", "let", "draft")


class ClientClosedError(EnvClosedError):
    """The client was closed."""


class AsyncPantographClient:
    """One REPL process (relaunched as needed). Create it, ``await client.start()`` (or let the
    first request start it), call the command methods, ``await client.close()``."""

    def __init__(self, config: PantographConfig | None = None, **overrides: object) -> None:
        cfg = config or PantographConfig()
        self.config = cfg.with_(**overrides) if overrides else cfg
        self.generation = 0
        self.restarts = 0
        self.version: ReplVersion | None = None
        self.lean_version: str | None = None
        self.located: Located | None = None
        self._proc: ReplProcess | None = None
        self._lock: asyncio.Lock | None = None
        self._restart_task: asyncio.Task[ReplProcess] | None = None
        self._prepared = False
        self._child_env: dict[str, str] | None = None
        self._options: dict[str, Any] = dict(self.config.options)
        self._repl_timeout_ms = 0
        self._pending_delete: deque[tuple[int, int]] = deque()
        self._live: dict[int, weakref.ref[Any]] = {}
        self._closed = False
        self.last_stderr = ""

    # ------------------------------------------------------------------------------- life cycle
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def process(self) -> ReplProcess | None:
        return self._proc

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def requests_since_start(self) -> int:
        return self._proc.requests if self._proc is not None else 0

    @property
    def live_states(self) -> int:
        """States handed out in this generation and not yet released."""
        return len(self._live)

    def stderr_tail(self, n: int | None = None) -> str:
        if self._proc is not None:
            return self._proc.stderr_tail(n)
        return self.last_stderr

    def _get_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def start(self) -> None:
        """Locate the binary, check versions, compute LEAN_PATH and launch (idempotent)."""
        async with self._get_lock():
            await self._ensure()

    async def _prepare(self) -> None:
        if self._prepared:
            return
        cfg = self.config
        located = await asyncio.to_thread(locate_repl, cfg.command)
        env = dict(os.environ)
        if cfg.lean_path is not None:
            env["LEAN_PATH"] = cfg.lean_path
        elif cfg.project_path is not None:
            env["LEAN_PATH"] = await asyncio.to_thread(
                lake_lean_path, cfg.project_path, cfg.lake_timeout
            )
        if cfg.env:
            env.update(cfg.env)
        if cfg.check_version:
            # The probe is part of starting up: it never waits longer than ready_timeout.
            probe_timeout = min(cfg.version_timeout, cfg.ready_timeout)
            self.version = await asyncio.to_thread(query_version, located, probe_timeout, env)
            self.lean_version = check_versions(self.version, located, cfg.project_path)
        self.located = located
        self._child_env = env
        self._prepared = True

    async def _launch(self) -> ReplProcess:
        await self._prepare()
        assert self.located is not None
        cfg = self.config
        args = [*cfg.imports, *cfg.core_option_args()]
        cwd = launch_directory(self.located.binary, cfg.project_path)
        try:
            proc = await ReplProcess.launch(
                self.located.command,
                args,
                cwd=cwd,
                env=self._child_env,
                ready_timeout=cfg.ready_timeout,
                stderr_lines=cfg.stderr_lines,
                stderr_tail_lines=cfg.stderr_tail_lines,
            )
        except ReplStartError as exc:
            if cfg.project_path is not None or (self._child_env or {}).get("LEAN_SYSROOT"):
                raise
            where = str(cwd) if cwd is not None else os.getcwd()
            raise ReplStartError(
                f"{exc}\nNo project_dir was given, so the REPL ran in {where}"
                + (
                    ""
                    if cwd is not None
                    else " (the binary's directory has no lean-toolchain file)"
                )
                + ": elan then picks the Lean toolchain named by the lean-toolchain file there "
                "or its default one, which may not be the Lean the binary was built with "
                "(an Init .olean of another version, or no lean at all). Give "
                "PantographConfig.project_dir, put the binary's lean-toolchain beside it (as "
                "PyPantograph ships it), or set LEAN_SYSROOT (in PantographConfig.env) to that "
                "toolchain's directory."
            ) from exc
        try:
            if self._options:
                reply = await proc.request("options.set", self._options, cfg.request_timeout)
                if "error" in reply:
                    raise PantographError(
                        str(reply["error"]), str(reply.get("desc", "")), "options.set"
                    )
        except BaseException:
            await proc.kill()
            raise
        self._repl_timeout_ms = int(self._options.get("timeout", 0) or 0)
        self._new_generation()
        self._proc = proc
        logger.info(
            "Pantograph REPL ready (pid %s, generation %s): %s",
            proc.pid,
            self.generation,
            " ".join(proc.command),
        )
        return proc

    def _new_generation(self) -> None:
        self.generation += 1
        self._live = {}
        self._pending_delete.clear()

    async def _ensure(self) -> ReplProcess:
        if self._closed:
            raise ClientClosedError("this Pantograph client is closed")
        proc = self._proc
        if proc is not None and proc.alive:
            return proc
        task = self._restart_task
        if task is not None:
            self._restart_task = None
            try:
                proc = await task
            except EnvCrashedError:
                raise
            except BaseException as exc:
                if isinstance(exc, (InteractionError, LeanNotFoundError)):
                    raise
                raise EnvCrashedError(f"restarting the Pantograph REPL failed: {exc!r}") from exc
            if proc.alive:
                return proc
        return await self._launch()

    def _on_dead(self, proc: ReplProcess) -> None:
        """After a crash/timeout/garbage: forget the process, relaunch in the background."""
        if self._proc is proc:
            self.last_stderr = proc.stderr_tail()
            self._proc = None
            self._new_generation()  # its states are gone, even before the relaunch
            self.restarts += 1
            if self.config.auto_restart and not self._closed and self._restart_task is None:
                task = asyncio.get_running_loop().create_task(self._launch())
                task.add_done_callback(_log_restart_failure)
                self._restart_task = task

    async def restart(self) -> None:
        """Kill the REPL and launch a fresh one (all states become stale)."""
        async with self._get_lock():
            await self._restart_locked()

    async def _restart_locked(self) -> None:
        proc, self._proc = self._proc, None
        self._new_generation()
        if proc is not None:
            self.last_stderr = proc.stderr_tail()
            await proc.close(grace=1.0)
        task, self._restart_task = self._restart_task, None
        if task is not None:
            with contextlib.suppress(BaseException):
                old = await task
                await old.kill()
        self.restarts += 1
        await self._launch()

    def needs_recycle(self) -> bool:
        """True when the memory guard says the REPL should be restarted (max_requests commands
        served, or RSS above max_rss_mb)."""
        proc = self._proc
        if proc is None or not proc.alive:
            return False
        cfg = self.config
        if cfg.max_requests is not None and proc.requests >= cfg.max_requests:
            return True
        if cfg.max_rss_mb is not None:
            rss = proc.rss_bytes()
            if rss is not None and rss > cfg.max_rss_mb * 1024 * 1024:
                return True
        return False

    async def recycle_if_needed(self) -> bool:
        """Apply the memory guard: restart when :meth:`needs_recycle`; True when it did."""
        async with self._get_lock():
            if not self.needs_recycle():
                return False
            proc = self._proc
            assert proc is not None
            logger.info(
                "memory guard: restarting Pantograph REPL pid %s after %s requests",
                proc.pid,
                proc.requests,
            )
            await self._restart_locked()
            return True

    async def close(self) -> None:
        """Shut the REPL down (EOF on stdin, then kill)."""
        if self._closed:
            return
        self._closed = True
        task, self._restart_task = self._restart_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                old = await task
                await old.kill()
        proc, self._proc = self._proc, None
        if proc is not None:
            self.last_stderr = proc.stderr_tail()
            await proc.close()

    async def __aenter__(self) -> AsyncPantographClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------------------------- state GC
    def track(self, owner: object, state_id: int) -> None:
        """Count ``state_id`` as live while ``owner`` (a state handle) is alive; once it is
        garbage-collected the state is released (freed by the next batched ``goal.delete``)."""
        gen = self.generation
        release = self.release
        self._live[state_id] = weakref.ref(owner, lambda _ref: release(gen, state_id))

    def release(self, generation: int, state_id: int) -> None:
        """Mark a state as dropped; it is freed with the next batched ``goal.delete``. Safe to
        call from any thread (weakref callbacks do)."""
        if (
            generation == self.generation
            and not self._closed
            and self._live.pop(state_id, None) is not None
        ):
            self._pending_delete.append((generation, state_id))

    def _flush_deletes(self, proc: ReplProcess, force: bool = False) -> None:
        pending = self._pending_delete
        if not pending or (not force and len(pending) < self.config.gc_batch):
            return
        gen = self.generation
        ids: list[int] = []
        while pending:
            g, sid = pending.popleft()
            if g == gen:
                ids.append(sid)
        if ids:
            # Pipelined ahead of the next request; its reply is matched FIFO and dropped.
            fut = proc.send(ReplProcess.encode("goal.delete", {"stateIds": ids}))
            fut.add_done_callback(_ignore_reply)

    # ----------------------------------------------------------------------------- requests
    async def request(
        self,
        cmd: str,
        payload: object = None,
        *,
        timeout: float | None = None,
        generation: int | None = None,
    ) -> dict[str, Any]:
        """Send a raw command; the decoded reply (error objects included).

        ``timeout`` (s): for commands that run Lean code the REPL's own ``timeout`` option is set
        to it (the REPL answers ``interrupt`` and survives), and the client watchdog waits
        ``config.watchdog_limit(timeout)``; without it the watchdog waits ``request_timeout``.
        ``generation``: the request refers to states of that process generation; if the REPL
        was restarted since, :class:`StaleStateError` is raised instead of sending it (a state
        id of the old process could name another state of the new one).
        """
        async with self._get_lock():
            return await self._request_locked(cmd, payload, timeout, generation)

    async def _request_locked(
        self, cmd: str, payload: object, timeout: float | None, generation: int | None = None
    ) -> dict[str, Any]:
        cfg = self.config
        proc = self._proc
        if proc is None or not proc.alive or self._closed:
            proc = await self._ensure()
        if generation is not None and generation != self.generation:
            raise StaleStateError(
                f"{cmd}: the state is from process generation {generation}, but the Pantograph "
                f"REPL was restarted since (now generation {self.generation}); its states are gone"
            )
        try:
            if cmd in _TIMED:
                want = (
                    max(1, int(timeout * 1000))
                    if timeout is not None
                    else int(self._options.get("timeout", 0) or 0)
                )
                if want != self._repl_timeout_ms:
                    reply = await proc.request(
                        "options.set", {"timeout": want}, cfg.request_timeout
                    )
                    if "error" in reply:
                        raise PantographError(
                            str(reply["error"]), str(reply.get("desc", "")), "options.set"
                        )
                    self._repl_timeout_ms = want
            self._flush_deletes(proc)
            limit = cfg.watchdog_limit(timeout) if timeout is not None else cfg.request_timeout
            return await proc.request(cmd, payload, limit)
        except EnvCrashedError:
            await proc.kill()
            self._on_dead(proc)
            raise

    async def call(
        self,
        cmd: str,
        payload: object = None,
        *,
        timeout: float | None = None,
        generation: int | None = None,
    ) -> dict[str, Any]:
        """:meth:`request`, with an error reply raised as :class:`PantographError`."""
        reply = await self.request(cmd, payload, timeout=timeout, generation=generation)
        if "error" in reply:
            raise PantographError(
                str(reply["error"]), str(reply.get("desc", "")), cmd, self.stderr_tail(10)
            )
        return reply

    # -------------------------------------------------------------------------- commands
    async def options_set(self, **options: bool | int | str) -> None:
        """``options.set``; the options are kept and restored after every relaunch."""
        for key in ("printJsonPretty", "noRepeat"):
            if options.get(key):
                raise InteractionError(f"option {key} is not supported by this client")
        await self.call("options.set", options)
        self._options.update(options)
        if "timeout" in options:
            self._repl_timeout_ms = int(options["timeout"] or 0)

    async def options_print(self) -> dict[str, Any]:
        return await self.call("options.print", {})

    async def stat(self) -> int:
        """Number of live goal states in the REPL."""
        return int((await self.call("stat", {}))["nGoals"])

    async def reset(self) -> int:
        """Drop every goal state (ids restart at 0, so this starts a new generation)."""
        n = int((await self.call("reset", {}))["nGoals"])
        self._new_generation()
        return n

    async def goal_start(
        self,
        expr: str | None = None,
        *,
        copy_from: str | None = None,
        levels: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> StartedGoal:
        """``goal.start`` from a type ``expr`` or the type of constant ``copy_from``."""
        if (expr is None) == (copy_from is None):
            raise ValueError("goal_start needs exactly one of expr and copy_from")
        payload: dict[str, Any] = {"expr": expr} if expr is not None else {"copyFrom": copy_from}
        if levels is not None:
            payload["levels"] = list(levels)
        reply = await self.call("goal.start", payload, timeout=timeout)
        return StartedGoal(int(reply["stateId"]), reply.get("root"))

    async def goal_start_print(
        self,
        expr: str | None = None,
        *,
        copy_from: str | None = None,
        levels: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> tuple[StartedGoal, GoalPrint]:
        """``goal.start`` then ``goal.print`` of its goals, with no other request (nor a restart)
        in between, so the printed goals belong to the new state."""
        if (expr is None) == (copy_from is None):
            raise ValueError("goal_start_print needs exactly one of expr and copy_from")
        payload: dict[str, Any] = {"expr": expr} if expr is not None else {"copyFrom": copy_from}
        if levels is not None:
            payload["levels"] = list(levels)
        async with self._get_lock():
            reply = await self._request_locked("goal.start", payload, timeout)
            generation = self.generation
            if "error" in reply:
                raise PantographError(
                    str(reply["error"]),
                    str(reply.get("desc", "")),
                    "goal.start",
                    self.stderr_tail(10),
                )
            started = StartedGoal(int(reply["stateId"]), reply.get("root"))
            try:
                printed = await self._request_locked(
                    "goal.print", {"stateId": started.state_id, "goals": True}, None, generation
                )
            except StaleStateError as exc:
                raise EnvCrashedError(
                    f"the Pantograph REPL restarted during goal.start: {exc}"
                ) from None
            if "error" in printed:
                raise PantographError(
                    str(printed["error"]), str(printed.get("desc", "")), "goal.print"
                )
            return started, GoalPrint.from_json(printed)

    async def goal_tactic(
        self,
        state_id: int,
        tactic: str | None = None,
        *,
        mode: str | None = None,
        expr: str | None = None,
        have: str | None = None,
        let: str | None = None,
        draft: str | None = None,
        binder_name: str | None = None,
        goal_id: int | None = None,
        auto_resume: bool | None = None,
        timeout: float | None = None,
        generation: int | None = None,
    ) -> TacticOutcome:
        """``goal.tactic`` with exactly one of ``tactic`` (text), ``mode``
        (``"tactic"``/``"conv"``/``"calc"``), ``expr``, ``have``, ``let``, ``draft``. Every
        outcome shape comes back as a :class:`TacticOutcome` (protocol errors included)."""
        if (
            tactic is not None
            and mode is None
            and expr is None
            and have is None
            and let is None
            and draft is None
        ):
            payload: dict[str, Any] = {"stateId": state_id, "tactic": tactic}
        else:
            fields = {
                "tactic": tactic,
                "mode": mode,
                "expr": expr,
                "have": have,
                "let": let,
                "draft": draft,
            }
            given = [(k, v) for k, v in fields.items() if v is not None]
            if len(given) != 1:
                raise ValueError(f"goal_tactic needs exactly one of {', '.join(_TACTIC_FIELDS)}")
            if mode is not None and mode not in ("tactic", "conv", "calc"):
                raise ValueError(f"mode must be 'tactic', 'conv' or 'calc', got {mode!r}")
            payload = {"stateId": state_id, given[0][0]: given[0][1]}
        if goal_id is not None:
            payload["goalId"] = goal_id
        if auto_resume is not None:
            payload["autoResume"] = auto_resume
        if binder_name is not None:
            payload["binderName"] = binder_name
        return TacticOutcome.from_json(
            await self.request("goal.tactic", payload, timeout=timeout, generation=generation)
        )

    async def goal_continue(
        self,
        target: int,
        *,
        branch: int | None = None,
        goals: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> ContinuedGoal:
        """``goal.continue``: resume ``target`` from a solved ``branch`` state, or bring dormant
        ``goals`` (mvar names) back."""
        if (branch is None) == (goals is None):
            raise ValueError("goal_continue needs exactly one of branch and goals")
        payload: dict[str, Any] = {"target": target}
        if branch is not None:
            payload["branch"] = branch
        else:
            payload["goals"] = list(goals or ())
        return ContinuedGoal.from_json(await self.call("goal.continue", payload, timeout=timeout))

    async def goal_delete(self, state_ids: Sequence[int], *, generation: int | None = None) -> None:
        """Free states (unknown ids are ignored by the REPL)."""
        ids = [int(i) for i in state_ids]
        if generation is None or generation == self.generation:
            for i in ids:
                self._live.pop(i, None)
        if ids:
            await self.call("goal.delete", {"stateIds": ids}, generation=generation)

    async def goal_print(
        self,
        state_id: int,
        *,
        goals: bool = True,
        root_expr: bool = False,
        parent_exprs: bool = False,
        extra_mvars: Sequence[str] | None = None,
        generation: int | None = None,
    ) -> GoalPrint:
        payload: dict[str, Any] = {"stateId": state_id, "goals": goals}
        if root_expr:
            payload["rootExpr"] = True
        if parent_exprs:
            payload["parentExprs"] = True
        if extra_mvars:
            payload["extraMVars"] = list(extra_mvars)
        return GoalPrint.from_json(await self.call("goal.print", payload, generation=generation))

    async def frontend_process(
        self,
        file: str | None = None,
        *,
        file_name: str | None = None,
        read_header: bool = False,
        inherit_env: bool = False,
        new_constants: bool = False,
        invocations: bool = False,
        sorrys: bool = False,
        type_errors_as_goals: bool = False,
        timeout: float | None = None,
    ) -> list[CompilationUnit]:
        """``frontend.process`` on file content (or ``file_name``). With ``invocations`` the
        tactic invocations the REPL writes to a side file are read back into each unit.
        ``sorrys`` asks ≤ 0.3.4 REPLs for goal states from ``sorry`` (newer ones use
        ``frontend.distil``). ``sorrys`` and ``typeErrorsAsGoals`` are always sent: on ≤ 0.3.4
        they are required fields (Protocol.lean v0.3.4, derived ``FromJson``, no defaults);
        newer servers ignore them."""
        if (file is None) == (file_name is None):
            raise ValueError("frontend_process needs exactly one of file and file_name")
        payload: dict[str, Any] = {
            "readHeader": read_header,
            "inheritEnv": inherit_env,
            "newConstants": new_constants,
        }
        if file is not None:
            payload["file"] = file
        elif file_name is not None:
            payload["fileName"] = os.fspath(file_name)
        payload["sorrys"] = bool(sorrys)
        payload["typeErrorsAsGoals"] = bool(type_errors_as_goals)
        tmp: tempfile.TemporaryDirectory[str] | None = None
        try:
            if invocations:
                tmp = tempfile.TemporaryDirectory(prefix="ldv2-invocations-")
                inv_path = Path(tmp.name) / "invocations.json"
                payload["invocations"] = str(inv_path)
            reply = await self.call("frontend.process", payload, timeout=timeout)
            units = [CompilationUnit.from_json(u) for u in reply.get("units") or ()]
            if invocations and tmp is not None:
                units = _attach_invocations(units, Path(tmp.name) / "invocations.json")
            return units
        finally:
            if tmp is not None:
                tmp.cleanup()

    async def frontend_distil(
        self,
        file: str,
        *,
        binder_name: str | None = None,
        ignore_values: bool = False,
        timeout: float | None = None,
    ) -> list[DistilTarget]:
        """``frontend.distil``: every ``sorry`` of ``file`` becomes a goal state."""
        payload: dict[str, Any] = {"file": file, "ignoreValues": ignore_values}
        if binder_name is not None:
            payload["binderName"] = binder_name
        reply = await self.call("frontend.distil", payload, timeout=timeout)
        return [DistilTarget.from_json(t) for t in reply.get("targets") or ()]

    async def env_inspect(
        self, name: str, *, value: bool = False, dependency: bool = False, source: bool = False
    ) -> InspectResult:
        payload = {"name": name, "value": value, "dependency": dependency, "source": source}
        return InspectResult.from_json(await self.call("env.inspect", payload))

    async def env_describe(self) -> dict[str, Any]:
        return await self.call("env.describe", {})

    async def expr_echo(
        self, expr: str, *, type: str | None = None, levels: Sequence[str] | None = None
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {"expr": expr}
        if type is not None:
            payload["type"] = type
        if levels is not None:
            payload["levels"] = list(levels)
        return await self.call("expr.echo", payload)


def _attach_invocations(units: list[CompilationUnit], path: Path) -> list[CompilationUnit]:
    from dataclasses import replace

    try:
        data = loads(path.read_bytes(), file=path)
    except (OSError, DataFormatError):
        return units
    side = data.get("units") if isinstance(data, dict) else None
    if not isinstance(side, list):
        return units
    out = []
    for unit, extra in zip(units, side, strict=False):
        inv = extra.get("invocations") if isinstance(extra, dict) else None
        out.append(replace(unit, invocations=tuple(inv)) if isinstance(inv, list) else unit)
    out.extend(units[len(out) :])
    return out


def _ignore_reply(fut: asyncio.Future[bytes]) -> None:
    if not fut.cancelled():
        exc = fut.exception()
        if exc is not None:
            logger.debug("goal.delete was not answered: %s", exc)


def _log_restart_failure(task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        logger.warning("relaunching the Pantograph REPL failed: %s", exc)
