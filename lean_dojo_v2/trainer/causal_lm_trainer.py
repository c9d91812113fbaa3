"""Layer 3 (trainer): :class:`CausalLMTrainer`, the base of the trainers of causal LMs on TRL
(``SFTTrainer``, ``GRPOTrainer``): a :class:`~lean_dojo_v2.trainer.pass_loop.CurriculumTrainer`
that owns everything of a run but its rows, TRL's classes and its result: the construction, the
checks before the run directory is touched, loading (:mod:`.causal_lm_loading`, :mod:`.lora`),
the pass body (read the theorems, build the rows, train with TRL, resume from its checkpoint),
saving, the merged model, the curves and what the run record keeps (``output_dir``'s layout:
``docs/training.md``, "Outputs"). The loop, mixed precision, checkpoints, DeepSpeed/FSDP and
multi-GPU are TRL's and transformers'. No torch at import.
"""

from __future__ import annotations

import logging
import os
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from ..config.loading import config_argument, load_config, replace_config
from ..data.jsonio import loads
from ..data.model import Theorem
from ..errors import ConfigValueError, DatasetNotFoundError
from .causal_lm_config import CausalLMConfig
from .causal_lm_loading import (
    LoadedCausalLM,
    check_start_model,
    gathered_weights,
    load_causal_lm,
    plan_training,
    save_trained,
)
from .configured import ConfigAttribute, ConfiguredTrainer, changed_arguments
from .errors import OutputDirArgumentError, TrainingStateError
from .lora import build_lora, lora_config_values, peft_config_dict
from .pass_loop import CurriculumTrainer, Pass, PassDataset, PassRun, ResultT
from .run_dir import CHECKPOINTS, LOGS, is_main_process, pass_name
from .trl_config import apply_trl_args, build_trl_config, training_arguments

if TYPE_CHECKING:
    from peft import LoraConfig
    from torch import Tensor
    from transformers import PreTrainedTokenizerBase, Trainer, TrainerCallback, TrainingArguments

    from ..database import DynamicDatabase
    from .causal_lm_loading import TrainedModel
    from .lora import LoraArgument
    from .sft_data import PreparationCounts

log = logging.getLogger(__name__)

ConfigT = TypeVar("ConfigT", bound=CausalLMConfig)
MERGED = "merged"


@dataclass
class PassRows:
    """The training rows of one pass: ``count`` of them, which are ``what`` (``examples``,
    ``prompts``), the counts of their preparation (``stats.to_dict()``), the log line that says
    what was kept (``note``) and, by key, the theorems the rows ask about (GRPO's rewards check
    completions against them)."""

    rows: Sequence[Mapping[str, object]]
    what: str
    count: int
    stats: PreparationCounts
    note: str
    theorems: Mapping[str, Theorem] = field(default_factory=dict)


