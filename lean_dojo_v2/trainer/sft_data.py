"""Data preparation of SFT: traced tactics → (prompt, completion) pairs → token ids with a
completion mask, tokenised exactly as the generators tokenise a prompt so that the model trains on
the ids it is given at inference (``docs/training.md``, "What the model is trained on").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..data import Theorem, TracedTactic
from ..data.sorry import find_sorry_tokens
from ..errors import EmptyDatasetError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from .sft_config import SFTConfig

log = logging.getLogger(__name__)


@dataclass
class PreparationCounts:
    """Counts of one data preparation (SFT's, GRPO's), for logs, errors and the run summary."""

    theorems: int = 0
    theorems_with_tactics: int = 0

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class ExampleStats(PreparationCounts):
    tactics: int = 0
    sorry_dropped: int = 0
    too_long_dropped: int = 0
    examples: int = 0


@dataclass
class SFTExamples:
    """Pairs built from theorems, and the counts of what was kept and dropped."""

    pairs: list[tuple[str, str]] = field(default_factory=list)
    stats: ExampleStats = field(default_factory=ExampleStats)


def is_sorry_tactic(tactic: str) -> bool:
    """Whether ``tactic`` uses ``sorry`` or ``admit`` (as Lean tokens, not inside names)."""
    # A name's characters: \w is str.isalnum() or "_"; Lean names also take . ' ! ?
    return bool(find_sorry_tokens(tactic)) or "admit" in re.findall(r"[\w.'!?]+", tactic)


def _usable_tactics(theorems: Iterable[Theorem], st: ExampleStats) -> Iterator[TracedTactic]:
    """The traced tactics of ``theorems`` that use neither ``sorry`` nor ``admit``, counted
    (with those left out) into ``st``."""
    for theorem in theorems:
        st.theorems += 1
        if theorem.traced_tactics:
            st.theorems_with_tactics += 1
        for tt in theorem.traced_tactics:
            st.tactics += 1
            if is_sorry_tactic(tt.tactic):
                st.sorry_dropped += 1
            else:
                yield tt


def build_examples(
    theorems: Iterable[Theorem],
    tokenizer: PreTrainedTokenizerBase,
    *,
    use_premises: bool = False,
    max_examples: int | None = None,
    source: str = "the data",
) -> SFTExamples:
    """One (prompt, completion) pair per traced tactic of ``theorems`` (``sorry``/``admit``
    tactics dropped), through :func:`~lean_dojo_v2.models.prompts.training_pair`.

    Raises :class:`EmptyDatasetError` naming why nothing is left (no theorems, no traced tactics,
    only sorry tactics).
    """
    from ..models.prompts import training_pair

    out = SFTExamples()
    for tt in _usable_tactics(theorems, out.stats):
        if max_examples is None or len(out.pairs) < max_examples:  # go on counting
            premises: Sequence[str] = tt.premises if use_premises else ()
            out.pairs.append(training_pair(tokenizer, tt.state_before, tt.tactic, premises))
    out.stats.examples = len(out.pairs)
    if not out.pairs:
        raise _empty(out.stats, source)
    return out


def check_usable(theorems: Sequence[Theorem], *, source: str = "the data") -> ExampleStats:
    """Count what :func:`build_examples` would use, without a tokenizer (to fail before a model
    is loaded); raises the same :class:`EmptyDatasetError` when nothing is usable."""
    st = ExampleStats()
    st.examples = sum(1 for _ in _usable_tactics(theorems, st))
    if st.examples == 0:
        raise _empty(st, source)
    return st


def _empty(st: ExampleStats, source: str) -> EmptyDatasetError:
    if st.theorems == 0:
        why = "it holds no theorems"
    elif st.tactics == 0:
        why = (
            f"none of its {st.theorems} theorems has traced tactics (term-mode proofs only, "
            "or records without tactics); SFT needs tactic proofs: trace the repository with "
            "LeanDojo, or choose other splits (config key 'splits')"
        )
    else:
        why = f"all {st.tactics} traced tactics use sorry/admit"
    return EmptyDatasetError(f"no training examples in {source}: {why}")


def tokenize_pairs(
    pairs: Sequence[tuple[str, str]], tokenizer: PreTrainedTokenizerBase, *, max_seq_len: int
) -> tuple[list[dict[str, list[int]]], int]:
    """Token ids and completion masks of ``pairs`` as the generators tokenise them; examples longer
    than ``max_seq_len`` are left out (never cut). Returns the rows and how many were left out."""
    from ..models.prompts import add_special_tokens_for, prompt_style

    special = add_special_tokens_for(prompt_style(tokenizer))
    rows: list[dict[str, list[int]]] = []
    too_long = 0
    for prompt, completion in pairs:
        prompt_ids = list(tokenizer(prompt, add_special_tokens=special)["input_ids"])
        full = list(tokenizer(prompt + completion, add_special_tokens=special)["input_ids"])
        if full[: len(prompt_ids)] == prompt_ids and len(full) > len(prompt_ids):
            completion_ids = full[len(prompt_ids) :]
        else:  # the boundary merged tokens: keep the prompt's own ids, as at inference
            completion_ids = list(tokenizer(completion, add_special_tokens=False)["input_ids"])
        ids = prompt_ids + completion_ids
        if len(ids) > max_seq_len:
            too_long += 1
            continue
        rows.append(
            {"input_ids": ids, "completion_mask": [0] * len(prompt_ids) + [1] * len(completion_ids)}
        )
    return rows, too_long


def training_rows(
    theorems: Sequence[Theorem], tokenizer: PreTrainedTokenizerBase, cfg: SFTConfig, *, source: str
) -> tuple[list[dict[str, list[int]]], ExampleStats]:
    """The rows one SFT pass trains on (:func:`build_examples`, then :func:`tokenize_pairs` with
    ``cfg``'s settings) and their counts; :class:`EmptyDatasetError` when every example is longer
    than ``max_seq_len``."""
    built = build_examples(
        theorems,
        tokenizer,
        use_premises=cfg.use_premises,
        max_examples=cfg.max_examples,
        source=source,
    )
    rows, too_long = tokenize_pairs(built.pairs, tokenizer, max_seq_len=cfg.max_seq_len)
    st = built.stats
    st.too_long_dropped, st.examples = too_long, len(rows)
    if not rows:
        raise EmptyDatasetError(
            f"no training examples in {source}: all {too_long} examples are longer than "
            f"max_seq_len={cfg.max_seq_len} tokens; raise max_seq_len"
        )
    return rows, st
