"""One Pantograph REPL process driven over asyncio pipes.

:class:`ReplProcess` owns the OS process: it launches it (own process group), waits for
``ready.``, writes one compact JSON command line per request and hands reply lines back in FIFO
order. Reading is done in ``pipe_data_received`` with a growing buffer, so a line of any length
works (no ``StreamReader`` limit). stderr is drained continuously into a bounded ring buffer whose
tail goes into every error message. Nothing here restarts anything: that is
:class:`~lean_dojo_v2.interaction.pantograph.client.AsyncPantographClient`'s job.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, cast

import orjson

from ..types import EnvCrashedError

logger = logging.getLogger("lean_dojo_v2.interaction.pantograph")

READY = b"ready."
_MAX_STDERR_LINE = 4096

# Process groups of REPLs still running, killed at interpreter exit (a hung REPL would otherwise
# outlive us: it runs in its own session, so no terminal signal reaches it).
_running_groups: set[int] = set()
_atexit_registered = False


def _kill_leftovers() -> None:
    for pgid in list(_running_groups):
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    _running_groups.clear()


def _register(pgid: int) -> None:
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(_kill_leftovers)
        _atexit_registered = True
    _running_groups.add(pgid)


class ReplDiedError(EnvCrashedError):
    """The REPL process exited (or closed stdout) while a reply was awaited."""


class ReplTimeoutError(EnvCrashedError):
    """No reply within the client-side time limit; the process was killed (its states are lost)."""

    def __init__(self, message: str, timeout: float) -> None:
        super().__init__(message)
        self.timeout = timeout


class ReplProtocolError(EnvCrashedError):
    """The REPL wrote something that is not one JSON object per line; the process was killed."""


class ReplStartError(EnvCrashedError):
    """The REPL did not print ``ready.`` (it exited, printed something else, or took longer than
    the ready timeout). The message carries the tail of its stderr."""


class _ReplPipes(asyncio.SubprocessProtocol):
    """Line splitting for stdout, a ring buffer for stderr, FIFO hand-off of reply lines."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stderr_lines: int) -> None:
        self.loop = loop
        self.buf = bytearray()
        self.lines: deque[bytes] = deque()  # complete lines nobody waits for (yet)
        self.waiters: deque[asyncio.Future[bytes]] = deque()
        self.stderr: deque[bytes] = deque(maxlen=max(1, stderr_lines))
        self.err_partial = bytearray()
        self.err_bytes = 0
        self.stdout_closed = False
        self.exited = False
        self.closed: asyncio.Future[None] = loop.create_future()
        self.transport: asyncio.SubprocessTransport | None = None

    # -- asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # subprocess_exec: a SubprocessTransport

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self._stdout(data)
        else:
            self._stderr(data)

    def _stdout(self, data: bytes) -> None:
        nl = data.find(b"\n")
        if nl < 0:
            self.buf += data
            return
        start = 0
        while nl >= 0:
            if self.buf:
                self.buf += data[start:nl]
                line = bytes(self.buf)
                self.buf.clear()
            else:
                line = data[start:nl]
            self._deliver(line)
            start = nl + 1
            nl = data.find(b"\n", start)
        if start < len(data):
            self.buf += data[start:]

    def _deliver(self, line: bytes) -> None:
        # One waiter per request line, in order. A waiter already done (its caller was cancelled)
        # still owns this reply: dropping it keeps every later reply with its own request.
        if self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(line)
            return
        self.lines.append(line)

    def _stderr(self, data: bytes) -> None:
        self.err_bytes += len(data)
        parts = data.split(b"\n")
        if len(parts) == 1:
            if len(self.err_partial) < _MAX_STDERR_LINE:
                self.err_partial += data[: _MAX_STDERR_LINE - len(self.err_partial)]
            return
        first = parts[0]
        if self.err_partial:
            self.err_partial += first[: max(0, _MAX_STDERR_LINE - len(self.err_partial))]
            first = bytes(self.err_partial)
            self.err_partial.clear()
        ring = self.stderr
        ring.append(first[:_MAX_STDERR_LINE])
        # Only the last maxlen lines can survive: skip the rest of a flood without copying it.
        middle = parts[1:-1]
        keep = ring.maxlen or len(middle)  # the ring is made with a maxlen
        if len(middle) > keep:
            middle = middle[-keep:]
        for p in middle:
            ring.append(p[:_MAX_STDERR_LINE])
        last = parts[-1]
        if last:
            self.err_partial += last[:_MAX_STDERR_LINE]

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.stdout_closed = True
            self._fail_waiters()

    def process_exited(self) -> None:
        # Replies may still sit in the pipe: waiters fail only at stdout EOF (pipe_connection_lost).
        self.exited = True

    def connection_lost(self, exc: Exception | None) -> None:
        self.exited = True
        self._fail_waiters()
        if not self.closed.done():
            self.closed.set_result(None)

    def _fail_waiters(self) -> None:
        # A reply that already arrived in full stays deliverable; everyone else learns of the end.
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_exception(ReplDiedError("the Pantograph REPL closed its output"))

    # -- helpers
    def stderr_tail(self, n: int | None = None) -> str:
        lines = list(self.stderr)
        if self.err_partial:
            lines.append(bytes(self.err_partial))
        if n is not None:
            lines = lines[-n:]
        return "\n".join(b.decode("utf-8", "replace") for b in lines)

    def next_line(self) -> asyncio.Future[bytes]:
        fut: asyncio.Future[bytes] = self.loop.create_future()
        if self.lines:
            fut.set_result(self.lines.popleft())
        elif self.stdout_closed:
            fut.set_exception(ReplDiedError("the Pantograph REPL closed its output"))
        else:
            self.waiters.append(fut)
        return fut


