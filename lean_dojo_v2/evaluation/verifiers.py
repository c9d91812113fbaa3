"""Layer 4 (evaluation): who decides whether a proof counts — the environment factory of a
verifier, for the proving pipeline's workers and its re-check.

::

    make_env = make_verifier_env("lean", bench, project=Path("~/mathlib-project"))
    make_env = make_verifier_env("recorded", bench)          # no Lean needed
    make_env = cached(make_env, VerdictCache(path))          # .verdict_cache

- ``lean``: ``PantographEnv`` (a Pantograph REPL and a built Lean project with the benchmark's
  imports, e.g. Mathlib). Each proof is checked by Lean's frontend for the problem's own
  statement; a proof Lean accepts is counted only when it depends on no axiom beyond
  ``propext``, ``Classical.choice`` and ``Quot.sound`` (``#print axioms``: ``sorryAx``, a
  PutnamBench answer left ``sorry``, ``native_decide``'s ``Lean.ofReduceBool`` are refused;
  ``allowed_axioms`` widens the set). Verdicts say ``checked_by="lean"``.
- ``recorded``: :class:`~.recorded.RecordedEnv`, proofs a real Lean run accepted, compared up to
  white space (``checked_by="recorded"``; see :mod:`.recorded` for what it proves and what not).
- ``replay``: a LeanDojo dataset's recorded transitions (``ReplayEnv``; ``checked_by="replay"``),
  as ``prove --backend replay`` proves, for tactic search without Lean.

Each factory declares ``verifier_id`` (``lean:4.15.0``, ``recorded``,
``replay:DIR``), the verdict cache's name for it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..interaction.base import ProofEnv
from ..interaction.messages import LeanMessage
from ..interaction.standalone import header_imports
from ..interaction.types import STANDARD_AXIOMS, Verdict
from ..interaction.wrapped import WrappedEnv
from .errors import VerifierError
from .problems import Benchmark
from .recorded import RecordedEnv, RecordedProofs
from .verdict_cache import VerdictCache, cached  # the design's face: verifiers and their cache

if TYPE_CHECKING:
    from ..data.model import Theorem
    from ..interaction.base import AsyncProofEnv
    from ..prover.search_types import EnvFactory

log = logging.getLogger(__name__)

__all__ = [
    "VERIFIERS",
    "AxiomCheckedEnv",
    "LeanVerifier",
    "RecordedVerifier",
    "ReplayVerifier",
    "VerdictCache",
    "cached",
    "make_verifier_env",
]

VERIFIERS = ("lean", "recorded", "replay")
# Modules every Lean toolchain has: a benchmark importing only these needs no project.
_CORE_MODULES = ("Init", "Lean", "Std", "Lake")


class AxiomCheckedEnv(WrappedEnv):
    """An environment whose accepted proofs must depend on no axiom beyond ``allowed`` (the
    ``#print axioms`` answer in ``Verdict.axioms``); one that does becomes a rejection saying
    which. A verdict whose axioms are unknown is left as it is."""

    def __init__(self, env: ProofEnv | AsyncProofEnv, allowed: Iterable[str]) -> None:
        super().__init__(env)
        self.allowed = frozenset(allowed)

    async def verify(self, theorem: Theorem, proof: str) -> Verdict:
        return self.judge(await self.env.verify(theorem, proof))

    def judge(self, verdict: Verdict) -> Verdict:
        """``verdict``, rejected when it is accepted but depends on an axiom not allowed."""
        extra = [a for a in verdict.axioms or () if a not in self.allowed]
        if not verdict.ok or not extra:
            return verdict
        text = (
            f"axiom check: the proof depends on {', '.join(extra)}, beyond the axioms allowed "
            f"({', '.join(sorted(self.allowed))})"
        )
        return replace(
            verdict,
            ok=False,
            messages=(*verdict.messages, text),
            lean_messages=(*verdict.lean_messages, LeanMessage("error", 0, 0, text)),
        )


@dataclass(frozen=True)
class LeanVerifier:
    """Builds, in each worker, a ``PantographEnv`` with these ``PantographConfig`` fields
    behind the axiom check (:class:`AxiomCheckedEnv`)."""

    config: Mapping[str, object] = field(default_factory=dict)
    allowed_axioms: tuple[str, ...] = tuple(sorted(STANDARD_AXIOMS))
    verifier_id: str = "lean"

    def __call__(self) -> AxiomCheckedEnv:
        from ..interaction.pantograph import PantographConfig, PantographEnv

        env = PantographEnv(PantographConfig(**dict(self.config)))  # type: ignore[arg-type]  # checked fields
        return AxiomCheckedEnv(env, self.allowed_axioms)


@dataclass(frozen=True)
class RecordedVerifier:
    """Builds the recorded verifier (:class:`~.recorded.RecordedEnv` on the bundled records)."""

    verifier_id: str = "recorded"

    def __call__(self) -> RecordedEnv:
        return RecordedEnv()


@dataclass(frozen=True)
class ReplayVerifier:
    """Builds a ``ReplayEnv`` over a LeanDojo dataset (every theorem of it), as ``prove
    --backend replay`` does."""

    data: str

    @property
    def verifier_id(self) -> str:
        return f"replay:{self.data}"

    def __call__(self) -> ProofEnv:
        from ..interaction import ReplayEnv

        return ReplayEnv.from_dataset(self.data)


def make_verifier_env(
    kind: str,
    benchmark: Benchmark,
    *,
    project: Path | None = None,
    repl: str | None = None,
    timeout: float | None = None,
    imports: Iterable[str] | None = None,
    allowed_axioms: Iterable[str] | None = None,
    pantograph: Mapping[str, object] | None = None,
) -> EnvFactory:
    """The environment factory of verifier ``kind`` for ``benchmark`` (see the module
    docstring), every check made here, in one line each: an unknown kind, no REPL
    (:class:`~lean_dojo_v2.errors.LeanNotFoundError`), a project that is missing or not built,
    a benchmark the verifier cannot check.

    ``lean``: ``project`` (the built Lean project whose modules the statements import), ``repl``
    (the REPL command; None: discovered), ``timeout`` (seconds per tactic), ``imports`` (the
    modules the REPL imports at launch; None: every header's ``import`` lines, or the modules of
    a LeanDojo dataset's theorems), ``allowed_axioms`` (None: Lean's standard three),
    ``pantograph`` (other ``PantographConfig`` fields)."""
    if kind == "recorded":
        return _recorded(benchmark)
    if kind == "replay":
        if benchmark.data is None:
            raise VerifierError(
                "--verifier replay replays a LeanDojo dataset's recorded proofs: give --data DIR, "
                "or use --verifier lean or recorded for a benchmark"
            )
        return ReplayVerifier(benchmark.data)
    if kind == "lean":
        return _lean(benchmark, project, repl, timeout, imports, allowed_axioms, pantograph)
    raise VerifierError(f"unknown verifier {kind!r}: choose one of {', '.join(VERIFIERS)}")


def _recorded(benchmark: Benchmark) -> RecordedVerifier:
    if benchmark.data is not None:
        raise VerifierError(
            "the recorded verifier holds proofs of benchmark statements, none of a LeanDojo "
            "dataset: use --verifier replay (recorded tactics) or lean"
        )
    records = RecordedProofs.bundled()
    known = sum(
        1 for p in benchmark.problems if records.for_statement(p.header, p.formal_statement)
    )
    if not known:
        log.warning(
            "no proof of any problem of %s is recorded: with --verifier recorded nothing can be "
            "solved (records: miniF2F-test, 67 problems of miniF2F-valid); use --verifier lean",
            benchmark.name,
        )
    return RecordedVerifier()


def _lean(
    benchmark: Benchmark,
    project: Path | None,
    repl: str | None,
    timeout: float | None,
    imports: Iterable[str] | None,
    allowed_axioms: Iterable[str] | None,
    pantograph: Mapping[str, object] | None,
) -> LeanVerifier:
    from ..interaction.pantograph.locate import (
        binary_toolchain,
        locate_repl,
        module_name,
        read_toolchain,
    )

    located = locate_repl(repl)  # no REPL: LeanNotFoundError, one line
    if imports is not None:
        modules = list(dict.fromkeys(imports))
    elif benchmark.data is not None:
        modules = sorted(
            {module_name(p.theorem.file_path) for p in benchmark.problems if p.theorem}
        )
    else:
        modules = list(
            dict.fromkeys(m for p in benchmark.problems for m in header_imports(p.header))
        )
    if project is not None:
        _check_project(project)
    elif benchmark.data is not None or any(m.split(".")[0] not in _CORE_MODULES for m in modules):
        needs = "the traced repository" if benchmark.data is not None else ", ".join(modules)
        raise VerifierError(
            f"--verifier lean needs --project: a built Lean project that provides {needs} "
            "(for Mathlib: a project depending on it, after `lake exe cache get`)"
        )
    config: dict[str, object] = {"command": list(located.command), "imports": modules or ["Init"]}
    if project is not None:
        config["project_dir"] = str(Path(project).expanduser().resolve())
    if timeout is not None:
        config["tactic_timeout"] = float(timeout)
    config.update(pantograph or {})
    version = (read_toolchain(project) if project is not None else None) or binary_toolchain(
        located
    )
    allowed = tuple(sorted(allowed_axioms if allowed_axioms is not None else STANDARD_AXIOMS))
    name = f"lean:{version or 'unknown'}"
    if set(allowed) != STANDARD_AXIOMS:  # another axiom check is another verifier
        name += f"[axioms={','.join(allowed)}]"
    return LeanVerifier(config, allowed, name)


def _check_project(project: Path) -> None:
    path = Path(project).expanduser()
    if not path.is_dir():
        raise VerifierError(f"no Lean project at {path}: --project is a directory with a lakefile")
    if not any((path / f).is_file() for f in ("lakefile.lean", "lakefile.toml")):
        raise VerifierError(
            f"{path} is not a Lean project (no lakefile.lean or lakefile.toml): give the "
            "project's root directory"
        )
    if not (path / ".lake").is_dir():
        raise VerifierError(
            f"{path} is not built (no .lake directory): run `lake build` there (for Mathlib, "
            "`lake exe cache get` first)"
        )
