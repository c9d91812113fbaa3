"""Layer 3 (prover): what every proof-search mode shares, written once.

:class:`SearchRun` is one search of one theorem: its config, environments, clock
(:class:`Clock`), counters (:class:`Counters`) and crash log; the generator call (timed, in a
worker thread, abandoned at the deadline), the check of the generator's answer
(:func:`checked_candidates`), the whole-proof re-check (:func:`~.verify.verify_proof_async`,
counted), the :class:`~.result.SearchResult` and the catch-all that keeps every failure inside
the result. A mode (:mod:`.best_first`, :mod:`.whole_proof`) fills in :meth:`SearchRun._search`,
which ends by raising :class:`SearchStop`, and :meth:`SearchRun._stats`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ..data.model import Theorem
from ..errors import ConfigError
from ..interaction import AsyncProofEnv, ProofEnv
from ..interaction.async_adapter import as_async_envs, restarts_of
from ..interaction.types import (
    EnvClosedError,
    EnvCrashedError,
    InteractionError,
    Verdict,
)
from ..models.candidates import Scored, clean_candidates
from ..models.generator import GeneratorUsage
from .attempt import Attempt, TreeNode
from .result import SearchResult
from .search_config import SearchConfig
from .threads import run_sync, timed_call
from .verify import VerifyObserver, verify_proof_async

# The name the search logged under before it was split into modules: logging configs keep working.
log = logging.getLogger("lean_dojo_v2.prover.search")


@runtime_checkable
class CountsUsage(Protocol):
    """A generator that says what it used (:meth:`TacticGenerator.usage`)."""

    def usage(self) -> GeneratorUsage: ...


def usage_source(generator: object) -> CountsUsage | None:
    """``generator`` when it says what it used, else None (a generator that does not count)."""
    return generator if isinstance(generator, CountsUsage) else None


class SearchStop(Exception):
    """Ends a search early with a status and a ``stop_reason`` (internal to the search)."""

    def __init__(self, status: str, reason: str, error: str | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.error = status, reason, error


class Clock:
    """The wall clock of one search: time since the start, time left to the deadline."""

    def __init__(self, timeout: float) -> None:
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + timeout

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def remaining(self) -> float:
        return self.deadline - time.perf_counter()


class Counters:
    """Time and event counters of one search, merged into ``SearchResult.stats``."""

    def __init__(self) -> None:
        self.generator_calls = 0
        self.generator_seconds = 0.0
        self.tokens_in = 0
        self.tokens_out = 0
        self.gpu_seconds = 0.0
        self.start_calls = 0
        self.candidates = 0
        self.tactic_calls = 0
        self.env_seconds = 0.0  # sum over calls (several environments overlap)
        self.env_wall_seconds = 0.0  # wall time spent waiting for environments
        self.verify_calls = 0
        self.verify_rejected = 0
        self.verify_errors = 0
        self.verify_seconds = 0.0
        self.tactic_timeouts = 0
        self.env_crashes = 0
        self.stale_states = 0
        self.rebuilds = 0
        self.rebuild_failures = 0
        self.skipped_jobs = 0
        self.progress_calls = 0
        self.progress_seconds = 0.0
        self.crash_messages: list[str] = []
        self.rejections: list[str] = []

    def as_dict(self) -> dict[str, Any]:
        d = dict(vars(self))
        for k, v in d.items():
            if isinstance(v, float):
                d[k] = round(v, 6)
        return d


def check_theorem(theorem: object) -> Theorem:
    """``theorem`` if it is a :class:`~lean_dojo_v2.data.Theorem`; a ConfigError otherwise."""
    if not isinstance(theorem, Theorem):
        raise ConfigError(
            f"search needs a lean_dojo_v2.data.Theorem, not {type(theorem).__name__} "
            "(load theorems with lean_dojo_v2.data.load_theorems)"
        )
    return theorem


def own_config(config: SearchConfig | None, *, whole_proof: bool = False) -> SearchConfig:
    """The config a search keeps: ``config``, or ``SearchConfig(whole_proof=whole_proof)`` when
    None."""
    cfg = config if config is not None else SearchConfig(whole_proof=whole_proof)
    if not isinstance(cfg, SearchConfig):
        raise ConfigError(f"config must be a SearchConfig, not {type(cfg).__name__}")
    return cfg


def checked_candidates(
    raw: object, expected: int, num_samples: int, what: str
) -> list[list[Scored]]:
    """Check the generator's answer: ``expected`` lists of candidates (``.tactic`` str,
    ``.logprob`` number); raises ValueError on a malformed answer. Each list is then cleaned
    (:func:`~lean_dojo_v2.models.candidates.clean_candidates`): duplicates up to white space
    merged keeping the best score, empty tactics and NaN scores dropped, best first, at most
    ``num_samples``. Search leaves ``sorry`` and infinite scores to the generator's contract."""
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)) or len(raw) != expected:
        got = len(raw) if isinstance(raw, Sequence) else type(raw).__name__
        raise ValueError(f"{what} returned {got} lists for {expected} states")
    out: list[list[Scored]] = []
    for i, cands in enumerate(raw):
        if not isinstance(cands, Sequence) or isinstance(cands, (str, bytes)):
            raise ValueError(f"{what}: entry {i} is a {type(cands).__name__}, not a list")
        for c in cands:
            tactic, lp = getattr(c, "tactic", None), getattr(c, "logprob", None)
            if (
                not isinstance(tactic, str)
                or isinstance(lp, bool)
                or not isinstance(lp, (int, float))
            ):
                raise ValueError(
                    f"{what}: entry {i} holds {c!r}; expected Candidate(tactic: str, logprob: float)"
                )
        out.append(
            clean_candidates(
                cands,
                num_samples,
                drop_forbidden=False,
                finite_only=False,
                merge_whitespace=True,
            )
        )
    return out