_COMMANDS: dict[str, bytes] = {}  # validated command names, encoded


def _expire(fut: asyncio.Future[Any], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


def launch_directory(
    binary: str | os.PathLike[str] | None, project: str | os.PathLike[str] | None
) -> str | None:
    """Working directory of the REPL: the project when there is one (its ``lean-toolchain``
    decides the toolchain and ``lake`` finds its packages); else the binary's own directory when
    a ``lean-toolchain`` lies beside it (as PyPantograph ships it, and launches from there), so
    elan resolves the Lean the binary was built with instead of its default toolchain; else
    None (inherit ours)."""
    if project is not None:
        return os.fspath(project)
    if binary is not None:
        directory = os.path.dirname(os.path.abspath(os.fspath(binary)))
        if os.path.isfile(os.path.join(directory, "lean-toolchain")):
            return directory
    return None


class ReplProcess:
    """A started REPL process. Use :meth:`launch`; then :meth:`request` (one at a time, or
    pipelined: replies are matched in FIFO order), :meth:`kill` / :meth:`close`."""

    def __init__(
        self,
        command: tuple[str, ...],
        transport: asyncio.SubprocessTransport,
        pipes: _ReplPipes,
        stderr_tail_lines: int,
    ) -> None:
        self.command = command
        self.transport = transport
        self.pipes = pipes
        self.pid: int = transport.get_pid()
        # Launched with stdin=PIPE: pipe 0 is there and it is a write pipe.
        self.stdin = cast(asyncio.WriteTransport, transport.get_pipe_transport(0))
        self.requests = 0
        self.started_at = time.monotonic()
        self.stderr_tail_lines = stderr_tail_lines
        self._dead_reason: str | None = None
        self._watched: asyncio.Future[bytes] | None = None
        self._deadline = 0.0
        self._watch_at = 0.0
        self._watch_handle: asyncio.TimerHandle | None = None

    # ---------------------------------------------------------------------------------- launch
    @classmethod
    async def launch(
        cls,
        command: Sequence[str],
        args: Sequence[str] = (),
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        ready_timeout: float = 600.0,
        stderr_lines: int = 200,
        stderr_tail_lines: int = 40,
    ) -> ReplProcess:
        """Start ``command + args`` and wait (at most ``ready_timeout`` s) for ``ready.``."""
        loop = asyncio.get_running_loop()
        full = (*command, *args)
        try:
            transport, pipes = await loop.subprocess_exec(
                lambda: _ReplPipes(loop, stderr_lines),
                *full,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=os.fspath(cwd) if cwd is not None else None,
                env=dict(env) if env is not None else None,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError) as exc:
            from ..types import LeanNotFoundError
            from .locate import INSTALL_HINT

            raise LeanNotFoundError(f"cannot run {full[0]}: {exc}. {INSTALL_HINT}") from exc
        proc = cls(tuple(full), transport, pipes, stderr_tail_lines)
        _register(proc.pid)
        logger.debug("launched Pantograph REPL pid %s: %s", proc.pid, " ".join(full))
        try:
            await proc._wait_ready(ready_timeout)
        except BaseException:
            await proc.kill()
            raise
        return proc

    async def _wait_ready(self, ready_timeout: float) -> None:
        deadline = time.monotonic() + ready_timeout
        loop = asyncio.get_running_loop()
        while True:
            fut = self.pipes.next_line()
            handle = loop.call_at(
                loop.time() + max(0.0, deadline - time.monotonic()),
                _expire,
                fut,
                TimeoutError(),
            )
            try:
                line = await fut
            except TimeoutError:
                await self.kill()
                raise ReplStartError(
                    f"the Pantograph REPL did not print 'ready.' within {ready_timeout:g} s "
                    f"(command: {' '.join(self.command)}); it was killed."
                    + self._stderr_note()
                    + " Importing large libraries (Mathlib) can take minutes: raise "
                    "PantographConfig.ready_timeout if it is merely slow."
                ) from None
            except ReplDiedError:
                code = await self._exit_code()
                raise ReplStartError(
                    f"the Pantograph REPL exited with code {code} before printing 'ready.' "
                    f"(command: {' '.join(self.command)})."
                    + self._stderr_note()
                    + " Usual causes: a module that is not built or not on LEAN_PATH, or .olean "
                    "files built by another Lean version."
                ) from None
            finally:
                handle.cancel()
            text = line.strip()
            if text == READY:
                return
            if not text:
                continue
            await self.kill()
            raise ReplStartError(
                "the Pantograph REPL printed "
                f"{text[:300].decode('utf-8', 'replace')!r} instead of 'ready.' "
                f"(command: {' '.join(self.command)})." + self._stderr_note()
            )

    # --------------------------------------------------------------------------------- requests
    @property
    def alive(self) -> bool:
        return self._dead_reason is None and not self.pipes.exited and not self.pipes.stdout_closed

    def stderr_tail(self, n: int | None = None) -> str:
        return self.pipes.stderr_tail(n if n is not None else self.stderr_tail_lines)

    def _stderr_note(self) -> str:
        tail = self.stderr_tail()
        return (
            f"\n--- REPL stderr (last lines) ---\n{tail}\n---"
            if tail.strip()
            else " (stderr empty)"
        )

    @staticmethod
    def encode(cmd: str, payload: object) -> bytes:
        """``cmd payload`` as one line: compact JSON, raw UTF-8, never a blank line.

        A payload is always sent (``{}`` for None): Pantograph's ``parseCommand`` (Main.lean)
        takes the command name as everything before the first space of the line with its
        newline, so a bare ``stat`` is answered ``Unknown command stat\\n``."""
        head = _COMMANDS.get(cmd)
        if head is None:
            if not cmd or cmd.split() != [cmd] or not cmd.isprintable():
                raise ValueError(f"bad Pantograph command name {cmd!r}")
            head = _COMMANDS[cmd] = cmd.encode()
        if payload is None:
            return head + b" {}\n"
        return b"%s %s\n" % (head, orjson.dumps(payload))

    def send(self, line: bytes) -> asyncio.Future[bytes]:
        """Write one encoded request; the future gets its reply line (FIFO)."""
        if not self.alive:
            fut: asyncio.Future[bytes] = self.pipes.loop.create_future()
            fut.set_exception(
                ReplDiedError(self._dead_reason or "the Pantograph REPL is not running")
            )
            return fut
        if self.pipes.lines:
            stray = self.pipes.lines.popleft()
            self._dead_reason = "unexpected output"
            fut = self.pipes.loop.create_future()
            fut.set_exception(
                ReplProtocolError(
                    "the Pantograph REPL wrote a line nobody asked for: "
                    f"{stray[:300].decode('utf-8', 'replace')!r}"
                )
            )
            return fut
        fut = self.pipes.next_line()
        self.requests += 1
        self.stdin.write(line)
        return fut

    async def request(self, cmd: str, payload: object, timeout: float) -> dict[str, Any]:
        """Send one command and return its decoded reply (error objects included). Raises
        :class:`ReplTimeoutError` (after killing the process), :class:`ReplDiedError`,
        :class:`ReplProtocolError` (after killing it)."""
        return await self.receive(self.send(self.encode(cmd, payload)), cmd, timeout)

    # One watchdog timer per process instead of one per request: the timer is only re-armed
    # when it fires early (the watched reply's deadline moved on) or must fire sooner.
    def _watch(self, fut: asyncio.Future[bytes], timeout: float) -> None:
        loop = self.pipes.loop
        deadline = loop.time() + timeout
        self._watched = fut
        self._deadline = deadline
        if self._watch_handle is None or self._watch_at > deadline:
            if self._watch_handle is not None:
                self._watch_handle.cancel()
            self._watch_handle = loop.call_at(deadline, self._on_watchdog)
            self._watch_at = deadline

    def _on_watchdog(self) -> None:
        self._watch_handle = None
        fut = self._watched
        if fut is None or fut.done():
            return
        loop = self.pipes.loop
        if loop.time() >= self._deadline:
            fut.set_exception(TimeoutError())
        else:
            self._watch_handle = loop.call_at(self._deadline, self._on_watchdog)
            self._watch_at = self._deadline

    async def receive(self, fut: asyncio.Future[bytes], cmd: str, timeout: float) -> dict[str, Any]:
        """Await the reply ``fut`` (from :meth:`send`) for at most ``timeout`` seconds."""
        self._watch(fut, timeout)
        try:
            line = await fut
        except TimeoutError:
            await self.kill()
            raise ReplTimeoutError(
                f"no answer to {cmd} within {timeout:g} s; the Pantograph REPL was killed and its "
                "proof states are lost." + self._stderr_note(),
                timeout,
            ) from None
        except ReplDiedError:
            code = await self._exit_code()
            self._dead_reason = f"exited with code {code}"
            raise ReplDiedError(
                f"the Pantograph REPL died during {cmd} (exit code {code}); its proof states are "
                "lost." + self._stderr_note()
            ) from None
        finally:
            self._watched = None
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            value = None
        if not isinstance(value, dict):
            await self.kill()
            raise ReplProtocolError(
                f"the Pantograph REPL answered {cmd} with a line that is not a JSON object: "
                f"{line[:300].decode('utf-8', 'replace')!r}; it was killed." + self._stderr_note()
            )
        return value

    # ----------------------------------------------------------------------------- life cycle
    async def _exit_code(self, wait: float = 1.0) -> int | None:
        """Exit status once the process is gone (waiting briefly so stderr is fully read)."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.pipes.closed), wait)
        return self.transport.get_returncode()

    def rss_bytes(self) -> int | None:
        """Resident memory of the REPL and its children; None when unavailable."""
        from ...system.processes import tree_rss

        return tree_rss(self.pid)

    async def kill(self) -> None:
        """SIGKILL the whole process group and wait (briefly) until the pipes are closed."""
        if self._dead_reason is None:
            self._dead_reason = "killed"
        if self.transport.get_returncode() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self.transport.kill()
        await self._finish(2.0)

    async def close(self, grace: float = 2.0) -> None:
        """Clean shutdown: close stdin (EOF ends the REPL), then kill if it lingers."""
        if self.transport.get_returncode() is None and self.alive:
            with contextlib.suppress(Exception):
                self.stdin.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.pipes.closed), grace)
        self._dead_reason = self._dead_reason or "closed"
        if not self.pipes.closed.done() or self.transport.get_returncode() is None:
            await self.kill()
        else:
            _running_groups.discard(self.pid)
            self.transport.close()

    async def _finish(self, wait: float) -> None:
        if self._watch_handle is not None:
            self._watch_handle.cancel()
            self._watch_handle = None
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.pipes.closed), wait)
        if not self.pipes.closed.done():
            # Something still holds our pipes (a grandchild outside the group): stop reading.
            logger.warning("Pantograph REPL pid %s: pipes still open after kill", self.pid)
        else:
            _running_groups.discard(self.pid)
        self.transport.close()
