"""Layer 1: tracing Lean repositories into LeanDojo-style data.

``LeanGitRepo`` names a repository at a commit (GitHub, any git remote, or a local path; no token
needed); ``trace()`` builds it with Lake and runs ``ExtractData.lean`` over its files into a
:class:`TracedRepo`; ``generate_benchmark()`` writes the LeanDojo Benchmark layout. See
``docs/tracing.md``.

Names are imported on first use, so ``import lean_dojo_v2.lean_dojo`` runs nothing (no ``git``
either).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from ..errors import ToolchainNotInstalledError, TracingError
    from ..system.toolchain import Toolchain
    from .benchmark import BenchmarkResult, generate_benchmark
    from .errors import (
        BuildError,
        CommitNotFoundError,
        DestinationExistsError,
        ExtractionError,
        NotALeanProjectError,
        RepoNotFoundError,
        ToolchainNotFoundError,
        TraceFormatError,
    )
    from .repo import LeanGitRepo, RepoType
    from .toolchain import toolchain_for
    from .traced_file import TracedFile
    from .traced_repo import TracedRepo
    from .tracing import get_traced_repo_path, is_available_in_cache, trace

_EXPORTS = {
    "ToolchainNotInstalledError": "..errors",
    "TracingError": "..errors",
    "Toolchain": "..system.toolchain",
    "BenchmarkResult": ".benchmark",
    "generate_benchmark": ".benchmark",
    "BuildError": ".errors",
    "CommitNotFoundError": ".errors",
    "DestinationExistsError": ".errors",
    "ExtractionError": ".errors",
    "NotALeanProjectError": ".errors",
    "RepoNotFoundError": ".errors",
    "ToolchainNotFoundError": ".errors",
    "TraceFormatError": ".errors",
    "LeanGitRepo": ".repo",
    "RepoType": ".repo",
    "toolchain_for": ".toolchain",
    "TracedFile": ".traced_file",
    "TracedRepo": ".traced_repo",
    "get_traced_repo_path": ".tracing",
    "is_available_in_cache": ".tracing",
    "trace": ".tracing",
}
__all__ = [
    "BenchmarkResult",
    "BuildError",
    "CommitNotFoundError",
    "DestinationExistsError",
    "ExtractionError",
    "LeanGitRepo",
    "NotALeanProjectError",
    "RepoNotFoundError",
    "RepoType",
    "Toolchain",
    "ToolchainNotFoundError",
    "ToolchainNotInstalledError",
    "TraceFormatError",
    "TracedFile",
    "TracedRepo",
    "TracingError",
    "generate_benchmark",
    "get_traced_repo_path",
    "is_available_in_cache",
    "toolchain_for",
    "trace",
]

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