class CausalLMTrainer(
    ConfiguredTrainer[ConfigT], CurriculumTrainer[ResultT], Generic[ConfigT, ResultT]
):
    """Train a causal LM with TRL; a subclass supplies the methods under "what a subclass
    supplies". ``XTrainer(config, **changes)``: the config with the keywords (and the positional
    arguments given other values than their defaults) changed; or the keyword values alone, as
    upstream LeanDojo-v2's constructor takes them (then any config field by keyword).
    ``lora_config``: a ``peft.LoraConfig``, a mapping of its arguments, ``True`` (the config's
    ``lora_*`` fields) or ``None``; ``callbacks``: extra ``transformers.TrainerCallback`` objects.
    Constructing loads nothing; :meth:`train` does."""

    default_model = "smollm2"
    repr_fields: ClassVar[tuple[str, ...]] = ("model_name", "output_dir", "lora")
    config: ConfigT

    def __init__(
        self,
        model_name: str | os.PathLike[str] | ConfigT | None = None,
        *,
        lora_config: LoraArgument = None,
        callbacks: Sequence[TrainerCallback | type[TrainerCallback]] = (),
        arguments: Mapping[str, object],
        **config_values: object,
    ) -> None:
        """``arguments``: the subclass's positional arguments (upstream's), by name."""
        who = type(self).__name__
        given: ConfigT | None = None
        values: dict[str, object]
        if isinstance(model_name, CausalLMConfig):
            given = config_argument(self.config_class, model_name, who=who)
            values = changed_arguments(type(self).__init__, arguments)
        else:
            values = {"model_name": model_name_argument(model_name, who), **arguments}
        if "output_dir" in values:
            values["output_dir"] = output_dir_argument(values["output_dir"], who)
        lora_values, peft_object = lora_config_values(lora_config)
        values.update(lora_values)
        values.update(config_values)
        if given is None:
            self.config = load_config(self.config_class, None, {}, **values)
        else:
            self.config = replace_config(given, **values) if values else given
        self._peft_object = peft_object
        self.callbacks = callbacks_argument(callbacks, who)
        self.model: TrainedModel | None = None
        self.tokenizer: PreTrainedTokenizerBase | None = None
        self.result = None

    # ------------------------------------------------------------------ upstream's attributes

    model_name: ConfigAttribute[str | None] = ConfigAttribute()
    output_dir: ConfigAttribute[str] = ConfigAttribute()
    epochs_per_repo: ConfigAttribute[float] = ConfigAttribute()
    batch_size: ConfigAttribute[int] = ConfigAttribute()
    lr: ConfigAttribute[float] = ConfigAttribute()

    @property
    def lora_config(self) -> LoraConfig | None:
        """The ``peft.LoraConfig`` used (built from the config's ``lora_*`` fields), or None."""
        if not self.config.lora:
            return None
        return self._peft_object if self._peft_object is not None else build_lora(self.config)

    @property
    def model_dir(self) -> Path:
        """Where the trained model (or adapter) is written: ``output_dir`` itself."""
        return Path(self.config.output_dir)

    # ------------------------------------------------------------------ the pass loop's hooks

    def _dataset_files(self, path: Path) -> list[Path]:
        return split_files(path, self.config)

    def _check_inputs(
        self, plan: Sequence[Pass], sources: Sequence[Path], db: DynamicDatabase | None
    ) -> None:
        """Before the run directory is created or written: the model to load is there (and
        takes the lengths asked), a dataset parses and yields examples (its theorems are kept
        for the first pass), and TRL takes the arguments the config makes; the rows the
        dataset can give at most are enough for the run's processes."""
        cfg = self.config
        start = check_start_model(cfg.model_name)
        self._preread: tuple[Path, list[Theorem]] | None = None
        at_most = None
        if db is None and sources:
            path = Path(sources[0])
            theorems = read_theorems(path, cfg)
            at_most = self._check_theorems(theorems, str(path))
            self._preread = (path, theorems)
        self._check_lengths(start)
        self._planned: LoadedCausalLM | None = plan_training(cfg)
        args = self._trl_args(0, Path(cfg.output_dir), loaded=self._planned)
        if at_most is not None:
            self._check_rows(at_most, args, f"{sources[0]} gives at most")

    def _fingerprint_extra(self) -> dict[str, object]:
        if self._peft_object is None:
            return {}
        return {"peft": peft_config_dict(self._peft_object)}

    def _pass_checkpoint(self, out: Path, k: int) -> Path | None:
        return pass_checkpoint(out, k)

    def _model_dir(self, out: Path) -> Path:
        return out

    def _begin(self, run: PassRun) -> None:
        # The model is loaded in the first pass, once its data is known to be usable.
        self._loaded = False
        self._gathered: dict[str, Tensor] | None = None
        self._resume_dir = run.out if run.first > 0 else None
        self._plan_length = len(run.plan)

    def _run_pass(self, k: int, p: Pass, dataset: PassDataset, out: Path) -> dict[str, Any]:
        assert dataset.path is not None
        theorems = self._read_theorems(dataset.path)
        if not self._loaded:  # bad data fails before a (possibly large) model is loaded
            self._check_theorems(theorems, dataset.source)
            self._load(self._resume_dir)
        built = self._build_rows(theorems, dataset.source)
        log.info("pass %d/%d (%s): %s", k + 1, self._plan_length, p.label, built.note)
        trained = self._train_rows(k, built, out)
        head = {"label": p.label, built.what: built.count, "steps": trained.pop("steps")}
        return {**head, "stats": built.stats.to_dict(), **trained}

    def _save_pass(self, out: Path) -> None:
        save_trained(*self._loaded_model(), out, self.config, self._gathered)

    def _summarise(self, run: PassRun) -> ResultT:
        out, passes, cfg = run.out, run.state["passes"], self.config
        merged_dir = None
        if cfg.lora and cfg.merge_lora:
            if not self._loaded:  # resumed after every pass was done
                self._load(out)
            if is_main_process():
                merged_dir = str(self._save_merged(out / MERGED))
        curve = None
        if is_main_process() and any(p["history"] for p in passes):
            curve = self._draw_curves(passes, out)
        common = {
            "steps": sum(p["steps"] for p in passes),
            "seconds": run.seconds(),
            "output_dir": str(out),
            "model_dir": str(out),
            "merged_dir": merged_dir,
            "adapter": cfg.lora,
            "passes": [{k: v for k, v in p.items() if k != "history"} for p in passes],
            "resumed_from": run.resumed_from,
        }
        return self._result(passes, common, str(curve) if curve else None)

    def _record_metrics(self, result: ResultT) -> dict[str, Any]:
        # The per-pass list stays in summary.json; the record keeps the totals.
        return {k: v for k, v in result.to_dict().items() if k != "passes"}

    # ------------------------------------------------------------------ one pass

    def _read_theorems(self, path: Path) -> list[Theorem]:
        """The theorems of the dataset at ``path``: those :meth:`_check_inputs` read, once."""
        pre = getattr(self, "_preread", None)
        if pre is not None and pre[0] == path:
            self._preread = None
            return pre[1]
        return read_theorems(path, self.config)

    def _load(self, from_dir: Path | None) -> None:
        """Load the model and tokenizer (once): the start, or what the last finished pass saved in
        ``from_dir`` (resume)."""
        loaded = load_causal_lm(
            self.config,
            from_dir,
            lora_config=self.lora_config,
            who=type(self).__name__,
            planned=getattr(self, "_planned", None),
        )
        self._loaded_lm = loaded
        self.model, self.tokenizer = loaded.model, loaded.tokenizer
        self._loaded = True

    def _loaded_model(self) -> tuple[TrainedModel, PreTrainedTokenizerBase]:
        """The model and tokenizer :meth:`_load` loaded."""
        if self.model is None or self.tokenizer is None:
            raise TrainingStateError(
                f"{type(self).__name__} has no model loaded yet: call train() first"
            )
        return self.model, self.tokenizer

    def _trl_args(
        self, k: int, out: Path, loaded: LoadedCausalLM | None = None
    ) -> TrainingArguments:
        """TRL's config of pass ``k``: the values every config gives, this trainer's, then the
        config's ``trl_args``, checked by TRL's config class itself."""
        trl_config = self._trl_classes()[0]
        name = f"trl.{trl_config.__name__}"
        args = training_arguments(self.config, k, out, loaded or self._loaded_lm)
        args.update(self._trl_settings())
        args = apply_trl_args(args, trl_config, self.config.trl_args, name)
        return build_trl_config(trl_config, args, name)

    def _train_rows(self, k: int, built: PassRows, out: Path, **kwargs: object) -> dict[str, Any]:
        """Train pass ``k`` on ``built.rows`` with TRL (``kwargs``: more arguments of TRL's
        trainer), from the pass's last checkpoint when there is one; its ``steps`` and
        ``history``."""
        from datasets import Dataset

        args = self._trl_args(k, out)
        self._check_rows(built.count, args, f"pass {k + 1} has")
        model, tokenizer = self._loaded_model()
        trainer = self._trl_classes()[1](
            model=model,
            args=args,
            train_dataset=Dataset.from_list(built.rows),
            processing_class=tokenizer,
            callbacks=self._pass_callbacks(out, k),
            **kwargs,
        )
        if not self.config.progress_bar:  # no log dicts printed in the bar's place either
            from transformers.trainer_callback import PrinterCallback

            trainer.remove_callback(PrinterCallback)
        self._trl_trainer = trainer
        checkpoint = pass_checkpoint(out, k)
        if checkpoint is not None:
            log.info("resuming pass %d from %s", k + 1, checkpoint)
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        self.model = cast("TrainedModel", trainer.model)  # TRL trains the model it was given
        self._gathered = gathered_weights(trainer)  # while every rank is here (ZeRO-3)
        entries = (self._history_entry(e) for e in trainer.state.log_history)
        history = [e for e in entries if e is not None]
        return {"steps": int(trainer.state.global_step), "history": history}

    def _pass_callbacks(self, out: Path, k: int) -> list[TrainerCallback | type[TrainerCallback]]:
        """The non-finite stop, the user's callbacks, and TensorBoard writing to
        ``out/logs/pass-NNN`` when ``report_to`` has it."""
        from .nonfinite_callback import StopOnNonFinite

        callbacks: list[TrainerCallback | type[TrainerCallback]] = [StopOnNonFinite()]
        callbacks += self.callbacks
        if "tensorboard" in self.config.reporters:
            from transformers.integrations import TensorBoardCallback

            tb = TensorBoardCallback()
            tb.logging_dir = str(out / LOGS / pass_name(k))
            callbacks.append(tb)
        return callbacks

    def _save_merged(self, dst: Path) -> Path:
        """Base + adapter merged, as a plain model in ``dst`` (``merge_lora``)."""
        from peft import PeftModel

        model, tokenizer = self._loaded_model()
        assert isinstance(model, PeftModel)  # merge_lora is read only with LoRA
        merged = model.merge_and_unload()
        dst.mkdir(parents=True, exist_ok=True)
        merged.save_pretrained(str(dst))
        tokenizer.save_pretrained(str(dst))
        self.model = merged
        return dst

    # ------------------------------------------------------------------ what a subclass supplies

    @abstractmethod
    def _check_theorems(self, theorems: list[Theorem], source: str) -> int:
        """Raise the trainer's :class:`EmptyDatasetError` when ``theorems`` give no row; the
        most rows they give (counted without a tokenizer)."""

    @abstractmethod
    def _build_rows(self, theorems: list[Theorem], source: str) -> PassRows:
        """The training rows of a pass (the tokenizer is loaded)."""

    def _check_lengths(self, model: str) -> None:
        """Raise :class:`ConfigValueError` when the config's lengths exceed ``model``'s context
        (``model``: :func:`check_start_model`'s answer)."""

    def _check_rows(self, rows: int, args: TrainingArguments, where: str) -> None:
        """Raise :class:`TooFewRowsError` when ``rows`` rows cannot train a step with TRL's config
        ``args`` in this run's processes (``where``: the message's start, "pass 1 has")."""

    @abstractmethod
    def _trl_classes(self) -> tuple[type[TrainingArguments], Callable[..., Trainer]]:
        """TRL's config class and trainer class (or a subclass), imported here."""

    @abstractmethod
    def _trl_settings(self) -> dict[str, Any]:
        """This trainer's values of TRL's config, over :func:`training_arguments`'."""

    @abstractmethod
    def _history_entry(self, entry: Mapping[str, Any]) -> dict[str, Any] | None:
        """What the history keeps of one of TRL's logs (None: not a step's log)."""

    @abstractmethod
    def _draw_curves(self, passes: list[dict[str, Any]], out: Path) -> Path | None:
        """Draw the run's curves into a PNG file in ``out``; the file (None: not drawn)."""

    @abstractmethod
    def _result(
        self, passes: list[dict[str, Any]], common: dict[str, Any], curve: str | None
    ) -> ResultT:
        """The run's result from ``training_state.json``'s ``passes`` and ``common`` (steps,
        seconds, output_dir, model_dir, merged_dir, adapter, passes, resumed_from)."""


