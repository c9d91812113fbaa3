"""The config of LeanHammer's premise selector (``lean-dojo-v2 train premise-selector``,
:class:`~lean_dojo_v2.trainer.premise_selector.PremiseSelectorTrainer`): the retrieval trainer's
:class:`~lean_dojo_v2.trainer.retrieval_config.TrainingConfig` with the ntp-toolkit data, the split,
the encoder options and the evaluation. No torch here."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..config.loading import config_field, require, require_one_of
from ..errors import ConfigValueError
from .retrieval_config import TrainingConfig

PREMISE_SOURCES = ("declaration", "next_tactic")
RETRIEVAL_MASK_MODES = ("none", "no_positive", "only_negative")
POOLING_MODES = ("cls", "lasttoken", "max", "mean", "mean_sqrt_len_tokens", "weightedmean")


def _mini_batch_size(value: object) -> dict[str, object]:
    """grad_cache = true and grad_cache_chunk_size (None: grad_cache = false)"""
    if value is None or str(value).strip().lower() in ("none", "null", "~", ""):
        return {"grad_cache": False}
    return {"grad_cache": True, "grad_cache_chunk_size": value}


@dataclass
class PremiseSelectorConfig(TrainingConfig):
    r"""Configuration of ``lean-dojo-v2 train premise-selector``
    (:class:`~lean_dojo_v2.trainer.premise_selector.PremiseSelectorTrainer`): a
    ``TrainingConfig`` (the retrieval trainer's fields, documented there) with the ntp-toolkit
    data, the module split, the encoder's pooling, LeanHammer's batch masks and the evaluation.
    A config file, ``--set`` and the constructor also take LeanHammer's key names ``model``,
    ``epochs`` and ``mini_batch_size`` (``config_aliases``).

    The run sets what a dataset directory or a database would otherwise choose: it trains one
    pass on the train split's states (no ``split_strategy``, ``cumulative`` or EWC), validates
    on ``max(10, max(ks))`` retrieved premises, draws one of the ``num_negatives`` from the
    positive's own module (none when ``num_negatives`` is 0) and resumes its own training
    directory.

    Parameters:
        > Parameters that control the model

        run_name (`str` or `None`, *optional*, defaults to `None`):
            The `MODEL` part of `retrieved_premises/dot_{valid,test}-MODEL.json`; `None`: the last
            component of `model_name` (`all-MiniLM-L6-v2` for the default).
        is_sentence_transformer (`bool` or `None`, *optional*, defaults to `None`):
            LeanHammer's `--is_sentence_transformer`. `True`: `model_name` must be a
            sentence-transformers folder (`modules.json`); the encoder is its Transformer with
            the pooling its Pooling config declares (and L2 normalisation); a folder with other
            modules (e.g. `Dense`) is refused. `False`: `model_name` is loaded as a plain Hugging
            Face `AutoModel` followed by `pooling_mode` pooling. `None`: `True` when `model_name`
            has a sentence-transformers config, else `False` (upstream's default is `False`, which
            would re-pool the bundled MiniLM with `lasttoken`).
        pooling_mode (`str` or `None`, *optional*, defaults to `None`):
            LeanHammer's `--pooling_mode`, used when the model is not loaded as a sentence
            transformer: `cls`, `lasttoken`, `max`, `mean`, `mean_sqrt_len_tokens` or
            `weightedmean`. `None`: `mean` (upstream's default `lasttoken` suits decoder-only
            models only). Given together with `is_sentence_transformer=True` it must equal the
            folder's own pooling.
        use_qlora (`bool`, *optional*, defaults to `False`):
            LeanHammer's `--use_qlora` (4-bit QLoRA). Not available: it needs CUDA and
            `bitsandbytes`, and upstream's `train.py` itself raises `NotImplementedError` for it;
            `True` is a `ConfigValueError` saying which requirement is missing.

        > Parameters that control the data

        data_dir (`str`, defaults to `""`):
            The ntp-toolkit output directory (e.g. `Examples/mathlib`) with `Declarations/`,
            `Imports/`, `TrainingDataWithPremises/`, `HammerBlacklist.jsonl` and `revision`.
        filter (`bool`, *optional*, defaults to `True`):
            LeanHammer's `--filter`: leave out of the corpus and out of every state's premises the
            names in `HammerBlacklist.jsonl`, and every declaration of a module with a component
            in LeanHammer's module blacklist (`Aesop`, `Lean`, `Tactic`, `Util`, ...), with a name
            component `Lean`, `Lake` or `Qq`, or whose type starts with `Lean.`. `False`
            (`--no-filter`): keep everything.
        mathlib_only (`bool`, *optional*, defaults to `False`):
            LeanHammer's `--mathlib_only`: read only modules whose name starts with `Mathlib.`
            (premises and training states); premises of other modules that Mathlib proofs use are
            dropped from their positives (counted in `data_report.json`).
        nameless (`bool`, *optional*, defaults to `False`):
            LeanHammer's `--nameless`: the premise text the encoder reads leaves out the premise's
            own name (`kind args : type`). Needs each declaration's `type` or `signature`;
            a declaration with only a name is a format error naming its file and line.
        premise_source (`str`, *optional*, defaults to `"declaration"`):
            `declaration`: a state's premises are those of its declaration's whole proof
            (`declHammerRecommendation`, LeanHammer's choice); evaluation uses each declaration's
            first state. `next_tactic`: those of the next tactic (`nextTacticHammerRecommendation`);
            evaluation uses every state.
        valid_fraction (`float`, *optional*, defaults to `0.1`):
            Fraction of modules (with at least one state with premises) held out for validation.
        test_fraction (`float`, *optional*, defaults to `0.1`):
            Fraction of modules held out for the test split.

        > Parameters that control the training

        retrieval_mask_mode (`str`, *optional*, defaults to `"no_positive"`):
            LeanHammer's `--retrieval_mask_mode`: which in-batch candidates are taken out of a
            state's contrastive loss (never its own target). `none`: nothing, every other
            candidate is a negative. `no_positive`: the state's other positives and its own
            declaration. `only_negative`: everything that is not a true negative, i.e. keep only
            premises accessible at the state (imported modules, earlier in its own module) or in
            modules unrelated to it (that do not import its module), minus its positives and
            declaration: premises later in its module or in modules importing it are masked.
        seed (`int`, *optional*, defaults to `0`):
            Seed of the module split and of training (initialisation, order, negatives).

        > Parameters that control the evaluation

        ks (`list[int]`, *optional*, defaults to `[8, 16, 32]`):
            The k of recall@k and FullRecall@k (all ground-truth premises in the top k); the static
            retrievals keep the top `max(ks)` premises of each query.

        > Parameters that control validation, checkpoints and outputs

        output_dir (`str`, *optional*, defaults to `"outputs-premise-selector"`):
            Where everything goes (the training run itself under `training/`). It must be new,
            empty or written by lean-dojo-v2, unless `overwrite_output_dir`.

        > Parameters that control logging

        report_to (`list[str]`, *optional*, defaults to `["none"]`):
            `tensorboard` (offline event files under `output_dir/training/logs`) or `none`.
    """

    config_aliases: ClassVar[dict[str, str | Callable[[Any], dict[str, Any]]]] = {
        "model": "model_name",
        "epochs": "max_epochs",
        "mini_batch_size": _mini_batch_size,
    }

    # LeanHammer's names, taken by the constructor as by config files (see config_aliases)
    model: InitVar[str | None] = None
    epochs: InitVar[int | None] = None
    mini_batch_size: InitVar[int | None] = None
    # model
    run_name: str | None = config_field(None, fingerprint=False)
    is_sentence_transformer: bool | None = None
    pooling_mode: str | None = None
    use_qlora: bool = False
    # data
    data_dir: str = config_field("", fingerprint=False)  # the examples' digest is the plan's
    filter: bool = True
    mathlib_only: bool = False
    nameless: bool = False
    premise_source: str = "declaration"
    valid_fraction: float = 0.1
    test_fraction: float = 0.1
    # training
    retrieval_mask_mode: str = "no_positive"
    seed: int = 0
    # evaluation and outputs
    ks: list[int] = config_field(default_factory=lambda: [8, 16, 32], fingerprint=False)
    output_dir: str = config_field("outputs-premise-selector", fingerprint=False)
    report_to: list[str] = config_field(default_factory=lambda: ["none"], fingerprint=False)
    # set by the run (see the docstring), not by the user
    split_strategy: str = field(default="random", init=False)
    num_in_file_negatives: int = field(default=1, init=False)
    num_retrieved: int = field(default=32, init=False)
    cumulative: bool = field(default=False, init=False)
    lambda_value: float = field(default=0.0, init=False)
    fisher_max_batches: int | None = field(default=None, init=False)
    resume: bool = field(default=True, init=False)

    def __post_init__(
        self,
        model: str | None = None,
        epochs: int | None = None,
        mini_batch_size: int | None = None,
    ) -> None:
        if model is not None:
            self.model_name = model
        if epochs is not None:
            self.max_epochs = epochs
        if mini_batch_size is not None:
            if isinstance(mini_batch_size, bool) or mini_batch_size < 1:
                raise ConfigValueError(
                    f"config key 'mini_batch_size' must be None or at least 1, got "
                    f"{mini_batch_size!r}"
                )
            self.grad_cache, self.grad_cache_chunk_size = True, mini_batch_size
        self.num_in_file_negatives = min(1, self.num_negatives)
        self.num_retrieved = max([10, *self.ks])
        super().__post_init__()
        require_one_of(self, "premise_source", PREMISE_SOURCES)
        require_one_of(self, "retrieval_mask_mode", RETRIEVAL_MASK_MODES)
        pool_ok = self.pooling_mode is None or self.pooling_mode in POOLING_MODES
        require(self, pool_ok, "pooling_mode", f"None or one of {', '.join(POOLING_MODES)}")
        require(self, 0 <= self.valid_fraction < 1, "valid_fraction", "a fraction in [0, 1)")
        require(self, 0 <= self.test_fraction < 1, "test_fraction", "a fraction in [0, 1)")
        below = f"below 1 - valid_fraction ({1 - self.valid_fraction})"
        require(self, self.valid_fraction + self.test_fraction < 1, "test_fraction", below)
        require(self, bool(self.ks) and all(k >= 1 for k in self.ks), "ks", "a list of k >= 1")
        if self.run_name is not None:
            require(self, bool(_safe_name(self.run_name)), "run_name", "a non-empty name")

    @property
    def model_label(self) -> str:
        """The ``MODEL`` of the retrieval file names."""
        if self.run_name:
            return _safe_name(self.run_name)
        if self.model_name:
            return _safe_name(Path(str(self.model_name).rstrip("/")).name) or "model"
        return "all-MiniLM-L6-v2"


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("._")


__all__ = ["POOLING_MODES", "PREMISE_SOURCES", "RETRIEVAL_MASK_MODES", "PremiseSelectorConfig"]
