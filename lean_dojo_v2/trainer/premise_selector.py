"""LeanHammer's premise selector on our retrieval trainer: ntp-toolkit data in, retrievals and an
exported retriever out (``lean-dojo-v2 train premise-selector``; ``docs/premise_selector.md``).
The run reads the data (LeanHammer's filters applied), splits its modules (:func:`split_states`),
trains :class:`MaskedRetrievalTrainer` on the train states (``fit_examples``), retrieves among the
premises accessible to each valid and test state (:func:`evaluate_states`) and writes it all to a
staging directory swapped in at the end; the training run itself lives beside the output until
then, so a killed run's rerun resumes it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ..config.loading import replace_config
from ..errors import ConfigValueError, EmptyDatasetError
from .configured import ConfiguredTrainer
from .errors import TrainingStateError
from .premise_selector_config import RETRIEVAL_MASK_MODES, PremiseSelectorConfig
from .retrieval_config import TrainingConfig
from .retrieval_trainer import RetrievalTrainer
from .run_dir import check_run_outputs

if TYPE_CHECKING:
    import torch
    from torch.utils.data import DataLoader

    from ..data.corpus import Corpus
    from ..data.model import Pos, Premise
    from ..data.ntp_toolkit import ModuleSplit, NtpState, NtpToolkitData
    from ..models.retrieval import PremiseEncoder, Retriever
    from ..models.retrieval_eval import RetrievalQuery
    from .retrieval_data import RetrievalBatch, RetrievalExample

    DeclarationKey: TypeAlias = tuple[str, str, Pos | None]
    """A training example's (state text, module, position)."""
    BatchItem: TypeAlias = tuple[RetrievalExample, list[Premise]]
    """One item of the retrieval dataset: an example and its sampled negatives."""

logger = logging.getLogger(__name__)


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
            "train": json.loads(json.dumps(self.train_summary, default=str)),
            "data": self.data_report,
            "encoder": self.encoder,
            "seconds": round(self.seconds, 3),
        }


def _relocated(value: object, old: str, new: str) -> object:
    """``value`` with paths under the staging directory ``old`` rewritten to ``new`` (where they
    are once the output is swapped in)."""
    if isinstance(value, str):
        return new + value[len(old) :] if value.startswith(old) else value
    if isinstance(value, dict):
        return {k: _relocated(v, old, new) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_relocated(v, old, new) for v in value]
    return value


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


def retrieval_record(state: NtpState, hits: Sequence[tuple[Premise, float]]) -> dict[str, Any]:
    """One entry of a ``dot_*.json`` file (LeanHammer's layout)."""
    return {
        "state_name": state.state_name,
        "decl_name": state.decl_name,
        "module": state.module,
        "idx_in_module": state.index,
        "premises": [{"corpus_id": p.full_name, "score": float(s)} for p, s in hits],
    }


# --------------------------------------------------------------------------- LeanHammer's options


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
    """``(is_sentence_transformer, pooling)`` for ``config.model_name``: how
    :func:`~lean_dojo_v2.models.retrieval.load_encoder` is called (``pooling=None``: the folder's
    own). Raises :class:`ConfigValueError` for contradictory options."""
    from ..models.retrieval import _resolve_encoder, sentence_transformers_pooling

    folder = Path(_resolve_encoder(config.model_name))
    declared = sentence_transformers_pooling(folder) if folder.is_dir() else None
    shown = config.model_name or "the bundled all-MiniLM-L6-v2"
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
    items: Sequence[BatchItem],
    candidates: Sequence[str],
    mode: str,
    corpus: Corpus,
    decls: Mapping[DeclarationKey, frozenset[str]],
) -> torch.Tensor:
    """``[B, M]`` bool: ``True`` where candidate ``j`` is taken out of row ``i``'s loss under
    ``retrieval_mask_mode`` ``mode`` (see :class:`PremiseSelectorConfig`)."""
    import torch

    def masked(example: RetrievalExample, name: str) -> bool:
        if mode == "none":
            return False
        own = decls.get((example.query, example.file_path, example.pos), frozenset())
        if name in example.positives or name in own:
            return True
        if mode == "no_positive":
            return False
        # only_negative: a true negative is accessible at the state or in an unrelated module
        p = corpus.get_premise(name)
        if p is None:
            return True
        if p.path == example.file_path:
            return example.pos is not None and not p.start < example.pos
        return example.file_path in corpus.imports_of(p.path)

    rows = [[masked(example, name) for name in candidates] for example, _ in items]
    return torch.tensor(rows, dtype=torch.bool).reshape(len(items), len(candidates))


