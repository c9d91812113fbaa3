"""Layer 4 (agent): :class:`LeanAgent`, lifelong premise retrieval and proving with it.

``LeanAgent()`` trains the premise retriever (:class:`~lean_dojo_v2.trainer.RetrievalTrainer`)
over the database's curriculum, one repository after another, with EWC guarding the earlier ones
(the trainer's loop). After each new repository it re-evaluates every earlier one (R@10 on its
held-out split) and reports *forgetting*: R@10 now minus R@10 right after that repository was
learnt. ``prove()`` then searches with a :class:`~lean_dojo_v2.prover.RetrievalProver` (the tactic
generator given premises retrieved by the trained retriever, accessible at each theorem).

This is the one LeanAgent loop: ``python -m lean_dojo_v2.lean_agent`` parses its options into a
``LeanAgent`` and calls these methods.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .arguments import keywords, path_argument, text_argument, whole_number
from .base import BaseAgent
from .errors import AgentConfigError
from .prover_config import agent_kwargs_from_prover_config
from .results import LifelongResult

if TYPE_CHECKING:
    from ..models.retrieval import Retriever
    from ..prover.search_types import GeneratorFactory
    from ..trainer.pass_loop import Pass, PassDataset
    from ..trainer.retrieval_config import TrainingConfig
    from ..trainer.retrieval_trainer import RetrievalTrainer
    from .prover_config import ProverConfig

# What the agent passes to RetrievalProver itself, and what to do instead.
_SET_BY_LEAN_AGENT = {
    "ckpt_path": "pass generator= to the agent",
    "gen_ckpt_path": "pass generator= to the agent",
    "model": "pass generator= to the agent",
    "retriever": "train() exports the retriever that prove() uses",
    "ret_ckpt_path": "train() exports the retriever that prove() uses",
    "indexed_corpus_path": "train() exports the retriever that prove() uses",
    "num_premises": "pass num_premises= to the agent",
    "device": "pass device= to the agent",
}


class LeanAgent(BaseAgent):
    """LeanAgent (see the module docstring).

    ``training_config``: the retriever's ``TrainingConfig`` (``lean_dojo_v2.lean_agent.config``;
    default: its defaults, the bundled MiniLM encoder); ``prover_config``: upstream LeanAgent's
    ``ProverConfig`` (mapped onto ``search_config``); ``generator``: the tactic generator's model
    (default: the bundled SmolLM2; an SFT output directory, a hub id); ``num_premises``: premises
    per prompt; ``retriever_dir``: where :meth:`train` exports the retriever (default
    ``work_dir/retriever``). Other keywords: :class:`BaseAgent`'s."""

    trainer: RetrievalTrainer

    def __init__(
        self,
        database_path: str | os.PathLike[str] | None = None,
        training_config: TrainingConfig | None = None,
        prover_config: ProverConfig | None = None,
        *,
        generator: str | os.PathLike[str] | None = None,
        num_premises: int = 5,
        device: str = "auto",
        prover_kwargs: dict[str, Any] | None = None,
        retriever_dir: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> None:
        from ..prover.hf_prover import HFProver, PromptedGenerator
        from ..prover.retrieval_prover import RetrievalProver
        from ..trainer.retrieval_config import TrainingConfig
        from ..trainer.retrieval_trainer import RetrievalTrainer

        if training_config is not None and not isinstance(training_config, TrainingConfig):
            raise AgentConfigError(
                f"training_config must be a TrainingConfig, got {type(training_config).__name__}"
            )
        path_argument(
            "generator", generator, optional=True, example="an SFT output directory or a hub id"
        )
        num_premises = whole_number("num_premises", num_premises, minimum=0)
        export_dir = path_argument("retriever_dir", retriever_dir, optional=True)
        device = text_argument("device", device, example="'cpu'")
        prover_kwargs = keywords(
            "prover_kwargs",
            prover_kwargs,
            [RetrievalProver, HFProver, PromptedGenerator],
            set_by_agent=_SET_BY_LEAN_AGENT,
        )
        kwargs = agent_kwargs_from_prover_config(prover_config, kwargs)
        super().__init__(database_path, **kwargs)
        self.training_config = training_config or TrainingConfig()
        self.prover_config = prover_config
        self.trainer = RetrievalTrainer(self.training_config)
        # A hub id stays as given (Path would turn "org/name" into a path on Windows).
        self.generator = None if generator is None else os.fspath(generator)
        self.num_premises = num_premises
        self.device = device
        self.prover_kwargs = prover_kwargs
        self._export_dir = export_dir
        self._trained_on: Path | None = None
        self.retriever_dir: Path | None = None
        self.lifelong: LifelongResult | None = None

    def _get_build_deps(self) -> bool:
        return True  # retrieval needs the whole premise corpus, dependencies included

    def train(self, data_path: str | os.PathLike[str] | None = None) -> LifelongResult:
        """Train over the curriculum, re-evaluating every earlier repository after each new one;
        export the retriever (``retriever_dir``) for :meth:`prove`. ``data_path``: one LeanDojo
        dataset instead, trained on as it is (one pass on its own splits, no database). The
        generator is looked up first: a missing one is refused before any training."""
        dataset = path_argument("data_path", data_path, optional=True)
        if dataset is None:
            self._require_repositories("train()")
        self.check_generator()
        tracker = _ForgettingTracker(self.trainer)
        self.trainer.add_pass_listener(tracker)
        try:
            if dataset is None:
                training = self.trainer.train(repos=self.repos, database=self.database)
            else:
                training = self.trainer.train(data_path=dataset)
        finally:
            self.trainer.remove_pass_listener(tracker)
        self.trained = True
        self.prover = None  # the next prove() uses the trained retriever
        self._trained_on = dataset
        self.retriever_dir = self.trainer.export(
            self._export_dir or self.work_dir / "retriever",
            force=self.training_config.overwrite_output_dir,
        )
        self.lifelong = LifelongResult(
            repositories=tracker.labels,
            training=training,
            r10=tracker.r10,
            eval_splits=tracker.splits,
            forgetting=tracker.forgetting(),
            retriever_dir=str(self.retriever_dir),
        )
        self._say(_lifelong_summary(self.lifelong))
        return self.lifelong

    def held_out_datasets(self) -> list[Path]:
        """The datasets whose held-out splits :meth:`evaluate` reads: after :meth:`train`, its
        exports (one per pass) or the dataset it trained on; before, the agent's own export."""
        if self.lifelong is None:
            self._require_repositories("evaluate()")
            return [self._targets("test")[2]]
        if self._trained_on is not None:
            return [self._trained_on]
        return sorted((Path(self.trainer.config.output_dir) / "data").glob("pass-*"))

    def evaluate(self) -> dict[str, Any]:
        """R@1, R@10, MRR, FullRecall@10 of the current retriever on the held-out split of each
        of :meth:`held_out_datasets` (test, else val), or ``{"error": ...}`` for a dataset whose
        held-out splits use no premise."""
        return {str(d): _metrics(self.trainer, d) for d in self.held_out_datasets()}

    def _check_ready(self) -> None:
        self.check_generator()

    def check_generator(self) -> None:
        """The generator can be found (a local model, or a hub id in the local cache when
        offline); a ``ModelNotFoundError`` otherwise. The bundled default needs no look-up."""
        if self.generator is None:
            return
        from ..models.loading import DEFAULT_ALIASES, resolve_model_path

        if self.generator.strip().lower() not in DEFAULT_ALIASES:
            resolve_model_path(self.generator)

    def _setup_prover(self) -> None:
        self.prover = self._prover_factory()()

    def _prover_factory(self) -> GeneratorFactory:
        """``RetrievalProver(generator, retriever, ...)`` as a picklable factory: the exported
        retriever's directory after :meth:`train`, else BM25 over the agent's export of its
        repositories (built here, pickled to the workers)."""
        import functools

        from ..prover.retrieval_prover import RetrievalProver

        retriever: str | Retriever | None = (
            str(self.retriever_dir) if self.retriever_dir is not None else None
        )
        if retriever is None:
            from ..data.dataset import DatasetDir
            from ..models.bm25 import BM25Retriever

            self._require_repositories("proving before train()")
            _, _, data_dir = self._targets("test")
            retriever = BM25Retriever(DatasetDir(data_dir).corpus())
        return functools.partial(
            RetrievalProver,
            os.fspath(self.generator) if self.generator is not None else None,
            retriever=retriever,
            num_premises=self.num_premises,
            device=self.device,
            **self.prover_kwargs,
        )

    def _model_label(self) -> str | None:
        gen = os.fspath(self.generator) if self.generator is not None else "smollm2"
        ret = str(self.retriever_dir) if self.retriever_dir is not None else "bm25 (untrained)"
        return f"{gen} + retriever {ret}"

    def _prove_notes(self) -> list[str]:
        if self.retriever_dir is not None:
            return []
        note = "not trained yet: premises are retrieved with BM25 (call train() for the trained retriever)"
        self._say(note)
        return [note]


def _metrics(trainer: RetrievalTrainer, data_dir: Path) -> dict[str, Any]:
    """The retriever's metrics on ``data_dir``'s held-out split (test, else val), or why there
    are none."""
    split, metrics = _evaluate(trainer, data_dir)
    if split is None:
        return {"error": f"neither the test nor the val split of {data_dir} uses a premise"}
    return metrics


def _evaluate(
    trainer: RetrievalTrainer, data_dir: Path, split: str | None = None
) -> tuple[str | None, dict[str, Any]]:
    """``(split, metrics)``: the retriever on ``split`` of ``data_dir`` (default: test, else val
    when the test split has no premise to retrieve)."""
    from ..errors import DatasetNotFoundError, EmptyDatasetError

    for s in [split] if split else ["test", "val"]:
        try:
            return s, trainer.evaluate(data_path=data_dir, split=s)
        except (EmptyDatasetError, DatasetNotFoundError):
            continue
    return None, {}


class _ForgettingTracker:
    """A pass listener: after pass ``k``, R@10 of every repository ``j <= k``."""

    def __init__(self, trainer: RetrievalTrainer) -> None:
        self.trainer = trainer
        self.labels: list[str] = []
        self.dirs: list[Path] = []
        self.splits: list[str | None] = []
        self.r10: list[list[float | None]] = []

    def __call__(self, k: int, p: Pass, dataset: PassDataset, info: dict[str, Any]) -> None:
        if dataset.path is None:
            return
        self.labels.append(p.label)
        self.dirs.append(Path(dataset.path))
        self.splits.append(None)
        row: list[float | None] = []
        for j, d in enumerate(self.dirs):
            split, metrics = _evaluate(self.trainer, d, self.splits[j])
            self.splits[j] = split
            row.append(metrics.get("R@10") if metrics else None)
        self.r10.append(row)

    def forgetting(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for j, label in enumerate(self.labels):
            first = self.r10[j][j] if j < len(self.r10) else None
            last = self.r10[-1][j] if self.r10 and j < len(self.r10[-1]) else None
            out[label] = None if first is None or last is None else round(last - first, 6)
        return out


def _lifelong_summary(result: LifelongResult) -> str:
    lines = [f"LeanAgent: trained the retriever over {len(result.repositories)} repositories"]
    for j, label in enumerate(result.repositories):
        first = result.r10[j][j] if j < len(result.r10) else None
        last = result.r10[-1][j] if result.r10 else None
        change = result.forgetting.get(label)
        lines.append(
            f"  {label}: R@10 {_fmt(first)} when learnt, {_fmt(last)} at the end "
            f"(forgetting {_fmt(change)}; {result.eval_splits[j] or 'no'} split)"
        )
    return "\n".join(lines)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


__all__ = ["LeanAgent"]
