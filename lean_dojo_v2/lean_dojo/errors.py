"""Typed errors of tracing. Every message says what went wrong and how to fix it."""

from __future__ import annotations

from ..errors import LeanDojoError


class TracingError(LeanDojoError):
    """Base class of everything that can go wrong while tracing a repository."""


class RepoNotFoundError(TracingError):
    """The URL or path does not lead to a git repository that can be read."""


class CommitNotFoundError(TracingError):
    """The commit, tag or branch does not exist in the repository."""


class NotALeanProjectError(TracingError):
    """The repository has no ``lean-toolchain`` (or no lakefile) at the commit."""


class ToolchainNotFoundError(TracingError):
    """Neither elan nor a usable ``lake``/``lean`` is on PATH."""


class ToolchainNotInstalledError(ToolchainNotFoundError):
    """elan is there but the project's toolchain is not installed (the message has the command)."""


class BuildError(TracingError):
    """``lake build`` (or ``lake exe cache get``) failed; the message holds the end of its log."""


class ExtractionError(TracingError):
    """The extractor failed on files the dataset needs; ``failed`` maps each file to its reason."""

    def __init__(self, message: str, failed: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.failed = dict(failed or {})


class TraceFormatError(TracingError, ValueError):
    """An extractor output file does not follow the documented schema."""


class DestinationExistsError(TracingError, FileExistsError):
    """A destination directory exists and is not empty (nothing is ever overwritten)."""
