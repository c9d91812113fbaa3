"""Layer 1: tracing Lean repositories into LeanDojo-style data.

``LeanGitRepo`` names a repository at a commit (GitHub, any git remote, or a local path; no token
needed); ``trace()`` builds it with Lake and runs ``ExtractData.lean`` over its files into a
:class:`TracedRepo`; ``generate_benchmark()`` writes the LeanDojo Benchmark layout. See
``docs/tracing.md``.

Names are imported on first use, so ``import lean_dojo_v2.lean_dojo`` runs nothing (GitPython, for
one, runs ``git`` when imported).
"""

from __future__ import annotations

from .._lazy import reexport

_EXPORTS = {
    "LeanGitRepo": ".repo",
    "RepoType": ".repo",
    "Toolchain": ".toolchain",
    "toolchain_for": ".toolchain",
    "trace": ".tracing",
    "get_traced_repo_path": ".tracing",
    "is_available_in_cache": ".tracing",
    "TracedRepo": ".traced_repo",
    "TracedFile": ".traced_file",
    "generate_benchmark": ".benchmark",
    "BenchmarkResult": ".benchmark",
    "TracingError": ".errors",
    "RepoNotFoundError": ".errors",
    "CommitNotFoundError": ".errors",
    "NotALeanProjectError": ".errors",
    "ToolchainNotFoundError": ".errors",
    "ToolchainNotInstalledError": ".errors",
    "BuildError": ".errors",
    "ExtractionError": ".errors",
    "TraceFormatError": ".errors",
    "DestinationExistsError": ".errors",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = reexport(globals(), _EXPORTS)
