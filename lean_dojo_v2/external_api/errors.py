"""Layer 4 (external_api): the server's typed errors.

Each carries the HTTP status it is answered with (``status``) and, for an overloaded server, how
many seconds a client should wait (``retry_after``). The message is what the client reads in
``detail`` (and, on the OpenAI-compatible routes, in ``error.message``): one line saying what to
change. ``param`` (the request field at fault, as OpenAI names it: ``messages[0].content``) and
``code`` (OpenAI's ``error.code``: ``context_length_exceeded``, ...) fill OpenAI's error object on
the ``/v1`` routes; None where there is none.
"""

from __future__ import annotations

from ..errors import ConfigError, LeanDojoError


class APIServerError(LeanDojoError):
    """Base of the errors of ``lean_dojo_v2.external_api``; answered with HTTP ``status``."""

    status = 500

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status
        self.param = param
        self.code = code

    def __reduce__(self) -> tuple[object, ...]:  # keep the status through pickling
        return (_rebuild, (type(self), str(self), self.status, self.param, self.code))


def _rebuild(
    cls: type[APIServerError],
    message: str,
    status: int,
    param: str | None = None,
    code: str | None = None,
) -> APIServerError:
    return cls(message, status=status, param=param, code=code)


class UnknownModelError(APIServerError, KeyError):
    """A request names a model the server does not serve (HTTP 404); the message lists the
    served names (``GET /models``)."""

    status = 404

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class BadAPIRequestError(APIServerError, ValueError):
    """A request the server refuses before any model sees it (HTTP 400, 413 or 422): an input
    over ``max_input_chars``, ``k`` or ``n`` over the limits, ``use_reward`` without a progress
    model, a model of the wrong kind for the route, a chat parameter the server does not
    support. On the ``/v1`` routes it is always a 400, as OpenAI answers."""

    status = 400


class ServerOverloadedError(APIServerError):
    """The model's queue is full, or a request waited in it past its deadline (HTTP 503 with
    ``Retry-After``): retry after the given seconds, or raise ``max_queue`` /
    ``queue_timeout_s``."""

    status = 503

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_overloaded, (type(self), str(self), self.retry_after))


def _rebuild_overloaded(
    cls: type[ServerOverloadedError], message: str, retry_after: float
) -> ServerOverloadedError:
    return cls(message, retry_after=retry_after)


class UpstreamModelError(APIServerError):
    """An upstream model server (OpenAI-compatible, Anthropic, Google) could not be reached,
    timed out after its retries (HTTP 504), answered an error or something that is not a
    completion (HTTP 502). The message names the upstream URL and what to check."""

    status = 502


class ModelRegistryError(APIServerError, ConfigError):
    """An entry of the server config's ``models`` is unusable: unknown ``kind``, an unknown or
    missing option, a name used twice. Raised when the server starts, before it listens."""


class ModelLoadError(APIServerError):
    """A served model could not be loaded (missing or broken weights, an export whose files do
    not agree): HTTP 503 on the request that needed it, or ``serve --preload`` stops before
    listening. The message names the model, what was loaded and why."""

    status = 503


class ServerAddressError(APIServerError, ConfigError):
    """``serve`` cannot listen on the configured ``host`` and ``port`` (the port is in use, the
    host is not an address of this machine, the name does not resolve). Raised before the
    server prints that it is serving; the message says which flag to change."""