# ---------------------------------------------------------------------- constructor arguments


def output_dir_argument(output_dir: object, who: str) -> str:
    """A trainer constructor's ``output_dir`` as text: :class:`OutputDirArgumentError` for None,
    an empty path, or something that is not a path."""
    text = os.fspath(output_dir) if isinstance(output_dir, str | os.PathLike) else None
    if not isinstance(text, str) or not text.strip():
        got = "None" if output_dir is None else f"{type(output_dir).__name__} {output_dir!r}"
        raise OutputDirArgumentError(
            f"{who} needs output_dir, a directory path (str or pathlib.Path), got {got}: it is "
            f"where the model, checkpoints and logs go; pass output_dir='outputs-...'"
        )
    return text


def model_name_argument(model_name: object, who: str) -> str | None:
    """A trainer constructor's ``model_name`` as text (a ``pathlib.Path`` is a local path);
    :class:`ConfigValueError` for anything else but None."""
    text = os.fspath(model_name) if isinstance(model_name, str | os.PathLike) else model_name
    if text is None or isinstance(text, str):
        return text
    raise ConfigValueError(
        f"{who}'s model_name must be a Hugging Face id or a local path (str or pathlib.Path), "
        f"or None for the bundled default; got {type(model_name).__name__} {model_name!r}"
    )


