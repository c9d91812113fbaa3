"""Typed errors of tracing. Every message says what went wrong and how to fix it."""

from __future__ import annotations

from ..errors import (
    LeanNotFoundError,
    OutputExistsError,
    ToolchainNotInstalledError,
    TracingError,
)

# "No Lean" is one error for the whole library (lean_dojo_v2.errors.LeanNotFoundError); the names
# tracing code has always used stay importable from here.
ToolchainNotFoundError = LeanNotFoundError


class RepoNotFoundError(TracingError):
    """The URL or path does not lead to a git repository that can be read."""


class CommitNotFoundError(TracingError):
    """The commit, tag or branch does not exist in the repository."""


class NotALeanProjectError(TracingError):
    """The repository has no ``lean-toolchain`` (or no lakefile) at the commit."""


class BuildError(TracingError):
    """``lake build`` (or ``lake exe cache get``) failed; the message holds the end of its log."""


class ExtractionError(TracingError):
    """The extractor failed on files the dataset needs; ``failed`` maps each file to its reason."""

    def __init__(self, message: str, failed: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.failed = dict(failed or {})


class TraceFormatError(TracingError, ValueError):
    """An extractor output file does not follow the documented schema."""


class DestinationExistsError(OutputExistsError, TracingError):
    """A destination directory exists and is not empty (nothing is ever overwritten): the
    tracing flavour of :class:`lean_dojo_v2.errors.OutputExistsError`."""


__all__ = [
    "BuildError",
    "CommitNotFoundError",
    "DestinationExistsError",
    "ExtractionError",
    "LeanNotFoundError",
    "NotALeanProjectError",
    "RepoNotFoundError",
    "ToolchainNotFoundError",
    "ToolchainNotInstalledError",
    "TraceFormatError",
    "TracingError",
]
