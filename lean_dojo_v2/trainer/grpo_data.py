"""Data preparation of GRPO: traced theorems → prompt rows, and the theorems the rewards check.

A row has exactly the columns the reward functions read (TRL hands every dataset column to each
reward function; ``docs/training.md``, "GRPO", lists them). Tactic mode has one row per traced
tactic, proof mode one per theorem with a traced tactic proof; ``sorry``/``admit`` are left out (a
reward must never point at them), and prompts longer than ``max_prompt_len`` tokens are left out,
never cut.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..data import Theorem
from ..errors import EmptyDatasetError
from .sft_data import PreparationCounts, is_sorry_tactic

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)

COLUMNS = ("prompt", "state", "theorem_key", "step", "recorded_tactic", "difficulty", "mode")
# The database's difficulty categories on the [0, 1] scale of the ``difficulty`` column.
CATEGORY_DIFFICULTY = {"easy": 0.0, "medium": 0.5, "hard": 1.0}


@dataclass
class PromptStats(PreparationCounts):
    candidates: int = 0
    sorry_dropped: int = 0
    too_long_dropped: int = 0
    prompts: int = 0


@dataclass
class PromptRows:
    """The rows of a pass, the theorems they come from (by ``theorem_key``), and the counts."""

    rows: list[dict[str, object]] = field(default_factory=list)
    theorems: dict[str, Theorem] = field(default_factory=dict)
    stats: PromptStats = field(default_factory=PromptStats)


def theorem_key(theorem: Theorem) -> str:
    """The ``theorem_key`` column: ``file_path::full_name``."""
    return f"{theorem.file_path}::{theorem.full_name}"


def difficulty(theorem: Theorem) -> float:
    """The theorem's difficulty in [0, 1]: its database category (Easy/Medium/Hard → 0/0.5/1)
    when the record carries one, else from its proof length, ``min(1, (n - 1) / 9)`` for ``n``
    tactics (one tactic is easy, ten or more hard)."""
    for key in ("difficulty", "category", "difficulty_category"):
        value = theorem.extra.get(key)
        if isinstance(value, str):
            word = value.strip().lower().split()[0] if value.strip() else ""
            if word in CATEGORY_DIFFICULTY:
                return CATEGORY_DIFFICULTY[word]
    n = len(theorem.traced_tactics)
    return min(1.0, max(0, n - 1) / 9)


def _candidates(theorems: Iterable[Theorem], mode: str, st: PromptStats):
    """``(theorem, step, state, recorded)`` of every prompt ``mode`` makes of ``theorems``."""
    from ..data.goals import canonical_state
    from ..prover.result import proof_text

    for theorem in theorems:
        st.theorems += 1
        tactics = theorem.traced_tactics
        if not tactics:
            continue
        st.theorems_with_tactics += 1
        if mode == "proof":
            st.candidates += 1
            if any(is_sorry_tactic(t.tactic) for t in tactics):
                st.sorry_dropped += 1
                continue
            state = canonical_state(tactics[0].state_before)
            yield theorem, 0, state, proof_text([t.tactic for t in tactics])
            continue
        for step, tt in enumerate(tactics):
            st.candidates += 1
            if is_sorry_tactic(tt.tactic):
                st.sorry_dropped += 1
                continue
            yield theorem, step, canonical_state(tt.state_before), tt.tactic.strip()


def check_prompt_theorems(
    theorems: Sequence[Theorem], mode: str, *, source: str = "the data"
) -> PromptStats:
    """Count the prompts ``mode`` would make of ``theorems`` without a tokenizer (to fail before
    a model is loaded); raises :class:`EmptyDatasetError` naming why there are none."""
    st = PromptStats()
    st.prompts = sum(1 for _ in _candidates(theorems, mode, st))
    if st.prompts == 0:
        raise _empty(st, mode, source)
    return st


def build_prompt_rows(
    theorems: Iterable[Theorem],
    tokenizer: PreTrainedTokenizerBase,
    *,
    mode: str = "tactic",
    max_prompts: int | None = None,
    max_prompt_len: int | None = None,
    source: str = "the data",
) -> PromptRows:
    """The prompt rows of ``theorems`` in ``mode`` (see the module's doc), the first
    ``max_prompts`` of them, prompts over ``max_prompt_len`` tokens left out. Raises
    :class:`EmptyDatasetError` naming why none is left."""
    from ..models.prompts import render_prompt, render_proof_prompt

    render = render_proof_prompt if mode == "proof" else render_prompt
    out = PromptRows()
    st = out.stats
    for theorem, step, state, recorded in _candidates(theorems, mode, st):
        if max_prompts is not None and len(out.rows) >= max_prompts:
            continue  # go on counting
        prompt = render(tokenizer, state)
        if max_prompt_len is not None:
            # Counted as TRL tokenises a text prompt.
            if len(tokenizer(prompt)["input_ids"]) > max_prompt_len:
                st.too_long_dropped += 1
                continue
        key = theorem_key(theorem)
        out.theorems.setdefault(key, theorem)
        out.rows.append(
            {
                "prompt": prompt,
                "state": state,
                "theorem_key": key,
                "step": step,
                "recorded_tactic": recorded,
                "difficulty": difficulty(theorem),
                "mode": mode,
            }
        )
    st.prompts = len(out.rows)
    if not out.rows:
        raise _empty(st, mode, source, max_prompt_len)
    return out


def theorems_by_key(theorems: Iterable[Theorem]) -> dict[str, Theorem]:
    """``{theorem_key: theorem}`` (the first of equal keys), as the reward context wants it."""
    out: dict[str, Theorem] = {}
    for t in theorems:
        out.setdefault(theorem_key(t), t)
    return out


def _empty(
    st: PromptStats, mode: str, source: str, max_prompt_len: int | None = None
) -> EmptyDatasetError:
    unit = "whole-proof prompts" if mode == "proof" else "tactic prompts"
    if st.theorems == 0:
        why = "it holds no theorems"
    elif st.theorems_with_tactics == 0:
        why = (
            f"none of its {st.theorems} theorems has traced tactics (term-mode proofs only); GRPO "
            "needs traced goal states: trace the repository with LeanDojo, or choose other splits "
            "(config key 'splits')"
        )
    elif st.too_long_dropped and st.too_long_dropped + st.sorry_dropped >= st.candidates:
        why = (
            f"all {st.too_long_dropped} usable prompts are longer than max_prompt_len="
            f"{max_prompt_len} tokens; raise max_prompt_len"
        )
    else:
        what = "proofs" if mode == "proof" else "traced tactics"
        why = f"all {st.candidates} {what} use sorry/admit"
    return EmptyDatasetError(f"no {unit} in {source}: {why}")


__all__ = [
    "COLUMNS",
    "PromptRows",
    "PromptStats",
    "build_prompt_rows",
    "check_prompt_theorems",
    "difficulty",
    "theorem_key",
    "theorems_by_key",
]
