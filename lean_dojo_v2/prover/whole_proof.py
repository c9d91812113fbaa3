"""Layer 3 (prover): whole-proof search — sample whole proofs, check each, record every one.

:class:`WholeProofSearch` asks the generator for ``num_samples`` whole proofs per request
(``whole_proof_rounds`` requests, each one expansion) and checks each with ``env.verify`` through
:func:`~.verify.verify_proof_async` (in sample order, across the environments). Every sample is
an :class:`~.attempt.Attempt` of the result, so pass@k can count them:

- A generator with ``sample_proofs(requests, n, prompt=...)`` (:class:`ProofSampler`: every
  prover of the library) is asked with a :class:`~lean_dojo_v2.models.proof_prompt.ProofPrompt`
  and returns exactly ``n`` answers per request, duplicates included; an answer that holds no
  proof (empty, or using ``sorry``) is a failed attempt. A proof that was checked already in this
  search is not checked again: its attempt takes the verdict (``cached``, no Lean call).
- A generator with only ``generate_proofs(states, n)`` (distinct candidates, best first) is asked
  with the first state's text; each distinct candidate is an attempt.

``config.early_stop`` (the default) ends the search at the first accepted proof (the samples of
that request not checked yet are recorded as not checked); ``early_stop=False`` checks every
sample. The proof of the result is the accepted one of the lowest sample index. The clock,
counters, generator call, re-check and result are the shared ones of
:class:`~.search_run.SearchRun`; the refinement mode (:mod:`.refine`) builds on this run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..data.model import Theorem
from ..errors import ConfigError
from ..interaction import AsyncProofEnv, split_tactics
from ..interaction.async_adapter import as_async_envs
from ..interaction.types import (
    EnvClosedError,
    InteractionError,
    ProofState,
    UnknownTheoremError,
    Verdict,
)
from ..models.generator import Completion, GeneratorUsage
from ..models.proof_prompt import ProofPrompt, ProofRequest, ProofTask, load_proof_prompt
from .attempt import Attempt
from .completions import completion_proof
from .feedback import verdict_messages
from .result import SearchResult, proof_text
from .search_config import SearchConfig
from .search_run import (
    BlockingSearch,
    LeanMeter,
    SearchRun,
    SearchStop,
    check_theorem,
    own_config,
    usage_source,
)

if TYPE_CHECKING:
    from ..models.generator import TacticGenerator
    from .search_types import ProgressPredictor

NO_PROOF = "no proof in the model's answer (it was empty, or it used sorry/admit)"
NOT_CHECKED = "not checked: an earlier sample was accepted (early_stop)"
NOT_CHECKED_ENDED = "not checked: the search ended first (time, or an environment failure)"


@runtime_checkable
class ProofSampler(Protocol):
    """A generator that samples whole-proof answers for :class:`ProofRequest` s: exactly
    ``num_samples`` :class:`~lean_dojo_v2.models.generator.Completion` s per request (the
    model's text as written, duplicates and empty answers included), rendered with ``prompt``
    (None: :func:`~lean_dojo_v2.models.proof_prompt.default_proof_prompt` of each task)."""

    def sample_proofs(
        self,
        requests: Sequence[ProofRequest],
        num_samples: int,
        *,
        prompt: ProofPrompt | None = None,
    ) -> list[list[Completion]]: ...


class WholeProofSearch(BlockingSearch):
    """Whole-proof mode (see the module docstring). ``prompt``: a
    :class:`~lean_dojo_v2.models.proof_prompt.ProofPrompt` or a template file, instead of
    ``config.proof_prompt``."""

    needs_sampler = False  # a generator with only generate_proofs will do

    def __init__(
        self,
        generator: TacticGenerator,
        config: SearchConfig | None = None,
        progress_model: ProgressPredictor | None = None,
        *,
        prompt: ProofPrompt | str | None = None,
    ) -> None:
        self.generator = generator
        self.config = own_config(config, whole_proof=True)
        if self.needs_sampler and not isinstance(generator, ProofSampler):
            raise ConfigError(
                f"{type(generator).__name__} cannot refine proofs: refinement needs a generator "
                "with sample_proofs(requests, n, prompt=...) (HFProver, RetrievalProver, "
                "ExternalProver)"
            )
        if not isinstance(generator, ProofSampler) and not callable(
            getattr(generator, "generate_proofs", None)
        ):
            raise ConfigError(
                f"{type(generator).__name__} cannot propose whole proofs: whole-proof search "
                "needs a generator with sample_proofs(requests, n) or generate_proofs(states, n)"
            )
        self.prompt = load_proof_prompt(prompt if prompt is not None else self.config.proof_prompt)
        self.progress_model = progress_model  # unused: every proof is checked in sample order

    async def search_async(
        self, envs: AsyncProofEnv | Sequence[AsyncProofEnv], theorem: Theorem
    ) -> SearchResult:
        run = WholeProofRun(self, as_async_envs(envs), check_theorem(theorem))
        return await run.execute()


@dataclass
class Sampled:
    """One sample waiting for its check: its attempt and the proof text to check (None: the
    answer held no proof), and the model's answer (a refinement round shows it)."""

    attempt: Attempt
    text: str | None
    answer: str = ""
    verdict: Verdict | None = None


class WholeProofRun(SearchRun):
    """The state of one whole-proof search of one theorem."""

    label = "whole-proof search"
    mode_name = "whole_proof"

    def __init__(
        self, owner: WholeProofSearch, envs: list[AsyncProofEnv], theorem: Theorem
    ) -> None:
        super().__init__(owner.config, envs, theorem)
        self.owner = owner
        self.checked = 0  # proofs whose re-check was started
        self.start_seconds = 0.0
        self.start_calls = 0
        # proof text -> its verdict (None: no verdict), so a repeated proof costs no Lean call
        self.verdicts: dict[str, Verdict | None] = {}

    # ----------------------------------------------------------------------- driver
    async def _search(self) -> None:
        generator = self.owner.generator.for_theorem(self.theorem)
        root = await self._start()
        try:
            if isinstance(generator, ProofSampler):
                task = ProofTask.from_theorem(self.theorem, root.text)
                await self._first_round(generator, task)
            else:
                await self._candidate_rounds(generator, root)
        except SearchStop as stop:
            if self.proof is None or stop.status == "proved":
                raise
            raise SearchStop("proved", stop.reason) from None  # a checked proof stands
        if self.proof is not None:
            raise SearchStop("proved", "proved")
        raise SearchStop("failed", self._spent_reason())

    def _spent_reason(self) -> str:
        cfg = self.cfg
        capped = cfg.max_expansions < cfg.whole_proof_rounds
        return "max_expansions" if capped and self.expansions >= cfg.max_expansions else "rounds"

    async def _first_round(self, generator: ProofSampler, task: ProofTask) -> dict[int, Sampled]:
        """The first whole proofs: ``whole_proof_rounds`` requests of ``num_samples`` each,
        every sample checked (up to the first accepted with ``early_stop``). Returns each
        sample's record by index."""
        cfg = self.cfg
        out: dict[int, Sampled] = {}
        for _ in range(min(cfg.whole_proof_rounds, cfg.max_expansions)):
            self._time_left()
            answers = await self._sample(generator, [ProofRequest(task)], cfg.num_samples)
            batch = self._records(answers[0], first_index=len(out), round_no=0)
            out.update((s.attempt.index, s) for s in batch)
            await self._check_samples(batch)
            if self.proof is not None and cfg.early_stop:
                break
        return out

    def _time_left(self) -> None:
        if self.clock.remaining() <= 0:
            raise SearchStop("timeout", "timeout")

    async def _start(self) -> ProofState:
        """The theorem's first state, on the first environment."""
        t = time.perf_counter()
        self.start_calls += 1
        try:
            root = await self.envs[0].start(self.theorem)
        except UnknownTheoremError as exc:
            raise SearchStop("error", "unknown_theorem", str(exc)) from None
        except EnvClosedError:
            raise
        except InteractionError as exc:
            raise SearchStop(
                "error",
                "start_failed",
                f"starting {self.theorem.full_name} failed: {type(exc).__name__}: {exc}",
            ) from None
        finally:
            took = time.perf_counter() - t
            self.c.env_wall_seconds += took
            self.start_seconds += took
            self.c.start_calls += 1
        if not isinstance(root, ProofState):
            raise SearchStop("error", "no_goals", "the environment says the theorem has no goals")
        return root

    # ------------------------------------------------------------------- sampling
    async def _sample(
        self, generator: ProofSampler, requests: list[ProofRequest], n: int
    ) -> list[list[Completion]]:
        """``generator.sample_proofs(requests, n)``, counted as one expansion; its answer
        checked (one list of completions per request)."""
        prompt = self.owner.prompt

        def sample(reqs: Sequence[ProofRequest], k: int) -> list[list[Completion]]:
            return generator.sample_proofs(reqs, k, prompt=prompt)

        raw = await self._call_generator(
            sample,
            requests,
            "proof generator",
            generator=usage_source(generator),
            num_samples=n,
        )
        # counted before the answer is checked: a malformed answer still used a request
        self.expansions += 1
        if (
            not isinstance(raw, list)
            or len(raw) != len(requests)
            or not all(isinstance(r, list) for r in raw)
        ):
            got = f"{len(raw)} lists" if isinstance(raw, list) else type(raw).__name__
            raise SearchStop(
                "error",
                "generator_output",
                f"sample_proofs() returned {got} for {len(requests)} requests",
            )
        for i, answers in enumerate(raw):
            for a in answers:
                if not isinstance(getattr(a, "text", None), str):
                    raise SearchStop(
                        "error",
                        "generator_output",
                        f"sample_proofs(): request {i} holds {a!r}; expected Completion(text: str)",
                    )
        return raw

    def _records(
        self, answers: Sequence[Completion], *, first_index: int, round_no: int
    ) -> list[Sampled]:
        """An attempt for each answer (indices from ``first_index``), with its share of the
        latest generator call."""
        return self._records_of(
            [(first_index + k, a) for k, a in enumerate(answers)], round_no, self.last_usage
        )

    def _records_of(
        self,
        indexed: list[tuple[int, Completion]],
        round_no: int,
        usage: GeneratorUsage,
        *,
        extract: bool = True,
    ) -> list[Sampled]:
        """Attempts for ``(index, answer)`` pairs of one generator call; ``extract``: take the
        proof out of each answer (:func:`~.completions.completion_proof`), else the answer is
        the proof already (a ``generate_proofs`` candidate)."""
        shares = _shares(usage, [a for _, a in indexed])
        out = []
        for (index, answer), (t_in, t_out, secs, gpu) in zip(indexed, shares, strict=True):
            proof = completion_proof(answer.text) if extract else answer.text
            text = proof_text(split_tactics(proof)) if proof is not None else None
            attempt = Attempt(
                index=index,
                round=round_no,
                proof=text or "",
                ok=False,
                checked_by="",
                messages=[] if text else [NO_PROOF],
                tokens_in=t_in,
                tokens_out=t_out,
                generator_seconds=secs,
                gpu_seconds=gpu,
            )
            self.attempts.append(attempt)
            out.append(Sampled(attempt, text or None, answer.text))
        self.c.candidates += sum(1 for s in out if s.text is not None)
        return out

    # ------------------------------------------------------------------- checking
    async def _check_samples(self, batch: list[Sampled]) -> None:
        """Check every sample of ``batch`` that holds a proof: each distinct proof once (a
        proof checked before in this search takes its verdict), one check at a time per
        environment, the environments in parallel. With ``early_stop``, no check starts once a
        proof is accepted; samples left are recorded as not checked. The accepted sample of the
        lowest index becomes the result's proof."""
        # a proof without a verdict yet (or whose check failed for want of an environment)
        texts = [s.text for s in batch if s.text is not None and self.verdicts.get(s.text) is None]
        queue = list(dict.fromkeys(texts))
        owners: dict[str, Sampled] = {}
        for s in batch:
            if s.text is not None and s.text in queue:
                owners.setdefault(s.text, s)
        accepted: list[str] = []
        stop = self.cfg.early_stop
        t = time.perf_counter()

        async def worker(i: int) -> None:
            while queue and not (stop and accepted):
                text = queue.pop(0)
                meter = LeanMeter()
                self.checked += 1
                try:
                    verdict = await self._check(text, i, meter)
                finally:
                    first = owners[text].attempt
                    first.lean_calls, first.lean_seconds = meter.calls, meter.seconds
                self.verdicts[text] = verdict
                if verdict is not None and verdict.ok:
                    accepted.append(text)

        why = NOT_CHECKED
        try:
            await asyncio.gather(*(worker(i) for i in range(len(self.envs))))
        except BaseException:
            why = NOT_CHECKED_ENDED
            raise
        finally:
            self.c.env_wall_seconds += time.perf_counter() - t
            for s in batch:
                self._settle(s, owners.get(s.text or "") is s, why)
        best = min((s for s in batch if s.attempt.ok), key=lambda s: s.attempt.index, default=None)
        if best is not None and self.proof is None and best.text is not None:
            self.proof, self.verdict = split_tactics(best.text), best.verdict

    def _settle(self, s: Sampled, checked_here: bool, why: str) -> None:
        """Fill in a sample's attempt from the verdict of its proof (``why`` it has none when
        its proof was not checked). A verdict this search had already, or one a verdict cache
        served, is ``cached``: no Lean call is counted for it."""
        a = s.attempt
        if s.text is None:
            return
        if s.text not in self.verdicts:
            a.messages = [why]
            return
        verdict = self.verdicts[s.text]
        s.verdict = verdict
        if verdict is None:
            a.error = "the proof could not be checked: every environment failed"
            a.messages = list(self.c.crash_messages[-1:]) or [a.error]
            return
        a.ok = bool(verdict.ok)
        a.checked_by = verdict.checked_by
        a.messages = verdict_messages(verdict)
        a.cached = not checked_here or bool(getattr(verdict, "cached", False))
        if a.cached:
            a.lean_calls, a.lean_seconds = 0, 0.0

    # ------------------------------------------------------- generators without sample_proofs
    async def _candidate_rounds(self, generator: TacticGenerator, root: ProofState) -> None:
        """Distinct candidates of ``generate_proofs([first state], num_samples)``, each an
        attempt; a proof already checked is not checked again."""
        cfg = self.cfg
        generate_proofs = getattr(generator, "generate_proofs", None)
        if not callable(generate_proofs):
            raise SearchStop(
                "error",
                "generator_error",
                f"{type(generator).__name__} has no generate_proofs()",
            )
        index = 0
        for _ in range(min(cfg.whole_proof_rounds, cfg.max_expansions)):
            self._time_left()
            raw = await self._call_generator(
                generate_proofs, [root.text], "proof generator", generator=usage_source(generator)
            )
            self.expansions += 1
            cands = self._candidates(raw, 1, "generate_proofs()")[0]
            fresh: list[tuple[int, Completion]] = []
            seen = set(self.verdicts)
            for cand in cands:
                text = proof_text(split_tactics(cand.tactic))
                if text and text not in seen:
                    seen.add(text)
                    fresh.append((index, Completion(text, float(cand.logprob))))
                    index += 1
            batch = self._records_of(fresh, 0, self.last_usage, extract=False)
            await self._check_samples(batch)
            if self.proof is not None and cfg.early_stop:
                return

    # ------------------------------------------------------------------------ result
    def _final_attempts(self, status: str, error: str | None) -> list[Attempt]:
        attempts = super()._final_attempts(status, error)
        if attempts and self.start_calls:
            # the first state was started for every sample: its call goes to the first attempt
            attempts[0].lean_calls += self.start_calls
            attempts[0].lean_seconds += self.start_seconds
            self.start_calls, self.start_seconds = 0, 0.0
        return attempts

    def _stats(self, reason: str, seconds: float) -> dict[str, Any]:
        stats: dict[str, Any] = {"stop_reason": reason, "mode": self.mode_name}
        stats.update(self.c.as_dict())
        stats["proofs_checked"] = self.checked
        stats["attempts"] = len(self.attempts)
        stats["envs"] = len(self.envs)
        stats["env_restarts"] = self._env_restarts()
        return stats


def _shares(
    usage: GeneratorUsage, answers: Sequence[Completion]
) -> list[tuple[int, int, float, float]]:
    """Each answer's share of one generator call: ``(tokens_in, tokens_out, seconds,
    gpu_seconds)``. Prompt tokens and seconds are split evenly (the first answers take the
    remainder of the tokens), so the shares add up to the call; generated tokens are each
    answer's own when every answer says how many it has."""
    n = len(answers)
    if n == 0:
        return []
    own = [a.tokens_out for a in answers]
    if all(t is not None for t in own):
        outs = [int(t or 0) for t in own]
    else:
        q, r = divmod(max(usage.tokens_out, 0), n)
        outs = [q + (1 if k < r else 0) for k in range(n)]
    q_in, r_in = divmod(max(usage.tokens_in, 0), n)
    return [
        (q_in + (1 if k < r_in else 0), outs[k], usage.seconds / n, usage.gpu_seconds / n)
        for k in range(n)
    ]


__all__ = ["NOT_CHECKED", "NO_PROOF", "ProofSampler", "WholeProofRun", "WholeProofSearch"]
