"""File-system helpers under the upstream path ``lean_dojo_v2.utils.filesystem``.

Re-exported lazily (the same objects):

- :func:`staged_output_dir` / :func:`check_output_dir` / :func:`is_ours`
  (:mod:`lean_dojo_v2.data.output_dir`): write an output directory atomically, replacing only a
  directory that is absent, empty or written by this library (otherwise
  :class:`~lean_dojo_v2.errors.OutputExistsError`; ``force=True`` replaces it);
- :func:`atomic_write` / :func:`read_json` (:mod:`lean_dojo_v2.data.jsonio`): write a file so a
  reader sees the old or the new content, never half; read JSON with errors that name the file.

Upstream's ``remove_dir`` (which deleted whatever was at a path) has no equivalent on purpose:
nothing here deletes a directory this library did not write.
"""

from __future__ import annotations

from .._lazy import reexport

_EXPORTS = {
    "staged_output_dir": "lean_dojo_v2.data.output_dir",
    "check_output_dir": "lean_dojo_v2.data.output_dir",
    "is_ours": "lean_dojo_v2.data.output_dir",
    "atomic_write": "lean_dojo_v2.data.jsonio",
    "read_json": "lean_dojo_v2.data.jsonio",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(),
    _EXPORTS,
    not_provided={
        "remove_dir": "use staged_output_dir(dst, force=True) to replace an output directory",
        "working_directory": "use contextlib.chdir(path)",
        "compute_md5": "use hashlib.file_digest(f, 'md5')",
        "is_git_repo": "LeanGitRepo.from_path(path) raises RepoNotFoundError when it is not one",
        "find_latest_checkpoint": "checkpoints are not part of lean-dojo-v2 yet",
        "download_checkpoints": "checkpoints are not part of lean-dojo-v2 yet",
    },
)