def callbacks_argument(
    callbacks: object, who: str
) -> list[TrainerCallback | type[TrainerCallback]]:
    """A trainer's ``callbacks`` as a list; :class:`ConfigValueError` unless it is a sequence of
    ``transformers.TrainerCallback`` objects or classes (checked by their ``on_*`` hooks:
    transformers is not imported to build a trainer)."""
    if isinstance(callbacks, str | bytes | Mapping) or not isinstance(callbacks, Iterable):
        raise ConfigValueError(
            f"{who}'s callbacks must be a list of transformers.TrainerCallback objects, got "
            f"{type(callbacks).__name__} {callbacks!r}"
        )
    items = list(callbacks)
    for item in items:
        hooks = [n for n in dir(item) if n.startswith("on_") and callable(getattr(item, n, None))]
        if not hooks:
            raise ConfigValueError(
                f"{who}'s callbacks must be transformers.TrainerCallback objects (with on_* "
                f"hooks such as on_step_end), got {type(item).__name__} {item!r}"
            )
    return items


# ---------------------------------------------------------------------- data and checkpoints


def pass_checkpoint(out: Path, k: int) -> Path | None:
    """The last whole TRL checkpoint of pass ``k`` in ``out`` (what the pass resumes from), or
    None. A checkpoint is whole once its ``trainer_state.json`` reads back: transformers writes
    that file last, so a checkpoint cut short (a full disk, a kill) is passed over for the one
    before it instead of failing the resume."""
    folder = out / CHECKPOINTS / pass_name(k)
    if not folder.is_dir():
        return None
    numbered = []
    for entry in folder.iterdir():
        prefix, _, step = entry.name.partition("-")
        if prefix == "checkpoint" and step.isdigit() and entry.is_dir():
            numbered.append((int(step), entry))
    for _, entry in sorted(numbered, reverse=True):
        try:
            loads((entry / "trainer_state.json").read_bytes())
        except (OSError, ValueError):
            log.warning("passing over %s: it was cut short (no readable trainer_state.json)", entry)
            continue
        return entry
    return None


