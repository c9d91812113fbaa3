"""LeanHammer's premise selector on our retrieval trainer: ntp-toolkit data in, retrievals and an
exported retriever out (``lean-dojo-v2 train premise-selector``).

The steps (documented for users in ``docs/premise_selector.md``):

1. :func:`~lean_dojo_v2.data.ntp_toolkit.read_ntp_toolkit` reads the ntp-toolkit directory into a
   :class:`~lean_dojo_v2.data.Corpus` (one file per module) and tactic states with their premises
   (LeanHammer's filters, ``mathlib_only`` and ``nameless`` applied; unknown premises dropped
   and counted).
2. The modules that have a state with premises are split into train / valid / test with
   :func:`~lean_dojo_v2.data.ntp_toolkit.split_modules` (deterministic in the seed). Every state of
   a train module is a training query. Valid and test use, like LeanHammer, each declaration's first
   state with the premises of its whole proof (``premise_source="declaration"``); with
   ``premise_source="next_tactic"`` every state with the premises of its next tactic.
3. :class:`~lean_dojo_v2.trainer.retrieval_trainer.RetrievalTrainer` trains the encoder
   (``fit_examples``: masked in-batch contrastive loss, hard negatives among accessible premises),
   through a subclass that loads the encoder with the chosen pooling
   (``is_sentence_transformer`` / ``pooling_mode``) and masks each batch per
   ``retrieval_mask_mode``.
4. The corpus is encoded once (:class:`~lean_dojo_v2.models.premise_index.PremiseIndex`), each
   valid/test query retrieves its top ``max(ks)`` premises among those accessible at its
   declaration (imported modules, and earlier in its own module; never the declaration itself),
   and recall@k / FullRecall@k / MRR are computed by ``ranking_metrics``.
5. Outputs, in ``output_dir`` (written whole or not at all; see ``data/output_dir.py``):
   ``retrieved_premises/dot_valid-<run_name>.json`` and ``dot_test-<run_name>.json`` (LeanHammer's
   static retrievals: per query ``state_name``, ``decl_name``, ``module``, ``idx_in_module``,
   ``premises`` = ``[{"corpus_id": name, "score": s}, ...]`` best first), ``retriever/`` (model +
   corpus + embeddings, :func:`~lean_dojo_v2.models.premise_index.export_retriever`: what
   ``load_retriever`` and the API's ``/retrieve`` load), ``metrics.json``, ``split.json``,
   ``data_report.json`` (the reader's counts), ``config.yaml`` and ``summary.json``; the trainer's
   own files (checkpoints, logs) under ``training/``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.loading import check_finite_floats
from .errors import ConfigValueError, EmptyDatasetError, TrainingStateError
from .retrieval_trainer import RetrievalTrainer

if TYPE_CHECKING:
    from ..data.ntp_toolkit import ModuleSplit, NtpState, NtpToolkitData
    from ..models.retrieval_eval import RetrievalQuery

logger = logging.getLogger(__name__)

PREMISE_SOURCES = ("declaration", "next_tactic")
RETRIEVAL_MASK_MODES = ("none", "no_positive", "only_negative")
POOLING_MODES = ("cls", "lasttoken", "max", "mean", "mean_sqrt_len_tokens", "weightedmean")


@dataclass
class PremiseSelectorConfig:
    r"""Configuration of ``lean-dojo-v2 train premise-selector`` (:func:`train_premise_selector`).

    The CLI flags set these keys (the seed ``train.py``'s names work too: ``--data_dir``,
    ``--model_name_or_path``, ``--per_device_train_batch_size``, ``--learning_rate``,
    ``--num_train_epochs``, ``--max_steps``, ``--output_dir``, ``--run_name``,
    ``--num_negatives_per_state``, ``--mini_batch_size``, ``--filter``, ``--mathlib_only``,
    ``--nameless``, ``--is_sentence_transformer``, ``--pooling_mode``, ``--retrieval_mask_mode``,
    ``--use_qlora``); ``--config FILE`` and ``--set key=value``
    load the same dataclass.

    Parameters:
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
        seed (`int`, *optional*, defaults to `0`):
            Seed of the module split and of training (initialisation, order, negatives).

        > Parameters that control the model

        model (`str` or `None`, *optional*, defaults to `None`):
            The encoder to start from: `None` is the bundled all-MiniLM-L6-v2; otherwise any
            sentence-transformers / Hugging Face encoder id (offline: only from the local cache) or
            directory, or a ByT5/T5 checkpoint.
        run_name (`str` or `None`, *optional*, defaults to `None`):
            The `MODEL` part of `retrieved_premises/dot_{valid,test}-MODEL.json`; `None`: the last
            component of `model` (`all-MiniLM-L6-v2` for the default).
        max_seq_len (`int`, *optional*, defaults to `256`):
            Longest state or premise text in tokens.
        is_sentence_transformer (`bool` or `None`, *optional*, defaults to `None`):
            LeanHammer's `--is_sentence_transformer`. `True`: `model` must be a
            sentence-transformers folder (`modules.json`); the encoder is its Transformer with
            the pooling its Pooling config declares (and L2 normalisation); a folder with other
            modules (e.g. `Dense`) is refused. `False`: `model` is loaded as a plain Hugging Face
            `AutoModel` followed by `pooling_mode` pooling. `None`: `True` when `model` has a
            sentence-transformers config, else `False` (upstream's default is `False`, which would
            re-pool the bundled MiniLM with `lasttoken`).
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

        > Parameters that control the training

        batch_size (`int`, *optional*, defaults to `16`):
            (state, premise) examples per batch; every premise in the batch is a candidate for every
            state (positives of a state are masked, not counted as negatives).
        lr (`float`, *optional*, defaults to `2e-5`):
            Peak AdamW learning rate.
        epochs (`int`, *optional*, defaults to `1`):
            Passes over the training examples.
        max_steps (`int`, *optional*, defaults to `-1`):
            Stop after this many optimizer steps; `-1`: run `epochs`.
        num_negatives (`int`, *optional*, defaults to `3`):
            Hard negatives drawn per example among the premises accessible at its state (LeanHammer's
            `num_negatives_per_state`).
        retrieval_mask_mode (`str`, *optional*, defaults to `"no_positive"`):
            LeanHammer's `--retrieval_mask_mode`: which in-batch candidates are taken out of a
            state's contrastive loss (never its own target). `none`: nothing, every other
            candidate is a negative. `no_positive`: the state's other positives and its own
            declaration. `only_negative`: everything that is not a true negative, i.e. keep only
            premises accessible at the state (imported modules, earlier in its own module) or in
            modules unrelated to it (that do not import its module), minus its positives and
            declaration: premises later in its module or in modules importing it are masked.
        mini_batch_size (`int` or `None`, *optional*, defaults to `None`):
            When set, use the cached (GradCache) loss and encode this many texts at a time: same
            loss, memory of one mini-batch (LeanHammer's `mini_batch_size`). `None`: plain loss.
        eval_batch_size (`int`, *optional*, defaults to `64`):
            Texts per forward pass when encoding the corpus and the queries.
        device (`str`, *optional*, defaults to `"auto"`):
            Where encoding for evaluation and export runs (`auto`, `cpu`, `cuda`, `cuda:N`).
        progress_bar (`bool`, *optional*, defaults to `True`):
            Show progress bars while training and encoding.

        > Parameters that control evaluation and outputs

        ks (`list[int]`, *optional*, defaults to `[8, 16, 32]`):
            The k of recall@k and FullRecall@k (all ground-truth premises in the top k); the static
            retrievals keep the top `max(ks)` premises of each query.
        output_dir (`str`, *optional*, defaults to `"outputs-premise-selector"`):
            Where everything goes. It must be new, empty or written by lean-dojo-v2, unless
            `overwrite_output_dir`.
        overwrite_output_dir (`bool`, *optional*, defaults to `False`):
            Replace `output_dir` even if it holds files lean-dojo-v2 did not write (`--force`).
    """

    # data
    data_dir: str = ""
    filter: bool = True
    mathlib_only: bool = False
    nameless: bool = False
    premise_source: str = "declaration"
    valid_fraction: float = 0.1
    test_fraction: float = 0.1
    seed: int = 0
    # model
    model: str | None = None
    run_name: str | None = None
    max_seq_len: int = 256
    is_sentence_transformer: bool | None = None
    pooling_mode: str | None = None
    use_qlora: bool = False
    # training
    batch_size: int = 16
    lr: float = 2e-5
    epochs: int = 1
    max_steps: int = -1
    num_negatives: int = 3
    retrieval_mask_mode: str = "no_positive"
    mini_batch_size: int | None = None
    eval_batch_size: int = 64
    device: str = "auto"
    progress_bar: bool = True
    # evaluation and outputs
    ks: list[int] = field(default_factory=lambda: [8, 16, 32])
    output_dir: str = "outputs-premise-selector"
    overwrite_output_dir: bool = False

    def __post_init__(self) -> None:
        # inf passes every range check below (lr > 0) and trains NaN weights.
        check_finite_floats(self)

        def need(ok: bool, key: str, what: str) -> None:
            if not ok:
                raise ConfigValueError(
                    f"config key {key!r} must be {what}, got {getattr(self, key)!r}"
                )

        need(
            self.premise_source in PREMISE_SOURCES,
            "premise_source",
            f"one of {', '.join(PREMISE_SOURCES)}",
        )
        need(
            self.retrieval_mask_mode in RETRIEVAL_MASK_MODES,
            "retrieval_mask_mode",
            f"one of {', '.join(RETRIEVAL_MASK_MODES)}",
        )
        need(
            self.pooling_mode is None or self.pooling_mode in POOLING_MODES,
            "pooling_mode",
            f"None or one of {', '.join(POOLING_MODES)}",
        )
        need(0 <= self.valid_fraction < 1, "valid_fraction", "a fraction in [0, 1)")
        need(0 <= self.test_fraction < 1, "test_fraction", "a fraction in [0, 1)")
        need(
            self.valid_fraction + self.test_fraction < 1,
            "test_fraction",
            f"below 1 - valid_fraction ({1 - self.valid_fraction})",
        )
        need(bool(self.ks) and all(k >= 1 for k in self.ks), "ks", "a list of k >= 1")
        need(self.batch_size >= 1, "batch_size", "at least 1")
        need(self.epochs >= 1, "epochs", "at least 1")
        need(self.max_steps == -1 or self.max_steps >= 1, "max_steps", "-1 or at least 1")
        need(self.lr > 0, "lr", "positive")
        need(self.num_negatives >= 0, "num_negatives", "0 or more")
        need(
            self.mini_batch_size is None or self.mini_batch_size >= 1,
            "mini_batch_size",
            "None or at least 1",
        )
        need(self.eval_batch_size >= 1, "eval_batch_size", "at least 1")
        need(self.max_seq_len >= 8, "max_seq_len", "at least 8")
        need(bool(self.output_dir), "output_dir", "a directory path")
        if self.run_name is not None:
            need(bool(_safe_name(self.run_name)), "run_name", "a non-empty name")

    @property
    def model_label(self) -> str:
        """The ``MODEL`` of the retrieval file names."""
        if self.run_name:
            return _safe_name(self.run_name)
        if self.model:
            return _safe_name(Path(str(self.model).rstrip("/")).name) or "model"
        return "all-MiniLM-L6-v2"


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("._")


@dataclass
class PremiseSelectorResult:
    """What :func:`train_premise_selector` produced."""

    output_dir: Path
    retriever_dir: Path
    retrieval_files: dict[str, Path]
    metrics: dict[str, dict[str, float]]
    split: dict[str, list[str]]
    queries: dict[str, int]
    train_summary: dict[str, Any]
    data_report: dict[str, Any]
    seconds: float
    encoder: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "output_dir": str(self.output_dir),
            "retriever_dir": str(self.retriever_dir),
            "retrieval_files": {k: str(v) for k, v in self.retrieval_files.items()},
            "metrics": self.metrics,
            "modules": {k: len(v) for k, v in self.split.items()},
            "queries": self.queries,
            "train": _jsonable(self.train_summary),
            "data": self.data_report,
            "encoder": self.encoder,
            "seconds": round(self.seconds, 3),
        }


def _relocated(value: Any, old: str, new: str) -> Any:
    """``value`` with paths under the staging directory ``old`` rewritten to ``new`` (where they
    are once the output is swapped in)."""
    if isinstance(value, str):
        return new + value[len(old) :] if value.startswith(old) else value
    if isinstance(value, dict):
        return {k: _relocated(v, old, new) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_relocated(v, old, new) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        if isinstance(value, dict):
            return {str(k): _jsonable(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [_jsonable(v) for v in value]
        return str(value)


# --------------------------------------------------------------------------- queries


def _query(state: NtpState) -> RetrievalQuery:
    from ..models.retrieval_eval import RetrievalQuery

    return RetrievalQuery(
        state=state.state,
        positives=tuple(state.premises),
        file_path=state.module,
        pos=state.pos,
        theorem=state.decl_name,
        tactic_idx=state.tactic_idx,
    )


def split_states(data: NtpToolkitData, split: ModuleSplit) -> dict[str, list[NtpState]]:
    """The states of each split: every usable state of a train module; for valid and test each
    declaration's first state (``premise_source="declaration"``) or every usable state, of
    declarations that are in the corpus (LeanHammer evaluates only those: one left out by its
    filters has no position to bound what is accessible)."""
    usable = data.states_with_premises()
    out: dict[str, list[NtpState]] = {"train": [], "valid": [], "test": []}
    first_seen: set[tuple[str, str]] = set()
    for s in usable:
        name = split.of(s.module)
        if name is None:
            continue
        if name != "train" and data.corpus.get_premise(s.decl_name) is None:
            continue
        if name != "train" and data.premise_source == "declaration":
            key = (s.module, s.decl_name)
            if key in first_seen or s.tactic_idx != 0:
                continue
            first_seen.add(key)
        out[name].append(s)
    return out


def retrieval_record(state: NtpState, hits: Sequence[tuple[Any, float]]) -> dict[str, Any]:
    """One entry of a ``dot_*.json`` file (LeanHammer's layout)."""
    return {
        "state_name": state.state_name,
        "decl_name": state.decl_name,
        "module": state.module,
        "idx_in_module": state.index,
        "premises": [{"corpus_id": p.full_name, "score": float(s)} for p, s in hits],
    }


# --------------------------------------------------------------------------- seed options


def check_qlora(config: PremiseSelectorConfig) -> None:
    """``use_qlora=True`` is refused with a :class:`ConfigValueError` that says why: 4-bit QLoRA
    needs CUDA and ``bitsandbytes`` (named when missing); with both present it is still not
    available (upstream's ``train.py`` raises ``NotImplementedError`` too, and an exported
    retriever is a plain encoder folder, not a 4-bit base plus adapter)."""
    if not config.use_qlora:
        return
    import importlib.util

    import torch

    missing = []
    if not torch.cuda.is_available():
        missing.append("a CUDA GPU (torch.cuda.is_available() is False)")
    if importlib.util.find_spec("bitsandbytes") is None:
        missing.append("the bitsandbytes package (not installed)")
    if missing:
        raise ConfigValueError(
            f"use_qlora needs {' and '.join(missing)}: 4-bit QLoRA quantises the encoder with "
            "bitsandbytes on CUDA. Train without --use_qlora (the default encoders are small "
            "enough for full fine-tuning)"
        )
    raise ConfigValueError(
        "use_qlora is not implemented for the premise selector (LeanHammer's train.py raises "
        "NotImplementedError for it as well): the exported retriever is a plain encoder folder "
        "that load_retriever and /retrieve load, which a 4-bit base with a LoRA adapter is not. "
        "Train without --use_qlora"
    )


def encoder_pooling(config: PremiseSelectorConfig) -> tuple[bool, str | None]:
    """``(is_sentence_transformer, pooling)`` for ``config.model``: how
    :func:`~lean_dojo_v2.models.retrieval.load_encoder` is called (``pooling=None``: the folder's
    own). Raises :class:`ConfigValueError` for contradictory options."""
    from ..models.retrieval import _resolve_encoder, sentence_transformers_pooling

    folder = Path(_resolve_encoder(config.model))
    declared = sentence_transformers_pooling(folder) if folder.is_dir() else None
    shown = config.model or "the bundled all-MiniLM-L6-v2"
    st = config.is_sentence_transformer
    if st is None:
        st = declared is not None
    if st:
        if declared is None:
            raise ConfigValueError(
                f"is_sentence_transformer is true but {shown} ({folder}) has no "
                "sentence-transformers config (modules.json); set is_sentence_transformer=false "
                "and a pooling_mode to load it as a plain Hugging Face encoder"
            )
        if config.pooling_mode is not None and config.pooling_mode != declared:
            raise ConfigValueError(
                f"pooling_mode={config.pooling_mode!r} contradicts {shown}'s sentence-transformers "
                f"pooling ({declared!r}); pooling_mode applies only with "
                "is_sentence_transformer=false (LeanHammer ignores it otherwise)"
            )
        return True, declared
    if config.is_sentence_transformer is False:
        return False, config.pooling_mode or "mean"
    return False, config.pooling_mode


def _false_negative_mask(
    items: Sequence[Any],
    candidates: Sequence[str],
    mode: str,
    corpus: Any,
    decls: dict[tuple[str, str, Any], frozenset[str]],
):
    """``[B, M]`` bool: ``True`` where candidate ``j`` is taken out of row ``i``'s loss under
    ``retrieval_mask_mode`` ``mode`` (see :class:`PremiseSelectorConfig`)."""
    import torch

    rows = []
    for example, _ in items:
        if mode == "none":
            rows.append([False] * len(candidates))
            continue
        own = decls.get((example.query, example.file_path, example.pos), frozenset())
        masked = set(example.positives) | set(own)
        row = []
        for name in candidates:
            if name in masked:
                row.append(True)
                continue
            if mode == "no_positive":
                row.append(False)
                continue
            # only_negative: a true negative is accessible at the state or in an unrelated module
            p = corpus.get_premise(name)
            if p is None:
                row.append(True)
            elif p.path == example.file_path:
                row.append(example.pos is not None and not p.start < example.pos)
            else:
                downstream = example.file_path in corpus.imports_of(p.path)
                row.append(downstream)
        rows.append(row)
    return torch.tensor(rows, dtype=torch.bool).reshape(len(items), len(candidates))


class MaskModeCollator:
    """Wraps the trainer's collate function: same batch, ``positive_mask`` recomputed for
    ``retrieval_mask_mode`` (the loss drops masked candidates, never a row's own target)."""

    def __init__(
        self,
        inner: Any,
        mode: str,
        corpus: Any,
        decls: dict[tuple[str, str, Any], frozenset[str]],
    ) -> None:
        if mode not in RETRIEVAL_MASK_MODES:
            raise ConfigValueError(
                f"retrieval_mask_mode must be one of {', '.join(RETRIEVAL_MASK_MODES)}, "
                f"got {mode!r}"
            )
        self.inner = inner
        self.mode = mode
        self.corpus = corpus
        self.decls = decls

    def __call__(self, items: Sequence[Any]) -> Any:
        batch = self.inner(items)
        batch.positive_mask = _false_negative_mask(
            items, batch.candidate_names, self.mode, self.corpus, self.decls
        )
        return batch


def declarations_of(states: Sequence[NtpState]) -> dict[tuple[str, str, Any], frozenset[str]]:
    """``(state text, module, position) -> declaration names``: what a training example (which
    carries no declaration) is keyed by for the ``no_positive`` / ``only_negative`` masks."""
    out: dict[tuple[str, str, Any], set[str]] = {}
    for s in states:
        out.setdefault((s.state, s.module, s.pos), set()).add(s.decl_name)
    return {k: frozenset(v) for k, v in out.items()}


class PremiseSelectorTrainer(RetrievalTrainer):
    """:class:`~lean_dojo_v2.trainer.retrieval_trainer.RetrievalTrainer` with the seed options:
    the encoder loaded with the chosen pooling, the training batches masked per
    ``retrieval_mask_mode``."""

    def __init__(
        self,
        config: Any,
        *,
        pooling: str | None,
        mask_mode: str,
        decls: dict[tuple[str, str, Any], frozenset[str]],
    ) -> None:
        super().__init__(config)
        self.pooling = pooling
        self.mask_mode = mask_mode
        self.decls = decls

    def _load_encoder(self, from_dir: Path | None):
        if from_dir is not None:  # a saved encoder remembers its pooling
            return super()._load_encoder(from_dir)
        from ..models.retrieval import load_encoder

        return load_encoder(
            self.config.model_name,
            device="cpu",
            max_length=self.config.max_seq_len,
            pooling=self.pooling,
        )

    def _loader(self, train: Sequence[Any], corpus: Any, *, shuffle: bool = True):
        loader = super()._loader(train, corpus, shuffle=shuffle)
        loader.collate_fn = MaskModeCollator(loader.collate_fn, self.mask_mode, corpus, self.decls)
        return loader


def premise_selector_trainer_class() -> type[PremiseSelectorTrainer]:
    """:class:`PremiseSelectorTrainer` (kept for callers of the time it was built on first use)."""
    return PremiseSelectorTrainer


# --------------------------------------------------------------------------- the run


def _selector_trainer(
    config: PremiseSelectorConfig, work: Path, pooling: str | None, states: Any, *, resume: bool
) -> PremiseSelectorTrainer:
    cfg = _training_config(config, work)
    cfg.resume, cfg.overwrite_output_dir = resume, not resume
    return PremiseSelectorTrainer(
        cfg,
        pooling=pooling,
        mask_mode=config.retrieval_mask_mode,
        decls=declarations_of(states["train"]),
    )


def _training_config(config: PremiseSelectorConfig, output_dir: Path):
    from .retrieval_config import TrainingConfig

    return TrainingConfig(
        model_name=config.model,
        max_seq_len=config.max_seq_len,
        device=config.device,
        num_negatives=config.num_negatives,
        num_in_file_negatives=min(1, config.num_negatives),
        num_retrieved=max(10, *config.ks),
        grad_cache=config.mini_batch_size is not None,
        grad_cache_chunk_size=config.mini_batch_size or 32,
        lambda_value=0.0,
        lr=config.lr,
        batch_size=config.batch_size,
        eval_batch_size=config.eval_batch_size,
        max_epochs=config.epochs,
        max_steps=config.max_steps,
        seed=config.seed,
        output_dir=str(output_dir),
        overwrite_output_dir=True,
        resume=False,
        report_to=["none"],
        progress_bar=config.progress_bar,
    )


def evaluate_states(
    retriever: Any, states: Sequence[NtpState], ks: Sequence[int], *, batch_size: int = 64
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Retrieve the top ``max(ks)`` accessible premises for each state; returns the metrics of
    ``ranking_metrics`` (``R@k``, ``FullRecall@k``, ``MRR``, ``n``) and the retrieval records."""
    from ..models.retrieval_eval import ranking_metrics

    k = max(ks)
    records: list[dict[str, Any]] = []
    rankings: list[list[str]] = []
    for start in range(0, len(states), batch_size):
        chunk = list(states[start : start + batch_size])
        hits = retriever.retrieve(
            [s.state for s in chunk], k, accessible=[(s.module, s.pos) for s in chunk]
        )
        for s, row in zip(chunk, hits, strict=True):
            records.append(retrieval_record(s, row))
            rankings.append([p.full_name for p, _ in row])
    metrics = ranking_metrics(rankings, [set(s.premises) for s in states], ks=tuple(ks))
    return dict(metrics), records


def train_premise_selector(config: PremiseSelectorConfig) -> PremiseSelectorResult:
    """Read, split, train, evaluate, write the static retrievals and export (module docstring).
    One run per ``output_dir`` at a time (:func:`~lean_dojo_v2.data.run_lock.lock_output_dir`)."""
    from ..data.run_lock import lock_output_dir

    with lock_output_dir(config.output_dir):
        return _train_locked(config)


def _train_locked(config: PremiseSelectorConfig) -> PremiseSelectorResult:
    from ..data.jsonio import atomic_write
    from ..data.ntp_toolkit import read_ntp_toolkit, split_modules
    from ..data.output_dir import staged_output_dir
    from .config import dump_config
    from .run_dir import check_run_outputs

    t0 = time.perf_counter()
    if not config.data_dir:
        raise ConfigValueError(
            "data_dir is required: the ntp-toolkit output directory (--data-dir DIR)"
        )
    out = Path(config.output_dir)
    check_qlora(config)
    # Refuse a foreign output before reading or training anything.
    inputs = check_run_outputs(
        out, config.model, [Path(config.data_dir)], force=config.overwrite_output_dir
    )
    is_st, pooling = encoder_pooling(config)
    data = read_ntp_toolkit(
        config.data_dir,
        use_blacklist=config.filter,
        use_filters=config.filter,
        mathlib_only=config.mathlib_only,
        nameless=config.nameless,
        premise_source=config.premise_source,  # type: ignore[arg-type]
    )
    modules = sorted({s.module for s in data.states_with_premises()})
    if not modules:
        raise EmptyDatasetError(
            f"{config.data_dir}: none of the {data.report.states} states in "
            "TrainingDataWithPremises has a premise that is in Declarations (and not blacklisted); "
            f"reader report: {json.dumps(data.report.to_dict())}"
        )
    split = split_modules(
        modules, valid=config.valid_fraction, test=config.test_fraction, seed=config.seed
    )
    states = split_states(data, split)
    if not states["train"]:
        raise EmptyDatasetError(
            f"{config.data_dir}: no training state left after holding out "
            f"{len(split.valid)} valid and {len(split.test)} test module(s) of {len(modules)}; "
            "lower valid_fraction/test_fraction or add data"
        )
    logger.info(
        "premise selector: %d premises in %d modules; states train/valid/test = %d/%d/%d",
        len(data.corpus),
        len(data.corpus.files),
        len(states["train"]),
        len(states["valid"]),
        len(states["test"]),
    )

    from ..models.premise_index import DenseRetriever, PremiseIndex, export_retriever

    label = config.model_label
    # The training run lives beside the output until it is done, not in the staging directory
    # (which a killed run loses): a killed run's rerun resumes it like `train retrieval` does.
    work = out.absolute().with_name(f".{out.absolute().name}.training")
    with staged_output_dir(out, force=config.overwrite_output_dir, sources=inputs) as stage:
        train_q = [_query(s) for s in states["train"]]
        valid_q = [_query(s) for s in states["valid"]] or None
        try:
            trainer = _selector_trainer(config, work, pooling, states, resume=True)
            train_summary = trainer.fit_examples(train_q, data.corpus, valid_q)
        except TrainingStateError:  # a leftover of another config or data: start afresh
            trainer = _selector_trainer(config, work, pooling, states, resume=False)
            train_summary = trainer.fit_examples(train_q, data.corpus, valid_q)
        work.rename(stage / "training")
        encoder = trainer.encoder
        encoder.to(config.device)
        index = PremiseIndex.build(
            data.corpus,
            encoder,
            batch_size=config.eval_batch_size,
            show_progress=config.progress_bar,
        )
        retriever = DenseRetriever(encoder, index)
        retriever.batch_size = config.eval_batch_size
        metrics: dict[str, dict[str, float]] = {}
        files: dict[str, Path] = {}
        for name in ("valid", "test"):
            m, records = evaluate_states(
                retriever, states[name], config.ks, batch_size=config.eval_batch_size
            )
            metrics[name] = m
            rel = Path("retrieved_premises") / f"dot_{name}-{label}.json"
            with atomic_write(stage / rel) as fh:
                json.dump(records, fh, ensure_ascii=False)
            files[name] = out / rel
        export_retriever(stage / "retriever", encoder, index)
        seconds = time.perf_counter() - t0
        queries = {k: len(v) for k, v in states.items()}
        result = PremiseSelectorResult(
            output_dir=out,
            retriever_dir=out / "retriever",
            retrieval_files=files,
            metrics=metrics,
            split=split.to_dict(),
            queries=queries,
            train_summary=_relocated(train_summary.to_dict(), str(work), str(out / "training")),
            data_report=data.report.to_dict(),
            seconds=seconds,
            encoder={
                "is_sentence_transformer": is_st,
                "pooling": encoder.pooling,
                "retrieval_mask_mode": config.retrieval_mask_mode,
            },
        )
        for fname, payload in (
            ("metrics.json", metrics),
            ("split.json", split.to_dict()),
            ("data_report.json", {"revision": data.revision, **data.report.to_dict()}),
            ("summary.json", result.to_dict()),
        ):
            (stage / fname).write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
        dump_config(config, stage / "config.yaml")
    return result
