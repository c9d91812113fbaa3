"""``HFProver``: tactics and whole proofs from a local Hugging Face model.

A thin prover over :class:`~lean_dojo_v2.models.generator.HFTacticGenerator` (batched sampling,
beam search or greedy decoding with log-probs; causal LMs and seq2seq models), with upstream
LeanDojo-v2's constructor ``HFProver(ckpt_path, use_lora=False, device="auto")``:

* ``ckpt_path=None``: the default model (SmolLM2, :func:`~lean_dojo_v2.models.load_model`).
  A model directory, a hub id cached locally, a ``.gguf`` file, or a loaded
  :class:`~lean_dojo_v2.models.loading.LoadedModel`.
* ``use_lora=True``: ``ckpt_path`` is a PEFT adapter directory (``adapter_config.json``, as the
  SFT trainer saves it); its base model is the one the adapter names, or ``base_model=``.
  (``load_model`` also recognises an adapter directory by itself; ``use_lora`` makes the intent
  explicit and fails clearly when the directory holds no adapter.)

**Whole-proof mode** (:meth:`HFProver.generate_proofs`): the prompt is
:func:`~lean_dojo_v2.models.prompts.render_proof_prompt` (the whole-proof instruction); a proof
ends at the end marker / EOS, or after ``max_proof_tokens``, never at a line break, so every
tactic line is kept. The text then goes through
:func:`~lean_dojo_v2.prover.completions.completion_proof` (fences and a leading ``by`` removed,
``sorry``/``admit`` dropped). Its score is the sum of the log-probs of its tokens and of the
token that ended it.

**Upstream LeanDojo-v2's calls** (1.0.9's ``HFProver``), on the same model and our search:
:meth:`HFProver.next_tactic` (the best tactic for one state), :meth:`HFProver.generate_whole_proof`
(the best whole proof of a theorem) and :meth:`HFProver.search` (``search(server=env, goal="∀ {p q
: Prop}, p ∧ q → q ∧ p")`` → ``(result, used_tactics)`` with ``result.success``), where ``server``
is one of our :class:`~lean_dojo_v2.interaction.ProofEnv` (e.g. a ``PantographEnv``).
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import ConfigError, ModelError, ModelNotFoundError
from ..models.generator import (
    Candidate,
    Completion,
    GeneratorUsage,
    HFTacticGenerator,
    check_generate_args,
    finalize,
)
from ..models.loading import LoadedModel, load_model
from ..models.prompts import render_messages, render_prompt, render_proof_prompt
from ..models.proof_prompt import ProofPrompt, ProofRequest, default_proof_prompt
from .base import BaseProver
from .completions import check_requests, completion_proof, state_text, whole_proof_input

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedTokenizerBase

    from ..data import Theorem
    from .result import SearchResult
    from .search_config import SearchConfig
    from .search_types import Envs, ProgressPredictor

log = logging.getLogger(__name__)

GOAL_THEOREM_NAME = "lean_dojo_v2_goal"
"""The name :func:`goal_theorem` gives a bare goal (the environment checks it under this name)."""


def goal_theorem(goal: str, name: str = GOAL_THEOREM_NAME) -> Theorem:
    """A :class:`~lean_dojo_v2.data.Theorem` for a bare goal such as ``"∀ {p q : Prop}, p ∧ q →
    q ∧ p"``: no file, its statement ``theorem <name> : <goal> := by``, which a
    ``PantographEnv`` starts and verifies from the statement alone."""
    from ..data import Pos
    from ..data import Theorem as TheoremRecord

    if not isinstance(goal, str) or not goal.strip():
        raise ConfigError("goal must be the text of a Lean proposition, e.g. '∀ (n : Nat), n = n'")
    return TheoremRecord(
        url="",
        commit="",
        file_path="",
        full_name=name,
        start=Pos(1, 1),
        end=Pos(1, 1),
        theorem_statement=f"theorem {name} : {goal.strip()} := by",
        has_statement_field=True,
    )


@dataclass(frozen=True)
class GoalSearchResult:
    """What :meth:`HFProver.search` returns first: upstream's result fields (``success``,
    ``steps``, ``duration``, as PyPantograph's ``SearchResult``) over our
    :class:`~lean_dojo_v2.prover.SearchResult` (``result``), whose fields (``status``,
    ``proof``, ``checked_by``, ...) are readable here too."""

    result: SearchResult

    @property
    def success(self) -> bool:
        """Proved, and the whole proof re-checked by the environment."""
        return self.result.proved

    @property
    def steps(self) -> int:
        """Nodes expanded (one generator request each)."""
        return self.result.expansions

    @property
    def duration(self) -> float:
        """Seconds the search took."""
        return self.result.seconds

    def __getattr__(self, name: str) -> Any:
        if name == "result":  # not set yet (e.g. while unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.result, name)


class PromptedGenerator(HFTacticGenerator):
    """:class:`HFTacticGenerator` whose prompts may carry premises and may ask for a whole proof.

    ``premises`` maps a goal state to the premise texts of its prompt (states not in it get
    none); ``whole_proof`` switches to :func:`render_proof_prompt`. Both are set by the prover
    for the duration of one call, under its lock.
    """

    premises: Mapping[str, Sequence[str]] | None = None
    whole_proof: bool = False
    rendered: bool = False  # the "states" are prompts rendered already (whole-proof requests)

    def prompts(self, states: Sequence[str], prefix: str | None = None) -> list[str]:
        if self.rendered:
            return [s + (prefix or "") for s in states]
        render = render_proof_prompt if self.whole_proof else render_prompt
        table = self.premises or {}
        rendered = [render(self.tokenizer, s, table.get(s, ()), style=self.style) for s in states]
        if prefix and self.loaded.kind == "causal":
            rendered = [p + prefix for p in rendered]
        return rendered


def completion_from_ids(
    tokenizer: PreTrainedTokenizerBase,
    ids: Sequence[int],
    logprobs: Sequence[float],
    stop_ids: Sequence[int],
) -> Completion:
    """One generated sequence as the model's answer: everything before the first stop token
    (end marker / EOS), decoded without special tokens; its score sums the log-probs of those
    tokens and of the stop token, which are its ``tokens_out``. A sequence without a stop token
    (cut by the token budget) counts all its tokens."""
    stops = set(stop_ids)
    end = next((i for i, t in enumerate(ids) if t in stops), None)
    body = list(ids) if end is None else list(ids[:end])
    kept = len(ids) if end is None else end + 1
    # One flat sequence of ids decodes to one str (a list of str only for a batch of them).
    text = cast(str, tokenizer.decode(body, skip_special_tokens=True))
    return Completion(text, math.fsum(logprobs[:kept]), kept)


def proof_from_ids(
    tokenizer: PreTrainedTokenizerBase,
    ids: Sequence[int],
    logprobs: Sequence[float],
    stop_ids: Sequence[int],
) -> tuple[str | None, float]:
    """The whole proof held by one generated sequence and its score: the answer of
    :func:`completion_from_ids` cleaned by :func:`completion_proof` (None when nothing is left
    or it uses ``sorry``)."""
    answer = completion_from_ids(tokenizer, ids, logprobs, stop_ids)
    return completion_proof(answer.text), float(answer.logprob or 0.0)


class HFProver(BaseProver):
    """Prover over a local Hugging Face model (see the module docstring).

    ``ckpt_path``: the model (None = the default). ``use_lora``: ``ckpt_path`` is a PEFT adapter
    directory. ``device``: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``. ``base_model``: the
    adapter's base when it should not be the one recorded in ``adapter_config.json``.
    ``dtype``: as :func:`load_model`. ``max_proof_tokens``: the longest whole proof, in tokens.
    Other keyword arguments are :class:`HFTacticGenerator`'s (``strategy``, ``temperature``,
    ``top_p``, ``num_beams``, ``max_new_tokens``, ``batch_size``, ``seed``, ...).
    """

    def __init__(
        self,
        ckpt_path: str | os.PathLike[str] | LoadedModel | None = None,
        use_lora: bool = False,
        device: str = "auto",
        *,
        base_model: str | os.PathLike[str] | None = None,
        dtype: str = "auto",
        max_proof_tokens: int = 512,
        **generator_kwargs: Any,
    ) -> None:
        if (
            isinstance(max_proof_tokens, bool)
            or not isinstance(max_proof_tokens, int)
            or max_proof_tokens < 1
        ):
            raise ModelError(
                f"max_proof_tokens must be a whole number >= 1, got {max_proof_tokens!r}"
            )
        if isinstance(ckpt_path, LoadedModel):
            if use_lora:
                raise ModelError("use_lora=True needs an adapter directory, not a loaded model")
            loaded = ckpt_path
        elif use_lora:
            if ckpt_path is None:
                raise ModelError(
                    "use_lora=True needs ckpt_path: the PEFT adapter directory the trainer saved"
                )
            adapter = Path(os.fspath(ckpt_path)).expanduser()
            if not (adapter / "adapter_config.json").is_file():
                raise ModelNotFoundError(
                    f"use_lora=True but {adapter} is not a PEFT adapter directory (no "
                    "adapter_config.json); pass the adapter folder the trainer saved, or "
                    "use_lora=False for a full model"
                )
            loaded = load_model(base_model, device=device, dtype=dtype, adapter=adapter)
        else:
            if base_model is not None:
                raise ModelError("base_model= is only used with use_lora=True")
            loaded = load_model(ckpt_path, device=device, dtype=dtype)
        self.ckpt_path = None if isinstance(ckpt_path, LoadedModel) else ckpt_path
        self.use_lora = use_lora
        self.max_proof_tokens = max_proof_tokens
        self.generator = PromptedGenerator(loaded, **generator_kwargs)
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.generator.loaded.source!r})"

    @property
    def loaded(self) -> LoadedModel:
        return self.generator.loaded

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self.generator.tokenizer

    def prompts(self, states: Sequence[str], *, whole_proof: bool = False) -> list[str]:
        """The exact model input of each state (tactic prompt, or whole-proof prompt)."""
        return self._prompts(states, whole_proof, None)

    def _prompts(
        self,
        states: Sequence[str],
        whole_proof: bool,
        premises: Mapping[str, Sequence[str]] | None,
    ) -> list[str]:
        gen = self.generator
        with self._lock:
            gen.premises, gen.whole_proof = premises, whole_proof
            try:
                return gen.prompts(list(states))
            finally:
                gen.premises, gen.whole_proof = None, False

    # ..................................................................... tactics

    def generate(
        self, states: list[str], num_samples: int, *, prefix: str | None = None
    ) -> list[list[Candidate]]:
        return self._generate(states, num_samples, prefix=prefix, premises=None)

    def _generate(
        self,
        states: list[str],
        num_samples: int,
        *,
        prefix: str | None,
        premises: Mapping[str, Sequence[str]] | None,
    ) -> list[list[Candidate]]:
        check_generate_args(states, num_samples, prefix)
        with self._lock:
            gen = self.generator
            gen.premises, gen.whole_proof = premises, False
            try:
                return gen.generate(list(states), num_samples, prefix=prefix)
            finally:
                gen.premises = None

    # ..................................................................... whole proofs

    def generate_proofs(self, states: list[str], num_samples: int) -> list[list[Candidate]]:
        return self._generate_proofs(states, num_samples, premises=None)

    def _generate_proofs(
        self,
        states: list[str],
        num_samples: int,
        *,
        premises: Mapping[str, Sequence[str]] | None,
    ) -> list[list[Candidate]]:
        check_generate_args(states, num_samples, None)
        gen = self.generator
        out: list[list[Candidate]] = []
        with self._lock:
            gen.premises, gen.whole_proof = premises, True
            try:
                for i in range(0, len(states), gen.batch_size):
                    batch = list(states[i : i + gen.batch_size])
                    n = 1 if gen.strategy == "greedy" else num_samples
                    rows_ids, rows_lp = gen.decode_rows(
                        batch, n, max_new_tokens=self.max_proof_tokens, until_tactic_end=False
                    )
                    per_state: list[list[tuple[str, float]]] = [[] for _ in batch]
                    for row, ids in enumerate(rows_ids):
                        proof, lp = proof_from_ids(gen.tokenizer, ids, rows_lp[row], gen.stop_ids)
                        if proof is not None:
                            per_state[row // n].append((proof, lp))
                    out.extend(finalize(raw, num_samples) for raw in per_state)
            finally:
                gen.premises, gen.whole_proof = None, False
        return out

    # ..................................................................... whole-proof requests

    def usage(self) -> GeneratorUsage:
        """Every decode of this prover's model so far (tactics and whole proofs)."""
        return self.generator.usage()

    def request_premises(self, requests: Sequence[ProofRequest]) -> list[list[str]]:
        """The premise texts of each request's prompt: none here (a retrieval prover ranks
        them for the task's goal state)."""
        return [[] for _ in requests]

    def request_prompts(
        self, requests: Sequence[ProofRequest], prompt: ProofPrompt | None = None
    ) -> list[str]:
        """The exact model input of each whole-proof request: ``prompt``'s messages (None:
        :func:`~lean_dojo_v2.models.proof_prompt.default_proof_prompt` of each task) through
        the model's chat template (:func:`~lean_dojo_v2.models.prompts.render_messages`)."""
        premises = self.request_premises(requests)
        gen = self.generator
        return [
            render_messages(
                gen.tokenizer,
                (prompt or default_proof_prompt(r.task)).messages(r, p),
                style=gen.style,
            )
            for r, p in zip(requests, premises, strict=True)
        ]

    def sample_proofs(
        self,
        requests: Sequence[ProofRequest],
        num_samples: int,
        *,
        prompt: ProofPrompt | None = None,
    ) -> list[list[Completion]]:
        """Exactly ``num_samples`` answers per request, as the model wrote them (duplicates and
        empty answers included): what whole-proof and refinement search check. An answer ends at
        the end marker / EOS or after ``max_proof_tokens``. Greedy decoding decodes once and
        returns that answer ``num_samples`` times."""
        check_requests(requests, num_samples)
        texts = self.request_prompts(requests, prompt)
        gen = self.generator
        n = 1 if gen.strategy == "greedy" else num_samples
        out: list[list[Completion]] = []
        with self._lock:
            gen.rendered = True
            try:
                for i in range(0, len(texts), gen.batch_size):
                    batch = texts[i : i + gen.batch_size]
                    rows_ids, rows_lp = gen.decode_rows(
                        batch, n, max_new_tokens=self.max_proof_tokens, until_tactic_end=False
                    )
                    per: list[list[Completion]] = [[] for _ in batch]
                    for row, ids in enumerate(rows_ids):
                        per[row // n].append(
                            completion_from_ids(gen.tokenizer, ids, rows_lp[row], gen.stop_ids)
                        )
                    if n < num_samples:  # greedy: one decode stands for every sample
                        per = [[Completion(a.text, a.logprob)] * num_samples for (a,) in per]
                    out.extend(per)
            finally:
                gen.rendered = False
        return out

    # ................................................................ upstream LeanDojo-v2's calls

    def next_tactic(self, state: object, goal_id: int = 0, *, num_samples: int = 5) -> str | None:
        """Upstream LeanDojo-v2's one-tactic call: the best (highest log-prob) of ``num_samples``
        sampled tactics for ``state`` (a goal state text, a
        :class:`~lean_dojo_v2.interaction.ProofState`, or anything whose ``str`` is the state, such
        as PyPantograph's ``GoalState``), or None when the model proposed none. ``goal_id`` is
        upstream's argument; as upstream, the model sees the whole state. (Upstream picks one of
        its samples at random; this one is the best, so the same state gives the same tactic
        under a fixed ``seed``.)"""
        del goal_id
        (candidates,) = self.generate([state_text(state)], num_samples)
        return candidates[0].tactic if candidates else None

    def generate_whole_proof(self, theorem: object, *, num_samples: int = 1) -> str:
        """Upstream LeanDojo-v2's whole-proof call: the best of ``num_samples`` whole proofs of
        ``theorem`` (a :class:`~lean_dojo_v2.data.Theorem`, the text of a statement such as
        ``"theorem t : p ∧ q → q ∧ p := by"``, or a goal state; see
        :func:`~lean_dojo_v2.prover.completions.whole_proof_input`), as a tactic block without
        a leading ``by``; ``""`` when the model proposed none."""
        (candidates,) = self.generate_proofs([whole_proof_input(theorem)], num_samples)
        return candidates[0].tactic if candidates else ""

    def search(
        self,
        server: Envs,
        goal: str | None = None,
        theorem: Theorem | None = None,
        verbose: bool = False,
        *,
        config: SearchConfig | None = None,
        progress_model: ProgressPredictor | None = None,
    ) -> tuple[GoalSearchResult, list[str] | None]:
        """Upstream LeanDojo-v2's search entry: prove ``theorem`` (a
        :class:`~lean_dojo_v2.data.Theorem`) or the bare ``goal`` (see :func:`goal_theorem`) in
        ``server`` (one of our ``ProofEnv`` / ``AsyncProofEnv``, or a list of them) with our
        search (best-first unless ``config.whole_proof``). Returns ``(result, used_tactics)``:
        ``result.success`` is true only after the environment re-checked the whole proof;
        ``used_tactics`` is the proof's tactics in order, or None when there is none. ``verbose``
        prints the outcome."""
        from ..interaction import AsyncProofEnv, ProofEnv

        envs = server if isinstance(server, (list, tuple)) else [server]
        if not envs or not all(isinstance(e, (ProofEnv, AsyncProofEnv)) for e in envs):
            raise ConfigError(
                f"server must be a lean_dojo_v2 ProofEnv (e.g. lean_dojo_v2.interaction."
                f"PantographEnv), not {type(server).__name__}; PyPantograph's Server is not used"
            )
        if theorem is None:
            if goal is None:
                raise ConfigError("search needs goal= (a proposition) or theorem= (a Theorem)")
            theorem = goal_theorem(goal)
        outcome = self.prove(theorem, server, config, progress_model)
        used = list(outcome.proof) if outcome.proved and outcome.proof is not None else None
        if verbose:
            print(
                f"{outcome.status}: {outcome.theorem} after {outcome.expansions} expansions "
                f"in {outcome.seconds:.1f} s" + (f"; proof: {used}" if used else "")
            )
        return GoalSearchResult(outcome), used
