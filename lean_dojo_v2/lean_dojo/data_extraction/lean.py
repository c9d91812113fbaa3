"""Upstream path ``lean_dojo_v2.lean_dojo.data_extraction.lean``: repositories and positions.

Re-exports (the same objects): :class:`~lean_dojo_v2.lean_dojo.LeanGitRepo` (git only, no GitHub
token; ``from_path``, ``clone_and_checkout``, ``get_dependencies``, ``get_config``,
``uses_lakefile_lean``/``uses_lakefile_toml``, ``lean_version``),
:class:`~lean_dojo_v2.lean_dojo.RepoType` and :class:`~lean_dojo_v2.data.Pos` (1-based
``line_nb``, ``column_nb``).
"""

from __future__ import annotations

from lean_dojo_v2._lazy import reexport

_EXPORTS = {
    "LeanGitRepo": "lean_dojo_v2.lean_dojo",
    "RepoType": "lean_dojo_v2.lean_dojo",
    "Pos": "lean_dojo_v2.data",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(),
    _EXPORTS,
    not_provided={
        "get_latest_commit": "LeanGitRepo(url).commit is the head of the default branch",
        "LeanFile": "traced files carry their source; see lean_dojo_v2.lean_dojo.TracedFile",
        "Theorem": "theorem records are lean_dojo_v2.data.Theorem (url, commit, file_path, "
        "full_name, start, end)",
    },
)