def restart_delta(envs: list[AsyncProofEnv], before: list[int | None]) -> int:
    """Process restarts of ``envs`` since the counts ``before`` (environments that count them)."""
    total = 0
    for env, b in zip(envs, before, strict=True):
        now = restarts_of(env)
        if now is not None and b is not None:
            total += now - b
    return total


class BlockingSearch:
    """``search``: the blocking form of the subclass's ``search_async``."""

    async def search_async(
        self, envs: AsyncProofEnv | Sequence[AsyncProofEnv], theorem: Theorem
    ) -> SearchResult:
        """Search for a proof of ``theorem`` in ``envs``; the subclass's search."""
        raise NotImplementedError

    def search(
        self, env: ProofEnv | AsyncProofEnv | Sequence[ProofEnv | AsyncProofEnv], theorem: Theorem
    ) -> SearchResult:
        """Blocking :meth:`search_async` (blocking environments run in worker threads). Use an
        ``AsyncPantographEnv`` only with :meth:`search_async` in the loop that opened it."""
        envs = as_async_envs(env)
        check_theorem(theorem)
        return run_sync(self.search_async(envs, theorem))


class SearchRun:
    """One search of one theorem; see the module docstring.

    ``expansions`` counts generator requests (``SearchResult.expansions``); ``proof`` and
    ``verdict`` are set by :meth:`_verify` when a proof is accepted."""

    label = "search"  # how the log names a search that raised

    def __init__(self, config: SearchConfig, envs: list[AsyncProofEnv], theorem: Theorem) -> None:
        self.cfg = config
        self.envs = envs
        self.theorem = theorem
        self.c = Counters()
        self.restarts0 = [restarts_of(e) for e in envs]
        self.clock = Clock(config.timeout)
        self.expansions = 0
        self.proof: list[str] | None = None
        self.verdict: Verdict | None = None
        self.attempts: list[Attempt] = []
        self.tree: list[TreeNode] | None = None  # set by a mode that records its tree
        self.last_usage = GeneratorUsage()  # of the latest generator call
        self._verify_counter = _VerifyCounter(self)

    # ----------------------------------------------------------------------- driver
    async def execute(self) -> SearchResult:
        """Run :meth:`_search`; every way it ends becomes the result, nothing raises."""
        try:
            await self._search()
            raise SearchStop("failed", "exhausted")  # pragma: no cover - _search always raises
        except SearchStop as stop:
            return self._result(stop.status, stop.reason, stop.error)
        except EnvClosedError as exc:
            return self._result("error", "env_closed", f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - never a traceback out of search
            log.exception("%s of %s failed", self.label, self.theorem.full_name)
            return self._result("error", "exception", f"{type(exc).__name__}: {exc}")

    async def _search(self) -> None:
        """The mode's search; ends by raising :class:`SearchStop`."""
        raise NotImplementedError

    # -------------------------------------------------------------------- generation
    async def _call_generator(
        self,
        func: Callable[..., object],
        states: Sequence[object],
        who: str,
        *,
        generator: CountsUsage | None = None,
        num_samples: int | None = None,
    ) -> object:
        """``func(states, num_samples)`` (default ``config.num_samples``), timed, within the
        time left; its raw answer. ``who`` names the generator in the error (``"tactic
        generator"``). What ``generator`` reports it used (:meth:`TacticGenerator.usage`, read
        around the call in the thread that makes it) is :attr:`last_usage` and is counted."""
        cfg = self.cfg
        n = cfg.num_samples if num_samples is None else num_samples
        used: list[GeneratorUsage] = []

        def call() -> object:
            before = generator.usage() if generator is not None else GeneratorUsage()
            try:
                return func(states, n)
            finally:
                if generator is not None:
                    used.append(generator.usage() - before)

        waited = time.perf_counter()
        try:
            raw, seconds = await timed_call(
                call, in_thread=cfg.generator_in_thread, timeout=self.clock.remaining()
            )
        except TimeoutError:
            # the abandoned call's time is the generator's, not the engine's
            self.c.generator_seconds += time.perf_counter() - waited
            raise SearchStop("timeout", "timeout_in_generator") from None
        except Exception as exc:  # noqa: BLE001 - the generator's failure ends the search
            raise SearchStop(
                "error", "generator_error", f"the {who} raised {type(exc).__name__}: {exc}"
            ) from exc
        self.c.generator_calls += 1
        self.c.generator_seconds += seconds
        usage = used[0] if used else GeneratorUsage()
        # the search's own clock is the call's time: it holds for generators that do not count
        self.last_usage = GeneratorUsage(
            usage.calls, usage.tokens_in, usage.tokens_out, seconds, usage.gpu_seconds
        )
        self.c.tokens_in += usage.tokens_in
        self.c.tokens_out += usage.tokens_out
        self.c.gpu_seconds += usage.gpu_seconds
        return raw

    def _candidates(self, raw: object, expected: int, what: str) -> list[list[Scored]]:
        """:func:`checked_candidates`; a malformed answer ends the search."""
        try:
            return checked_candidates(raw, expected, self.cfg.num_samples, what)
        except ValueError as exc:
            raise SearchStop("error", "generator_output", str(exc)) from None

    # ---------------------------------------------------------------------- failures
    def _crash(self, exc: BaseException) -> None:
        """Count an environment failure (the first messages kept); the caller drops its branch."""
        self.c.env_crashes += 1
        if len(self.c.crash_messages) < 5:
            self.c.crash_messages.append(f"{type(exc).__name__}: {str(exc)[:300]}")
        log.info(
            "search of %s: environment failure (%s); dropping that branch",
            self.theorem.full_name,
            exc,
        )

    # ------------------------------------------------------------------ re-checking
    async def _check(
        self, tactics: Sequence[str] | str, env_index: int = 0, meter: LeanMeter | None = None
    ) -> Verdict | None:
        """The whole-proof re-check, counted (also into ``meter``, one attempt's Lean calls);
        None when it could not be done."""
        return await verify_proof_async(
            self.envs,
            self.theorem,
            tactics,
            retries=self.cfg.verify_retries,
            first_env=env_index,
            observer=self._verify_counter if meter is None else _VerifyCounter(self, meter),
        )

    async def _verify(self, tactics: list[str], env_index: int = 0) -> bool:
        """Re-check a proof; True (and the proof kept) when the verdict is ok."""
        verdict = await self._check(tactics, env_index)
        if verdict is not None and verdict.ok:
            self.proof, self.verdict = tactics, verdict
            return True
        return False

    # ------------------------------------------------------------------------ result
    def _stats(self, reason: str, seconds: float) -> dict[str, Any]:
        """``SearchResult.stats`` of the mode (``stop_reason`` first)."""
        raise NotImplementedError

    def _env_restarts(self) -> int:
        return restart_delta(self.envs, self.restarts0)

    def _final_attempts(self, status: str, error: str | None) -> list[Attempt]:
        """``SearchResult.attempts``: the attempts recorded, in sample order (a mode that makes
        its one attempt at the end overrides this)."""
        return sorted(self.attempts, key=lambda a: (a.index, a.round))

    def _result(self, status: str, reason: str, error: str | None) -> SearchResult:
        seconds = self.clock.elapsed()
        stats = self._stats(reason, seconds)
        proved = status == "proved"
        attempts = self._final_attempts(status, error)
        return SearchResult(
            theorem=self.theorem.full_name,
            file_path=self.theorem.file_path,
            status=status,
            proof=list(self.proof) if proved and self.proof is not None else None,
            expansions=self.expansions,
            seconds=seconds,
            backend=self.envs[0].backend,
            checked_by=self.verdict.checked_by if proved and self.verdict else None,
            error=error,
            stats=stats,
            attempts=attempts,
            tree=self.tree,
        )


class LeanMeter:
    """The Lean calls made for one attempt and their wall seconds."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0


class _VerifyCounter(VerifyObserver):
    """Counts a run's re-checks into its counters (and one attempt's ``meter``) and stops the
    run when its time is up."""

    def __init__(self, run: SearchRun, meter: LeanMeter | None = None) -> None:
        self.run = run
        self.meter = meter

    def before_attempt(self) -> None:
        if self.run.clock.remaining() <= 0:
            raise SearchStop("timeout", "timeout_before_verify")

    def attempt_done(self, seconds: float) -> None:
        c = self.run.c
        c.verify_calls += 1
        c.verify_seconds += seconds
        if self.meter is not None:
            self.meter.calls += 1
            self.meter.seconds += seconds

    def env_failed(self, exc: InteractionError) -> None:
        c = self.run.c
        c.verify_errors += 1
        if isinstance(exc, EnvCrashedError):
            self.run._crash(exc)
        elif len(c.rejections) < 5:
            c.rejections.append(f"verify raised {type(exc).__name__}: {str(exc)[:300]}")

    def verdict(self, verdict: Verdict) -> None:
        if not verdict.ok:
            c = self.run.c
            c.verify_rejected += 1
            if len(c.rejections) < 5:
                c.rejections.append("; ".join(verdict.messages)[:300])


__all__ = [
    "BlockingSearch",
    "Clock",
    "Counters",
    "CountsUsage",
    "LeanMeter",
    "SearchRun",
    "SearchStop",
    "check_theorem",
    "checked_candidates",
    "own_config",
    "restart_delta",
    "usage_source",
]
