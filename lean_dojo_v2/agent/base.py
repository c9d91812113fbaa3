"""Layer 4 (agent): :class:`BaseAgent`, upstream LeanDojo-v2's agent loop wired onto this
library's pieces.

An agent ties the layers below together; it holds no algorithm of its own::

    agent.setup_github_repository(url, commit)   # trace (needs git + Lean) → DynamicDatabase
    agent.setup_traced_dataset(path)             # or: an already traced LeanDojo dataset (no Lean)
    agent.train()                                # the trainer, over the database's curriculum
    report = agent.prove()                       # search → re-check → record → write back

What each step uses: tracing :func:`lean_dojo_v2.lean_dojo.trace`; the database
:class:`~lean_dojo_v2.database.DynamicDatabase`; training the subclass's trainer
(``train(repos, database)``); proving the proving pipeline
(:class:`~lean_dojo_v2.prover.pipeline.ProveRun`), one job per repository in the proof
environment chosen by :mod:`.environment`: search, every proof re-checked, recorded, the
placeholder triage, write-back into a working copy. The agent chooses the targets and builds its
prover; the pipeline does the rest.

A subclass says whether tracing needs the dependencies (:meth:`_get_build_deps`) and builds its
prover (:meth:`_setup_prover`: sets ``self.prover``, a ``TacticGenerator``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self

from ..data.model import Theorem
from ..prover.outcome import TheoremOutcome
from .arguments import flag, keywords, one_of, path_argument, text_argument, whole_number
from .errors import AgentConfigError, NoRepositoryError
from .results import ProveReport

if TYPE_CHECKING:
    from ..data.model import Repository
    from ..database import DynamicDatabase
    from ..database.records import RepositoryInfo
    from ..lean_dojo.traced_repo import TracedRepo
    from ..models.generator import TacticGenerator
    from ..prover.pipeline import ProofJob, ProveRun
    from ..prover.search_config import SearchConfig
    from ..prover.search_types import GeneratorFactory
    from .environment import EnvChoice

logger = logging.getLogger(__name__)


class AgentTrainer(Protocol):
    """What an agent trains: ``train(repos, database)`` over the database's curriculum of the
    agent's repositories (``SFTTrainer``, ``GRPOTrainer``, ``RetrievalTrainer``)."""

    def train(self, repos: list[RepositoryInfo], database: DynamicDatabase) -> object: ...


SPLITS = ("test", "val", "train")
DOCTOR_HINT = (
    "run `lean-dojo-v2 doctor` to see what is missing and how to install it, or start from an "
    "already traced dataset instead: agent.setup_traced_dataset(PATH) (e.g. "
    "lean_dojo_v2.data.sample_dataset_path(), the bundled sample), which needs neither git nor Lean"
)


@dataclass
class AgentRepository:
    """A repository an agent works on: its database record, the traced dataset it came from
    (None when it was traced here) and its checkout (for Pantograph and write-back; None when
    there is none)."""

    info: RepositoryInfo
    dataset_dir: Path | None = None
    source_dir: Path | None = None

    @property
    def url(self) -> str:
        return self.info.url

    @property
    def commit(self) -> str:
        return self.info.commit

    @property
    def label(self) -> str:
        return f"{self.info.url}@{self.info.commit[:12]}"


@dataclass(frozen=True)
class ProofTarget:
    """A theorem to prove and the repository it belongs to."""

    theorem: Theorem
    repository: AgentRepository


