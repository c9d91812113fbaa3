"""Running external programs (git, lean, lake, elan, the Pantograph REPL): one way to do it.

:func:`run_command` starts a program, waits at most ``timeout`` seconds and turns every failure
into a typed error whose message says what to do:

- the program is missing or not executable → :class:`~lean_dojo_v2.errors.CommandNotFoundError`;
- it ran longer than ``timeout`` → :class:`~lean_dojo_v2.errors.CommandTimeoutError`, after
  killing it *and everything it started* (it runs in its own session, so a ``git`` waiting on
  ``ssh`` or a ``lake`` waiting on ``lean`` does not outlive the timeout);
- it exited non-zero (with ``check=True``) → :class:`~lean_dojo_v2.errors.CommandFailedError`
  ending with its stderr;
- its output is not UTF-8 where text is expected (:meth:`CommandResult.text`) →
  :class:`~lean_dojo_v2.errors.CommandOutputError`.

:func:`start_command` is the same start, for callers that watch the process themselves.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from ..errors import (
    CommandError,
    CommandFailedError,
    CommandNotFoundError,
    CommandOutputError,
    CommandTimeoutError,
)

logger = logging.getLogger("lean_dojo_v2.system")

# How long to wait for the pipes to close after killing a timed-out program.
_DRAIN_S = 5.0

CommandLine = Sequence[str | os.PathLike[str]]


def describe(command: CommandLine, limit: int = 200) -> str:
    """The command line as a shell would read it (cut to ``limit`` characters), for messages."""
    text = shlex.join(os.fspath(part) for part in command)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tail(data: bytes, lines: int = 15, empty: str = "(it printed nothing)") -> str:
    """The last ``lines`` lines of ``data`` (decoded, undecodable bytes replaced)."""
    text = data.decode("utf-8", errors="replace").strip()
    return "\n".join(text.splitlines()[-lines:]) if text else empty


@dataclass(frozen=True)
class CommandResult:
    """A finished program: its exit status and what it printed (empty when sent to a file)."""

    command: tuple[str, ...]
    returncode: int
    stdout: bytes = b""
    stderr: bytes = b""
    hint: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def text(self) -> str:
        """stdout as UTF-8 text; :class:`CommandOutputError` when it is not UTF-8."""
        try:
            return self.stdout.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CommandOutputError(
                f"`{describe(self.command)}` printed output that is not UTF-8 text ({exc})",
                self.command,
                returncode=self.returncode,
                stdout=self.stdout,
                stderr=self.stderr,
                hint=self.hint
                or "check that the program is the one expected (not a different binary of the "
                "same name)",
            ) from None

    def stderr_tail(self, lines: int = 15) -> str:
        return tail(self.stderr, lines)

    def check(self) -> CommandResult:
        """``self`` when the program exited 0, else :class:`CommandFailedError`."""
        if self.returncode != 0:
            raise CommandFailedError(
                f"`{describe(self.command)}` failed (exit status {self.returncode}):\n"
                f"{self.stderr_tail()}\n",
                self.command,
                returncode=self.returncode,
                stdout=self.stdout,
                stderr=self.stderr,
                hint=self.hint or "the output above says why",
            )
        return self


def _check_timeout(timeout: float | None) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds or None, got {timeout!r}")
    if math.isnan(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")


def start_command(
    command: CommandLine,
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | IO[bytes] | None = subprocess.DEVNULL,
    stdout: int | IO[bytes] | None = subprocess.PIPE,
    stderr: int | IO[bytes] | None = subprocess.PIPE,
    hint: str = "",
) -> subprocess.Popen[bytes]:
    """Start ``command``; :class:`CommandNotFoundError` when the program cannot be run.

    The program gets its own session and process group, so that :func:`stop` kills everything
    it starts and no terminal prompt (ssh, a credential helper) can block it."""
    args = [os.fspath(part) for part in command]
    if not args:
        raise ValueError("an empty command line was given")
    try:
        return subprocess.Popen(
            args,
            cwd=os.fspath(cwd) if cwd is not None else None,
            env=dict(env) if env is not None else None,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError, OSError) as exc:
        if cwd is not None and not os.path.isdir(cwd):
            raise CommandError(
                f"cannot run `{describe(args)}`: its working directory {os.fspath(cwd)} does "
                "not exist or is not a directory",
                args,
                hint="pass an existing directory",
            ) from exc
        why = "is not installed or not on PATH"
        if isinstance(exc, PermissionError):
            why = "is not executable"
        elif not isinstance(exc, FileNotFoundError):
            why = f"cannot be started ({exc.strerror or exc})"
        raise CommandNotFoundError(
            f"cannot run `{describe(args)}`: {args[0]} {why}",
            args,
            hint=hint or f"install {os.path.basename(args[0])} or put it on PATH",
        ) from exc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a program from :func:`start_command` and everything it started (its process
    group); what is already gone is ignored."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()


def run_command(
    command: CommandLine,
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    input: bytes | None = None,
    output: IO[bytes] | None = None,
    check: bool = True,
    hint: str = "",
) -> CommandResult:
    """Run ``command`` to completion and return its :class:`CommandResult`.

    - ``timeout``: seconds (None: no limit); past it the program and everything it started are
      killed and :class:`CommandTimeoutError` is raised.
    - ``input``: bytes for its stdin (else stdin is empty).
    - ``output``: a binary file that receives stdout and stderr (a log); otherwise both are
      captured into the result.
    - ``check``: raise :class:`CommandFailedError` on a non-zero exit (else the caller looks at
      ``returncode``).
    - ``hint``: what the user should do, appended to every error message.

    Missing programs always raise :class:`CommandNotFoundError`."""
    _check_timeout(timeout)
    args = tuple(os.fspath(part) for part in command)
    logger.debug("running %s (cwd=%s)", describe(args), cwd)
    proc = start_command(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=output if output is not None else subprocess.PIPE,
        stderr=subprocess.STDOUT if output is not None else subprocess.PIPE,
        hint=hint,
    )
    with proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc)
            out, err = _drain(proc)
            raise CommandTimeoutError(
                f"`{describe(args)}` did not finish within {timeout:g} s; it was stopped "
                "together with everything it started",
                args,
                stdout=out,
                stderr=err,
                hint=hint or "raise the time limit if it is merely slow",
            ) from None
        except BaseException:
            stop(proc)  # KeyboardInterrupt and the like: leave nothing running behind us
            raise
    result = CommandResult(args, proc.returncode, out or b"", err or b"", hint)
    return result.check() if check else result


def _drain(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What a killed program printed before it died (bounded wait: a grandchild outside its
    group might hold the pipes open)."""
    try:
        out, err = proc.communicate(timeout=_DRAIN_S)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        logger.warning("pid %s: output pipes still open after kill; not waiting", proc.pid)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_DRAIN_S)
        return b"", b""
    return out or b"", err or b""