class MaskModeCollator:
    """Wraps the trainer's collate function: same batch, ``positive_mask`` recomputed for
    ``retrieval_mask_mode`` (the loss drops masked candidates, never a row's own target)."""

    def __init__(
        self,
        inner: Callable[[list[BatchItem]], RetrievalBatch],
        mode: str,
        corpus: Corpus,
        decls: Mapping[DeclarationKey, frozenset[str]],
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

    def __call__(self, items: list[BatchItem]) -> RetrievalBatch:
        batch = self.inner(items)
        batch.positive_mask = _false_negative_mask(
            items, batch.candidate_names, self.mode, self.corpus, self.decls
        )
        return batch


def declarations_of(states: Sequence[NtpState]) -> dict[DeclarationKey, frozenset[str]]:
    """``(state text, module, position) -> declaration names``: what a training example (which
    carries no declaration) is keyed by for the ``no_positive`` / ``only_negative`` masks."""
    out: dict[DeclarationKey, set[str]] = {}
    for s in states:
        out.setdefault((s.state, s.module, s.pos), set()).add(s.decl_name)
    return {k: frozenset(v) for k, v in out.items()}


class MaskedRetrievalTrainer(RetrievalTrainer):
    """:class:`~lean_dojo_v2.trainer.retrieval_trainer.RetrievalTrainer` with LeanHammer's
    options: the encoder loaded with the chosen pooling, the training batches masked per
    ``retrieval_mask_mode``."""

    def __init__(
        self,
        config: TrainingConfig,
        *,
        pooling: str | None,
        mask_mode: str,
        decls: Mapping[DeclarationKey, frozenset[str]],
    ) -> None:
        super().__init__(config)
        self.pooling = pooling
        self.mask_mode = mask_mode
        self.decls = decls

    def _load_encoder(self, from_dir: Path | None) -> PremiseEncoder:
        if from_dir is not None:  # a saved encoder remembers its pooling
            return super()._load_encoder(from_dir)
        from ..models.retrieval import load_encoder

        return load_encoder(
            self.config.model_name,
            device="cpu",
            max_length=self.config.max_seq_len,
            pooling=self.pooling,
        )

    def _loader(
        self, train: Sequence[RetrievalQuery], corpus: Corpus, *, shuffle: bool = True
    ) -> DataLoader[BatchItem]:
        loader = super()._loader(train, corpus, shuffle=shuffle)
        loader.collate_fn = MaskModeCollator(loader.collate_fn, self.mask_mode, corpus, self.decls)
        return loader


def premise_selector_trainer_class() -> type[MaskedRetrievalTrainer]:
    """The retrieval trainer the premise selector trains with, :class:`MaskedRetrievalTrainer`."""
    return MaskedRetrievalTrainer


# --------------------------------------------------------------------------- the run


class PremiseSelectorTrainer(ConfiguredTrainer[PremiseSelectorConfig]):
    """LeanHammer's premise selector: ``PremiseSelectorTrainer(config).train()`` reads the
    ntp-toolkit data, splits it, trains, evaluates, writes the static retrievals and exports the
    retriever (the module docstring); ``PremiseSelectorTrainer.from_config("ps.yaml")``. One run
    per ``output_dir`` at a time (:func:`~lean_dojo_v2.data.run_lock.lock_output_dir`)."""

    config_class = PremiseSelectorConfig

    def __init__(self, config: PremiseSelectorConfig | None = None) -> None:
        if config is not None and not isinstance(config, PremiseSelectorConfig):
            raise ConfigValueError(
                f"PremiseSelectorTrainer takes a PremiseSelectorConfig, got "
                f"{type(config).__name__}; build one with PremiseSelectorConfig(**values) or "
                "PremiseSelectorTrainer.from_config(PATH)"
            )
        self.config = config or PremiseSelectorConfig()
        self.result: PremiseSelectorResult | None = None

    def train(self) -> PremiseSelectorResult:
        """Run the premise selector; the result is also ``output_dir/summary.json``."""
        from ..data.run_lock import lock_output_dir

        with lock_output_dir(self.config.output_dir):
            result = _train_locked(self.config)
        self.result = result
        return result


def train_premise_selector(config: PremiseSelectorConfig) -> PremiseSelectorResult:
    """``PremiseSelectorTrainer(config).train()``."""
    return PremiseSelectorTrainer(config).train()


def _selector_trainer(
    config: PremiseSelectorConfig,
    work: Path,
    pooling: str | None,
    states: Mapping[str, Sequence[NtpState]],
    *,
    resume: bool,
) -> MaskedRetrievalTrainer:
    cfg = _training_config(config, work)
    cfg.resume, cfg.overwrite_output_dir = resume, not resume
    return MaskedRetrievalTrainer(
        cfg,
        pooling=pooling,
        mask_mode=config.retrieval_mask_mode,
        decls=declarations_of(states["train"]),
    )


def _training_config(config: PremiseSelectorConfig, output_dir: Path) -> PremiseSelectorConfig:
    """The config of the training run, which lives in ``output_dir`` (beside the output until
    the output is swapped in)."""
    return replace_config(config, output_dir=str(output_dir))


def evaluate_states(
    retriever: Retriever, states: Sequence[NtpState], ks: Sequence[int], *, batch_size: int = 64
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


def _train_locked(config: PremiseSelectorConfig) -> PremiseSelectorResult:
    from ..config.loading import dump_config
    from ..data.jsonio import atomic_write
    from ..data.ntp_toolkit import read_ntp_toolkit, split_modules
    from ..data.output_dir import staged_output_dir

    t0 = time.perf_counter()
    if not config.data_dir:
        raise ConfigValueError(
            "data_dir is required: the ntp-toolkit output directory (--data-dir DIR)"
        )
    out = Path(config.output_dir)
    check_qlora(config)
    # Refuse a foreign output before reading or training anything.
    inputs = check_run_outputs(
        out, config.model_name, [Path(config.data_dir)], force=config.overwrite_output_dir
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
    sizes = (len(data.corpus), len(data.corpus.files), *(len(v) for v in states.values()))
    logger.info(
        "premise selector: %d premises in %d modules; states train/valid/test = %d/%d/%d", *sizes
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
        encoder, batch = trainer.encoder, config.eval_batch_size
        encoder.to(config.device)
        shown = config.progress_bar
        index = PremiseIndex.build(data.corpus, encoder, batch_size=batch, show_progress=shown)
        retriever = DenseRetriever(encoder, index)
        retriever.batch_size = batch
        metrics: dict[str, dict[str, float]] = {}
        files: dict[str, Path] = {}
        for name in ("valid", "test"):
            m, records = evaluate_states(retriever, states[name], config.ks, batch_size=batch)
            metrics[name] = m
            rel = Path("retrieved_premises") / f"dot_{name}-{label}.json"
            with atomic_write(stage / rel) as fh:
                json.dump(records, fh, ensure_ascii=False)
            files[name] = out / rel
        export_retriever(stage / "retriever", encoder, index)
        seconds = time.perf_counter() - t0
        queries = {k: len(v) for k, v in states.items()}
        relocated = _relocated(train_summary.to_dict(), str(work), str(out / "training"))
        assert isinstance(relocated, dict)  # a dict stays a dict
        result = PremiseSelectorResult(
            output_dir=out,
            retriever_dir=out / "retriever",
            retrieval_files=files,
            metrics=metrics,
            split=split.to_dict(),
            queries=queries,
            train_summary=relocated,
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


__all__ = [
    "MaskedRetrievalTrainer",
    "PremiseSelectorResult",
    "PremiseSelectorTrainer",
    "declarations_of",
    "encoder_pooling",
    "evaluate_states",
    "split_states",
    "train_premise_selector",
]