class BaseAgent(ABC):
    """Upstream LeanDojo-v2's agent (see the module docstring).

    - ``database_path``: the :class:`~lean_dojo_v2.database.DynamicDatabase` file (default
      ``$RAID_DIR/dynamic_database.sqlite``); opened when the first repository is added, never
      before, so a call refused on bad input leaves nothing behind.
    - ``search_config``: a :class:`~lean_dojo_v2.prover.SearchConfig` (default: its defaults,
      or upstream LeanAgent's ``prover_config`` of a subclass mapped onto it).
    - ``backend``: ``"auto"`` (Pantograph when a REPL and a built project are found, else replay
      with a notice), ``"pantograph"`` or ``"replay"``.
    - ``work_dir``: where the agent writes its exports (default ``$RAID_DIR/agents/<class>``).
    - ``quiet``: do not print notices and summaries (they are in the results either way).
    - ``workers``: provers searching in parallel, each a worker process with its own model and
      environment (:func:`~lean_dojo_v2.prover.parallel.prove_theorems`, backend ``process``;
      upstream's ``ProverConfig.num_workers``). 1 (the default) proves in this process. An agent
      whose prover cannot be rebuilt in a worker (:meth:`_prover_factory` is None) proves in this
      process and says so.
    """

    trainer: AgentTrainer | None = None
    prover: TacticGenerator | None = None

    def __new__(cls, *args: object, **kwargs: object) -> Self:
        # Before any argument is checked: a script's bad input is one line, not a traceback.
        from . import excepthook

        excepthook.install()
        return super().__new__(cls)

    def __init__(
        self,
        database_path: str | os.PathLike[str] | None = None,
        *,
        search_config: SearchConfig | None = None,
        backend: str = "auto",
        work_dir: str | os.PathLike[str] | None = None,
        quiet: bool = False,
        progress: bool = True,
        workers: int = 1,
    ) -> None:
        from ..prover.search_config import SearchConfig

        if search_config is not None and not isinstance(search_config, SearchConfig):
            raise AgentConfigError(
                f"search_config must be a SearchConfig, got {type(search_config).__name__}"
            )
        one_of("backend", backend, ("auto", "pantograph", "replay"))
        database = path_argument(
            "database_path", database_path, optional=True, example="'raid/agent.sqlite'"
        )
        self.workers = whole_number("workers", workers)
        self.database_path = _database_path(database)
        self.search_config = search_config or SearchConfig()
        self.backend = backend
        self._work_dir = path_argument("work_dir", work_dir, optional=True)
        self.quiet = flag("quiet", quiet)
        self.progress = flag("progress", progress)
        self.repositories: list[AgentRepository] = []
        self._database: DynamicDatabase | None = None
        self.trained = False
        self.last_report: ProveReport | None = None

    # ------------------------------------------------------------------ upstream's attributes

    @property
    def repos(self) -> list[RepositoryInfo]:
        """The repositories added so far (database records with ``url`` and ``commit``)."""
        return [r.info for r in self.repositories]

    @property
    def database(self) -> DynamicDatabase:
        """The :class:`~lean_dojo_v2.database.DynamicDatabase` (opened, and created if needed,
        on first use)."""
        if self._database is None:
            from ..database import DynamicDatabase

            self.database_path.parent.mkdir(parents=True, exist_ok=True)
            self._database = DynamicDatabase(self.database_path)
        return self._database

    @property
    def work_dir(self) -> Path:
        if self._work_dir is None:
            from ..config import get_settings

            self._work_dir = get_settings().raid_dir / "agents" / type(self).__name__.lower()
        return self._work_dir

    def close(self) -> None:
        """Close the database (the agent opens it again if used later)."""
        if self._database is not None:
            self._database.close()
            self._database = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ subclass hooks

    @abstractmethod
    def _get_build_deps(self) -> bool:
        """Whether tracing must also trace the dependencies (a complete premise corpus)."""

    @abstractmethod
    def _setup_prover(self) -> None:
        """Set ``self.prover`` (a ``TacticGenerator``; a ``BaseProver`` for whole proofs)."""

    def _prover_factory(self) -> GeneratorFactory | None:
        """A picklable callable without arguments that builds this agent's prover in a worker
        process (e.g. :class:`~lean_dojo_v2.prover.parallel.HFProverSpec`), for ``workers`` > 1;
        None (the default): the prover is built once, here, and proves inline."""
        return None

    def _model_label(self) -> str | None:
        """What generated the tactics, for reports (a model name or path)."""
        return getattr(self.prover, "model_name", None) or type(self.prover).__name__

    # ------------------------------------------------------------------ repositories

    def setup_github_repository(self, url: str, commit: str | None = None) -> RepositoryInfo:
        """Trace the repository at ``url`` and ``commit`` (needs git and Lean; checked first, before
        anything is cloned) and add it to the database. Returns its database record."""
        url = text_argument("url", url, example="'https://github.com/OWNER/REPO'")
        commit = text_argument("commit", commit, optional=True)
        self._require_tools(f"tracing {url}")
        repo = self.trace_repository(url, commit, self._get_build_deps())
        return self.add_repository(repo)

    def setup_local_repository(self, path: str | os.PathLike[str]) -> RepositoryInfo:
        """Trace the local git repository at ``path`` (its ``HEAD``) and add it; its checkout is
        used for Pantograph and write-back."""
        from ..lean_dojo.errors import RepoNotFoundError

        root = path_argument("path", path, example="the root of a local Lean project")
        if not root.is_dir():
            raise RepoNotFoundError(
                f"no repository directory at {root}; pass the root of a local Lean project"
            )
        self._require_tools(f"tracing {root}")
        repo = self.trace_repository(str(root.resolve()), None, self._get_build_deps())
        return self.add_repository(repo, source_dir=root.resolve())

    def trace_repository(
        self, url: str, commit: str | None = None, build_deps: bool | None = None
    ) -> TracedRepo:
        """Trace ``url`` at ``commit`` (:func:`lean_dojo_v2.lean_dojo.trace`, cached) and return
        the traced repository (``to_repository()`` gives its data records; ``root`` its
        checkout)."""
        url = text_argument("url", url, example="'https://github.com/OWNER/REPO'")
        commit = text_argument("commit", commit, optional=True)
        if build_deps is not None:
            flag("build_deps", build_deps)
        self._require_tools(f"tracing {url}")
        from ..lean_dojo import LeanGitRepo, trace

        deps = self._get_build_deps() if build_deps is None else build_deps
        return trace(LeanGitRepo(url, commit), build_deps=deps)

    def add_repository(
        self,
        repo: TracedRepo | Repository | str | os.PathLike[str],
        *,
        source_dir: str | os.PathLike[str] | None = None,
        dataset_dir: str | os.PathLike[str] | None = None,
        **add_kwargs: Any,
    ) -> RepositoryInfo:
        """Add ``repo`` to the database and to this agent's repositories: a traced repository
        (from :meth:`trace_repository`), a ``lean_dojo_v2.data.Repository`` or a LeanDojo dataset
        directory (its parts checked before the database is opened; read once, by the
        database, in one transaction). A database file this call created is removed again when
        the dataset is refused. Returns its database record."""
        from ..data import Repository
        from ..database import DynamicDatabase

        if isinstance(repo, (str, os.PathLike)):
            repo = path_argument("repo", repo)
        elif not (isinstance(repo, Repository) or hasattr(repo, "to_repository")):
            raise AgentConfigError(
                f"repo must be a dataset directory, a Repository or a traced repository, got "
                f"{type(repo).__name__}: pass e.g. trace_repository(url, commit) or a path"
            )
        source_dir = path_argument("source_dir", source_dir, optional=True)
        dataset_dir = path_argument("dataset_dir", dataset_dir, optional=True)
        keywords(
            "add_repository's keywords",
            add_kwargs,
            [DynamicDatabase.add_repository],
            set_by_agent={"source": "pass the dataset or repository as repo, the first argument"},
        )
        root = getattr(repo, "root", None)
        if hasattr(repo, "to_repository"):
            source_dir = source_dir if source_dir is not None else root
            repo = repo.to_repository()
        src = Path(source_dir).resolve() if source_dir is not None else None
        options = {**add_kwargs, **({"source_dir": src} if src is not None else {})}
        from .dataset_check import check_dataset, new_database_removed_on_failure

        if isinstance(repo, Path):
            partial = options.pop("partial", False)
            check_dataset(repo, options, partial=partial)
            options["partial"] = partial
        with new_database_removed_on_failure(self.database_path, self.close):
            info = self.database.add_repository(repo, **options)
        entry = AgentRepository(
            info, dataset_dir.resolve() if dataset_dir is not None else None, src
        )
        self.repositories = [
            r for r in self.repositories if (r.url, r.commit) != (info.url, info.commit)
        ]
        self.repositories.append(entry)
        self.prover = None  # built again for the new set of repositories
        return info

    def setup_traced_dataset(
        self,
        path: str | os.PathLike[str],
        *,
        source_dir: str | os.PathLike[str] | None = None,
        url: str | None = None,
        commit: str | None = None,
    ) -> RepositoryInfo:
        """Add an already traced LeanDojo-layout dataset (the three split files of ``random/``,
        else of ``novel_premises/``, and ``corpus.jsonl``, as the database takes it): the way in
        without git or Lean. ``source_dir``: the repository's checkout, where ``sorry`` is looked
        for and proofs are written back; ``url`` / ``commit``: override the dataset's
        ``metadata.json``. Returns its database record. A refused dataset leaves no database
        file behind (:meth:`add_repository`)."""
        from ..errors import DatasetNotFoundError

        example = "lean_dojo_v2.data.sample_dataset_path()"
        d = path_argument("path", path, example=example)
        # Named as the arguments they are, not as the dataset's metadata they override.
        url = text_argument("url", url, optional=True, example="'https://github.com/OWNER/REPO'")
        commit = text_argument("commit", commit, optional=True, example="'<40 hex digits>'")
        source = path_argument("source_dir", source_dir, optional=True)
        if not d.is_dir():
            raise DatasetNotFoundError(
                f"no dataset directory at {d}; pass a LeanDojo-layout dataset (random/, "
                f"novel_premises/, corpus.jsonl), e.g. {example}"
            )
        if source is not None and not source.is_dir():
            raise DatasetNotFoundError(
                f"source_dir {source} is not a directory; pass the repository's checkout, or "
                "leave source_dir out"
            )
        extra = {k: v for k, v in (("url", url), ("commit", commit)) if v is not None}
        return self.add_repository(d, source_dir=source, dataset_dir=d, **extra)

    def add_database_repositories(self) -> list[RepositoryInfo]:
        """Every repository the database (``database_path``, which must exist) already holds
        becomes one of this agent's, easiest first (its curriculum order); returns their
        records. The way to work on a database made earlier (``lean-dojo-v2 db add``)."""
        if self._database is None:
            from ..database import DynamicDatabase

            self._database = DynamicDatabase(self.database_path, create=False)
        infos = list(self.database.sort_repositories_by_difficulty(None))
        if not infos:
            from ..errors import EmptyDatasetError

            raise EmptyDatasetError(
                f"the database {self.database_path} holds no repository: add one "
                "(`lean-dojo-v2 db add ...`) or set one up with setup_traced_dataset(path)"
            )
        known = {(r.url, r.commit) for r in self.repositories}
        self.repositories += [AgentRepository(i) for i in infos if (i.url, i.commit) not in known]
        self.prover = None  # built again for the new set of repositories
        return infos

    def _require_repositories(self, what: str) -> None:
        if not self.repositories:
            raise NoRepositoryError(
                f"{what} needs a repository: call setup_github_repository(url, commit), "
                "setup_local_repository(path) or setup_traced_dataset(path) first"
            )

    def _require_tools(self, what: str) -> None:
        """git and Lean (elan or lean) must be there before anything is cloned."""
        from ..errors import LeanNotFoundError
        from ..system.toolchain import ELAN_INSTALL_COMMAND, find_elan, find_program

        missing = []
        if shutil.which("git") is None:
            missing.append("git (install it with your package manager)")
        if find_elan() is None and find_program("lean") is None:
            missing.append(f"Lean (install elan: `{ELAN_INSTALL_COMMAND}`)")
        if missing:
            raise LeanNotFoundError(
                f"{what} needs git and Lean, and this machine lacks {' and '.join(missing)}; "
                + DOCTOR_HINT
                + self._offline_hint()
            )

    def _offline_hint(self) -> str:
        """What else the offline way in needs, said together with the missing tools (e.g. that
        the trainer's model is not cached); empty when nothing."""
        return ""

    # ------------------------------------------------------------------ training

    def train(self) -> object:
        """Train the agent's trainer over the database's curriculum of this agent's
        repositories (easiest first); returns the trainer's result."""
        self._require_repositories("train()")
        if self.trainer is None:
            raise AgentConfigError(f"{type(self).__name__} has no trainer to train")
        result = self.trainer.train(repos=self.repos, database=self.database)
        self.trained = True
        self.prover = None  # the next prove() loads the trained model
        return result

    def evaluate(self) -> object:
        """The trainer's own evaluation when it has one; otherwise proof search on the held-out
        ``random`` test split (no write-back), a :class:`ProveReport`."""
        self._require_repositories("evaluate()")
        evaluate = getattr(self.trainer, "evaluate", None)
        if callable(evaluate):
            return evaluate()
        return self.prove(split="test", write_back=False)

    # ------------------------------------------------------------------ proving

    def initialize_prover(self, split: str | None = None) -> list[ProofTarget]:
        """The theorems :meth:`prove` would try (see there) and ``self.prover`` built."""
        one_of("split", split, SPLITS, optional=True)
        targets, _, _ = self._targets(split)
        if self.prover is None:
            self._setup_prover()
        return targets

    def prove(
        self,
        whole_proof: bool = False,
        *,
        split: str | None = None,
        limit: int | None = None,
        write_back: bool = True,
        out: str | os.PathLike[str] | None = None,
        in_place: bool = False,
        branch: str | None = None,
        force: bool = False,
        include_depends_on_sorry: bool = False,
        record: bool = True,
    ) -> ProveReport:
        """Search for proofs and return a :class:`ProveReport`.

        Targets: the database's unproved ``sorry`` theorems of this agent's repositories; when
        there are none (a benchmark), the ``random`` test split of the agent's export of them
        (held out from what :meth:`train` trains on); ``split`` picks a split explicitly.
        ``limit``: at most that many theorems. The proving pipeline
        (:class:`~lean_dojo_v2.prover.pipeline.ProveRun`) does the rest, one job per repository:
        every proof is re-checked with ``verify_proof`` and recorded in the database
        (``record``). Proofs of ``sorry`` theorems are written into
        a working copy of the repository's checkout (``write_back``; ``out``, ``branch``,
        ``in_place``, ``force`` as for :func:`~lean_dojo_v2.prover.writeback.write_back`);
        theorems whose statement uses a ``sorry`` declaration are reported as
        ``depends_on_sorry`` and not written back unless ``include_depends_on_sorry``."""
        from ..prover.pipeline import check_jobs

        # Every argument before anything is exported, searched or written.
        flag("whole_proof", whole_proof)
        one_of("split", split, SPLITS, optional=True)
        whole_number("limit", limit, optional=True)
        for name, value in (
            ("write_back", write_back),
            ("in_place", in_place),
            ("force", force),
            ("include_depends_on_sorry", include_depends_on_sorry),
            ("record", record),
        ):
            flag(name, value)
        out = path_argument("out", out, optional=True, example="'raid/writeback/mine'")
        branch = text_argument("branch", branch, optional=True, example="'proofs'")
        self._require_repositories("prove()")
        start = time.perf_counter()
        self._check_ready()
        targets, target_kind, data_dir = self._targets(split)
        startable, left_out = self._startable(targets)
        if limit is not None:
            startable = startable[:limit]
        config = dataclasses.replace(self.search_config, whole_proof=whole_proof)
        options = None
        if write_back and target_kind == "sorry":
            options = {"out": out, "in_place": in_place, "branch": branch, "force": force}
            options["include_depends_on_sorry"] = include_depends_on_sorry
        jobs, choices = self._jobs(startable, data_dir, config, options)
        # Write-back is checked before any search: a bad argument must not cost the proofs.
        jobs = check_jobs(jobs)
        return self._prove_jobs(
            jobs, choices, config, target=target_kind, left_out=left_out, record=record, start=start
        )

    def prove_dataset(
        self,
        path: str | os.PathLike[str],
        split: str = "test",
        *,
        limit: int | None = None,
        whole_proof: bool = False,
    ) -> ProveReport:
        """Prove one split of the LeanDojo dataset at ``path`` as it is (its own ``random``
        split files, not this agent's export), with this agent's prover, e.g. a benchmark's
        test split. The environment is chosen as for :meth:`prove` (a dataset has no checkout:
        replay over it, only theorems with a recorded tactic proof); every proof is re-checked;
        nothing is recorded or written back. ``limit``: at most that many theorems."""
        from ..data.dataset import DatasetDir
        from ..errors import DatasetNotFoundError
        from ..prover.pipeline import ProofJob

        d = path_argument("path", path, example="lean_dojo_v2.data.sample_dataset_path()")
        one_of("split", split, SPLITS)
        whole_number("limit", limit, optional=True)
        flag("whole_proof", whole_proof)
        if not d.is_dir():
            raise DatasetNotFoundError(
                f"no dataset directory at {d}; pass a LeanDojo-layout dataset (random/, "
                "novel_premises/, corpus.jsonl)"
            )
        start = time.perf_counter()
        self._check_ready()
        theorems = DatasetDir(d).theorems("random", split)
        startable = [t for t in theorems if t.traced_tactics]
        config = dataclasses.replace(self.search_config, whole_proof=whole_proof)
        choice = self._choose_env(None, d, config)
        job = ProofJob(
            startable[:limit] if limit is not None else startable,
            choice.make_env,
            label=str(d),
            desc=f"proving ({choice.backend})",
        )
        left_out = len(theorems) - len(startable)
        return self._prove_jobs(
            [job], [choice], config, target=split, left_out=left_out, record=False, start=start
        )

    def prove_theorem(self, theorem: Theorem | str, whole_proof: bool = False) -> TheoremOutcome:
        """Prove one theorem (a ``Theorem`` of the agent's repositories, or its full name); the
        proof is re-checked and recorded, not written back."""
        if isinstance(theorem, Theorem):
            name = theorem.full_name
        elif isinstance(theorem, str) and theorem.strip():
            name = theorem
        else:
            raise AgentConfigError(
                f"theorem must be a Theorem of this agent's repositories or its full name, got "
                f"{type(theorem).__name__} {theorem!r}: pass e.g. prove_theorem('Nat.add_comm')"
            )
        flag("whole_proof", whole_proof)
        self._require_repositories("prove_theorem()")
        self._check_ready()
        targets, _, data_dir = self._targets("all")
        found = [t for t in targets if t.theorem.full_name == name]
        if not found:
            from ..interaction.types import UnknownTheoremError

            raise UnknownTheoremError(
                f"theorem {name!r} is not in this agent's repositories "
                f"({', '.join(r.label for r in self.repositories)})"
            )
        target = found[0]
        config = dataclasses.replace(self.search_config, whole_proof=whole_proof)
        (job,), (choice,) = self._jobs([target], data_dir, config, None)
        run = self._prove_run(config, None, record=True, progress=False)
        if choice.notice:
            self._say(choice.notice)
        (outcome,) = run.run([job]).outcomes
        return outcome

    # ------------------------------------------------------------------ proving: the parts

    def _parallel_factory(self, targets: int, notes: list[str]) -> GeneratorFactory | None:
        """The prover factory for worker processes when ``workers`` > 1 and there is more than
        one theorem; otherwise None (inline). Says so when the agent cannot prove in parallel."""
        if self.workers == 1 or targets < 2:
            return None
        factory = self._prover_factory()
        if factory is None:
            note = (
                f"{type(self).__name__} proves in this process: its prover cannot be rebuilt in "
                f"worker processes (workers={self.workers} ignored)"
            )
            self._say(note)
            notes.append(note)
        return factory

    def _check_ready(self) -> None:  # noqa: B027 - an optional hook, not abstract
        """Refuse, before anything is exported or searched, what cannot work (default: nothing
        to check; ``ExternalAgent``: the endpoint)."""

    def _prove_notes(self) -> list[str]:
        """What a subclass says before proving (e.g. that the model is untrained)."""
        return []

    def _targets(self, split: str | None) -> tuple[list[ProofTarget], str, Path]:
        """``(targets, target kind, the dataset the replay environment reads)``. The agent's
        repositories are exported (the same splits its trainers use) to ``work_dir/prove-data``.
        ``split="all"``: every theorem of every split."""
        from ..data.dataset import DatasetDir

        db = self.database
        data_dir = self.work_dir / "prove-data"
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        db.export_merged_data(self.repos, data_dir)
        by_key = {(r.url, r.commit): r for r in self.repositories}
        default = self.repositories[0]

        def owner(t: Theorem) -> AgentRepository:
            return by_key.get((t.url, t.commit), default)

        if split is None:
            sorry = [
                ProofTarget(t, r)
                for r in self.repositories
                for t in db.theorems(r.info, status="sorry_unproved")
            ]
            if sorry:
                return sorry, "sorry", data_dir
            split = "test"
        d = DatasetDir(data_dir)
        theorems = list(d.all_theorems("random")) if split == "all" else d.theorems("random", split)
        return [ProofTarget(t, owner(t)) for t in theorems], split, data_dir

    def _startable(self, targets: list[ProofTarget]) -> tuple[list[ProofTarget], int]:
        """All targets for Pantograph; only those with a recorded tactic proof for replay (the
        only ones it can start). Decided per repository, as the environment is."""
        out, left_out = [], 0
        for t in targets:
            if t.theorem.traced_tactics or self._pantograph_possible(t.repository):
                out.append(t)
            else:
                left_out += 1
        return out, left_out

    def _pantograph_possible(self, repo: AgentRepository) -> bool:
        from .environment import is_built_project

        return self.backend != "replay" and is_built_project(repo.source_dir)

    def _choose_env(
        self, source_dir: Path | None, data_dir: Path, config: SearchConfig
    ) -> EnvChoice:
        from .environment import choose_env

        return choose_env(
            source_dir, data_dir, backend=self.backend, tactic_timeout=config.tactic_timeout
        )

    def _jobs(
        self,
        targets: list[ProofTarget],
        data_dir: Path,
        config: SearchConfig,
        write_back: dict[str, Any] | None,
    ) -> tuple[list[ProofJob], list[EnvChoice]]:
        """One pipeline job per repository of ``targets``, in the environment chosen for it;
        with ``write_back`` (the request's options) its proofs go into its checkout's working
        copy, when it has a checkout."""
        from ..prover.pipeline import ProofJob, WriteBackRequest

        groups = _by_repository(targets)
        if write_back is not None and write_back["out"] is not None:
            if sum(repo.source_dir is not None for repo, _ in groups) > 1:
                raise AgentConfigError(
                    "out= names one working copy, and the theorems come from several "
                    "repositories: leave out to the default (one per repository under "
                    "RAID_DIR/writeback)"
                )
        jobs, choices = [], []
        for repo, group in groups:
            choice = self._choose_env(repo.source_dir, data_dir, config)
            request = None
            if write_back is not None and repo.source_dir is not None:
                request = WriteBackRequest(repo.source_dir, **write_back)
            jobs.append(
                ProofJob(
                    [t.theorem for t in group],
                    choice.make_env,
                    label=repo.label,
                    source_dir=repo.source_dir,
                    write_back=request,
                    desc=f"proving ({choice.backend})",
                )
            )
            choices.append(choice)
        return jobs, choices

    def _prove_jobs(
        self,
        jobs: list[ProofJob],
        choices: list[EnvChoice],
        config: SearchConfig,
        *,
        target: str,
        left_out: int,
        record: bool,
        start: float,
    ) -> ProveReport:
        """Prove ``jobs`` (checked) through the pipeline and report, saying the notes and the
        first environment notice before the search and the summary after it."""
        notes: list[str] = list(self._prove_notes())
        factory = self._parallel_factory(sum(len(j.theorems) for j in jobs), notes)
        run = self._prove_run(config, factory, record=record, progress=self.progress)
        notice = next((c.notice for c in choices if c.notice), None)
        if notice is not None:
            self._say(notice)
        done = run.run(jobs)
        report = ProveReport(
            agent=type(self).__name__,
            backend=_one_or_list([c.backend for c in choices], self.backend),
            target=target,
            model=self._model_label(),
            trained=self.trained if self.trainer is not None else None,
            whole_proof=config.search_mode != "tactic",
            outcomes=done.outcomes,
            seconds=time.perf_counter() - start,
            backend_notice=notice,
            left_out=left_out,
            write_back={
                j.job.label or "": j.write_back for j in done.jobs if j.write_back is not None
            },
            recorded=done.recorded.to_dict() if done.recorded is not None and done.proved else None,
            notes=notes,
        )
        self.last_report = report
        self._say(report.summary(notice=False))  # the notice was said before the search
        return report

    def _prove_run(
        self,
        config: SearchConfig,
        factory: GeneratorFactory | None,
        *,
        record: bool,
        progress: bool,
    ) -> ProveRun:
        """The pipeline this agent proves with: its prover (built here, or by ``factory`` in
        each worker process), every proof re-checked, recorded in its database (``record``)."""
        from ..prover.pipeline import ProveRun

        inline = factory is None
        return ProveRun(
            self._built_prover() if factory is None else factory,
            config,
            workers=1 if inline else self.workers,
            parallel="inline" if inline else "process",
            progress=progress and not self.quiet,
            recheck=True,
            database=self.database if record else None,
            model=self._model_label(),
        )

    def _built_prover(self) -> GeneratorFactory:
        """The prover, built here (once) for proving in this process, as a factory of itself."""
        if self.prover is None:
            self._setup_prover()
        prover = self.prover
        if prover is None:
            raise AgentConfigError(
                f"{type(self).__name__}._setup_prover() set no prover: set self.prover to a "
                "TacticGenerator there"
            )
        return lambda: prover

    def _say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)


def _database_path(path: str | os.PathLike[str] | None) -> Path:
    if path is None:
        from ..config import get_settings

        return get_settings().raid_dir / "dynamic_database.sqlite"
    p = Path(path).expanduser()
    if p.suffix == ".json":
        # Upstream's default was a JSON file; the database here is SQLite (import an upstream
        # JSON file with `lean-dojo-v2 db import-json`).
        return p.with_suffix(".sqlite")
    return p


def _by_repository(
    targets: Sequence[ProofTarget],
) -> list[tuple[AgentRepository, list[ProofTarget]]]:
    groups: dict[str, tuple[AgentRepository, list[ProofTarget]]] = {}
    for t in targets:
        groups.setdefault(t.repository.label, (t.repository, []))[1].append(t)
    return list(groups.values())


def _one_or_list(backends: list[str], configured: str) -> str | list[str]:
    unique = sorted(set(backends))
    if not unique:
        return "replay" if configured == "auto" else configured
    return unique[0] if len(unique) == 1 else unique


__all__ = ["AgentRepository", "AgentTrainer", "BaseAgent", "ProofTarget"]
