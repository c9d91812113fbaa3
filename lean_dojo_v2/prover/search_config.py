"""Layer 3 (prover): :class:`SearchConfig`, the settings of one proof search (no torch here)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..errors import ConfigError

ENV_PROGRESS_MODEL = "LEANPROGRESS_MODEL"
"""Upstream LeanDojo-v2's variable naming a progress model (the same name as
``models.progress.ENV_MODEL``; repeated here so that this module stays free of model imports)."""

MODES: tuple[str, ...] = ("tactic", "whole", "refine")
"""The search modes (:attr:`SearchConfig.mode`)."""

DEFAULT_PROGRESS_WEIGHT = 0.5
"""λ when a progress model is configured and ``progress_weight`` is None. Log-probs of single
tactics are typically a few tenths to a few nats apart; at 0.5 one predicted step fewer weighs half
a nat, enough to reorder near-equal candidates without overruling a generator that is sure."""


@dataclass
class SearchConfig:
    r"""Settings of one proof search (per theorem), for
    :class:`~lean_dojo_v2.prover.search.BestFirstSearch`,
    :class:`~lean_dojo_v2.prover.search.WholeProofSearch` and
    :class:`~lean_dojo_v2.prover.refine.RefineSearch`.

    ``prove --config FILE --set max_expansions=20`` loads it like a trainer's config;
    ``prove --help-config`` prints the fields below.

    Parameters:
        > Parameters that control generation

        num_samples (`int`, *optional*, defaults to `8`):
            Tactics asked of the generator per expanded state (whole-proof mode: proofs per
            generator request).
        frontier_batch (`int`, *optional*, defaults to `4`):
            Open states expanded per generator call (one batched `generate` over all of them); 1 is
            plain best-first, larger batches keep a model busy.

        > Parameters that control the budgets

        max_expansions (`int`, *optional*, defaults to `100`):
            States expanded (one generator request each) before giving up (`status="failed"`,
            `stats["stop_reason"] == "max_expansions"`).
        timeout (`float`, *optional*, defaults to `600.0`):
            Wall-clock seconds per theorem (`status="timeout"`): the generator call is abandoned and
            no tactic is started past it.
        tactic_timeout (`float`, *optional*, defaults to `30.0`):
            Seconds each `run_tactic` may take (the environment returns a `TacticTimeout` past it);
            cut to the time left of `timeout`.
        max_depth (`int` or `None`, *optional*, defaults to `None`):
            States this many tactics deep are not expanded. `None`: no limit.

        > Parameters that control the priority

        progress_weight (`float` or `None`, *optional*, defaults to `None`):
            Weight λ of the progress model's predicted steps remaining; the priority is
            `logprob + λ·(−steps)`. `None`: `DEFAULT_PROGRESS_WEIGHT` (0.5) when a progress model
            is configured (`progress_model_path`, `LEANPROGRESS_MODEL`, or the search's
            `progress_model` argument), else 0. 0 uses log-probs only and loads no model, even
            with `LEANPROGRESS_MODEL` set; > 0 needs a model.
        progress_model_path (`str` or `None`, *optional*, defaults to `None`):
            Directory of the progress model (written by `lean-dojo-v2 train progress`); `None`:
            `LEANPROGRESS_MODEL`, when set. A path that holds no progress model is an error
            before the search starts, never ignored.

        > Parameters that control the mode

        mode (`str` or `None`, *optional*, defaults to `None`):
            How to search: `"tactic"` (best-first search tactic by tactic, `BestFirstSearch`),
            `"whole"` (sample whole proofs and check each, `WholeProofSearch`) or `"refine"` (a
            whole proof, then up to `refine_rounds` rounds that send Lean's first error back to
            the model, `RefineSearch`). `None`: `"whole"` when `whole_proof`, else `"tactic"`.
        whole_proof (`bool`, *optional*, defaults to `False`):
            The older name of `mode="whole"` (with `mode` None); `True` with `mode="tactic"` is
            refused.
        whole_proof_rounds (`int`, *optional*, defaults to `1`):
            Generator requests of first whole proofs (`num_samples` proofs each, so `num_samples
            * whole_proof_rounds` samples in all); each counts as one expansion.
        refine_rounds (`int`, *optional*, defaults to `2`):
            Refinement rounds R after a failed whole proof (`mode="refine"`): each round asks for
            one corrected proof with the failed proof and Lean's first error in the prompt; a
            chain stops at its first accepted proof or after R rounds.
        early_stop (`bool`, *optional*, defaults to `True`):
            Whole and refine modes: stop at the first accepted proof. `False` checks every
            sample (and runs every refinement chain to its end), as pass@k needs.
        proof_prompt (`str` or `None`, *optional*, defaults to `None`):
            A prompt template file (JSON, YAML or TOML with the keys `whole`, `refine`,
            `system`; `docs/evaluation.md`) for whole and refine modes. `None`: DeepSeek-Prover's
            prompt for a standalone statement, the library's own whole-proof prompt for a traced
            theorem.
        record_tree (`bool`, *optional*, defaults to `False`):
            Tactic mode: keep the search tree in the result (`SearchResult.tree`: every tactic
            tried, its goal, score and outcome), for a report. Off by default: a tree holds every
            goal text of the search.

        > Parameters that control failure handling

        rebuild_stale (`bool`, *optional*, defaults to `True`):
            Re-create a state lost to an environment restart (start the theorem and replay the
            node's tactics) instead of dropping the node.
        max_rebuilds (`int`, *optional*, defaults to `50`):
            At most this many such re-creations per theorem.
        verify_retries (`int`, *optional*, defaults to `1`):
            Extra attempts of a whole-proof re-check whose environment failed (each on the next
            environment), before the proof counts as not checked.
        generator_in_thread (`bool`, *optional*, defaults to `True`):
            Run the (blocking) generator in a worker thread, so that the wall-clock limit holds
            during a slow generation and the environments stay responsive.
    """

    num_samples: int = 8
    max_expansions: int = 100
    timeout: float = 600.0
    tactic_timeout: float = 30.0
    frontier_batch: int = 4
    progress_weight: float | None = None
    progress_model_path: str | None = None
    mode: str | None = None
    whole_proof: bool = False
    whole_proof_rounds: int = 1
    refine_rounds: int = 2
    early_stop: bool = True
    proof_prompt: str | None = None
    record_tree: bool = False
    max_depth: int | None = None
    rebuild_stale: bool = True
    max_rebuilds: int = 50
    verify_retries: int = 1
    generator_in_thread: bool = True

    def __post_init__(self) -> None:
        for name in ("num_samples", "max_expansions", "frontier_batch", "whole_proof_rounds"):
            _check_int(name, getattr(self, name), 1)
        for name in ("max_rebuilds", "verify_retries", "refine_rounds"):
            _check_int(name, getattr(self, name), 0)
        if self.max_depth is not None:
            _check_int("max_depth", self.max_depth, 1)
        for name in ("timeout", "tactic_timeout"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ConfigError(
                    f"SearchConfig.{name} must be a finite number of seconds > 0, got {value!r}"
                )
        w = self.progress_weight
        if w is not None and (
            isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0
        ):
            raise ConfigError(
                f"SearchConfig.progress_weight must be a finite number >= 0 or None, got {w!r}"
            )
        path = self.progress_model_path
        if path is not None and (not isinstance(path, str) or not path.strip()):
            raise ConfigError(
                f"SearchConfig.progress_model_path must be a directory path or None, got {path!r}"
            )
        if self.mode is not None and self.mode not in MODES:
            raise ConfigError(
                f"SearchConfig.mode must be one of {', '.join(MODES)} (or None), got {self.mode!r}"
            )
        if self.mode == "tactic" and self.whole_proof:
            raise ConfigError(
                "SearchConfig: whole_proof=True contradicts mode='tactic'; whole_proof is the "
                "older name of mode='whole': set one of them"
            )
        for name in ("whole_proof", "early_stop", "record_tree", "rebuild_stale"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"SearchConfig.{name} must be true or false, got {getattr(self, name)!r}"
                )
        prompt = self.proof_prompt
        if prompt is not None and (not isinstance(prompt, str) or not prompt.strip()):
            raise ConfigError(
                f"SearchConfig.proof_prompt must be the path of a template file or None, "
                f"got {prompt!r}"
            )

    @property
    def search_mode(self) -> str:
        """The mode the search runs: ``mode``, or ``"whole"``/``"tactic"`` from ``whole_proof``
        when ``mode`` is None."""
        if self.mode is not None:
            return self.mode
        return "whole" if self.whole_proof else "tactic"

    def progress_model_source(self) -> str | None:
        """The progress model directory this config asks for: ``progress_model_path``, else
        ``$LEANPROGRESS_MODEL`` when set; None when neither is, or when ``progress_weight`` is 0
        (turned off)."""
        if self.progress_weight == 0:
            return None
        if self.progress_model_path is not None:
            return self.progress_model_path
        return os.environ.get(ENV_PROGRESS_MODEL, "").strip() or None

    def effective_progress_weight(self, has_model: bool) -> float:
        """λ as the search applies it: ``progress_weight``, or when that is None
        :data:`DEFAULT_PROGRESS_WEIGHT` with a progress model and 0 without."""
        if self.progress_weight is not None:
            return float(self.progress_weight)
        return DEFAULT_PROGRESS_WEIGHT if has_model else 0.0


def _check_int(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"SearchConfig.{name} must be a whole number >= {low}, got {value!r}")


__all__ = ["DEFAULT_PROGRESS_WEIGHT", "ENV_PROGRESS_MODEL", "MODES", "SearchConfig"]
