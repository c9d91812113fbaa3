"""Git helpers under the upstream path ``lean_dojo_v2.utils.git``.

lean-dojo-v2 talks to git through :class:`~lean_dojo_v2.lean_dojo.LeanGitRepo` (plain git, no
GitHub token): ``LeanGitRepo(url, commit)`` resolves a branch or tag to a commit,
``clone_and_checkout(dst)`` makes a checkout, ``LeanGitRepo.from_path(path)`` reads a local
repository's URL and HEAD commit. Remote repositories are fetched once into bare mirrors under the
cache directory (:func:`mirror_path`). Re-exported lazily (the same objects).
"""

from __future__ import annotations

from .._lazy import reexport

_WRITE_BACK = "branches, commits, pushes and pull requests are not part of lean-dojo-v2 yet"
_GITHUB = "lean-dojo-v2 does not call the GitHub API"

_EXPORTS = {
    "LeanGitRepo": "lean_dojo_v2.lean_dojo",
    "RepoType": "lean_dojo_v2.lean_dojo",
    "mirror_path": "lean_dojo_v2.lean_dojo.repo",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(),
    _EXPORTS,
    not_provided={
        "clone_repo": "LeanGitRepo(url, commit).clone_and_checkout(dst)",
        "get_repo_info": "LeanGitRepo.from_path(path) has .url and .commit",
        "branch_exists": _WRITE_BACK,
        "create_or_switch_branch": _WRITE_BACK,
        "commit_changes": _WRITE_BACK,
        "push_changes": _WRITE_BACK,
        "create_pull_request": _WRITE_BACK,
        "get_default_branch": _GITHUB,
        "search_github_repositories": _GITHUB,
        "get_compatible_commit": _GITHUB,
        "find_and_save_compatible_commits": _GITHUB,
        "get_version_for_commit": "LeanGitRepo(url, commit).lean_version",
    },
)