def split_files(path: Path, cfg: CausalLMConfig) -> list[Path]:
    """The split files to read: ``path`` itself if it is a file, else ``strategy/split.json`` for
    each configured split (a missing one is an error naming what is there)."""
    if path.is_file():
        return [path]
    if not path.exists():
        raise DatasetNotFoundError(
            f"no dataset at {path}: pass a LeanDojo dataset directory (with random/train.json) "
            "or a split file"
        )
    from ..data.dataset import DatasetDir

    d = DatasetDir(path, partial=True)
    files = [d.split_path(cfg.strategy, s) for s in cfg.splits]
    missing = [f for f in files if not f.is_file()]
    if missing:
        there = sorted(str(p.relative_to(path)) for p in path.glob("*/*.json"))
        raise DatasetNotFoundError(
            f"dataset {path} has no {', '.join(str(m.relative_to(path)) for m in missing)}; "
            f"it has: {', '.join(there) or 'no split files'} (set strategy/splits accordingly)"
        )
    return files


def read_theorems(path: Path, cfg: CausalLMConfig) -> list[Theorem]:
    """Every theorem of the configured split files of the dataset at ``path``."""
    from ..data.dataset import load_theorems

    theorems: list[Theorem] = []
    for f in split_files(path, cfg):
        theorems.extend(load_theorems(f))
    return theorems


__all__ = ["MERGED", "CausalLMTrainer", "PassRows", "pass_checkpoint", "read_theorems"]
