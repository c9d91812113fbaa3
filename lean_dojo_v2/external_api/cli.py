"""``lean-dojo-v2 serve``: the API server (uvicorn) for LeanCopilot, editors and OpenAI clients.

The settings are a :class:`~lean_dojo_v2.external_api.config.ServeConfig`, read like every
command's config: ``--config FILE`` (YAML), then ``--set key=value``, then the flags below
(``--host``, ``--port``, ``--token``, ``--preload``), which win. ``--help-config`` lists every key.
Bad settings, a model ``--preload`` cannot load and an address it cannot listen on each end in
one line (exit 1) before the server says it is serving.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import logging
import os
import socket
from typing import Any

from ..config.cli import ParserT, add_config_options, add_help_config_option
from .errors import APIServerError, ServerAddressError

log = logging.getLogger(__name__)

__all__ = ["add_serve_parser", "cmd_serve"]


def add_serve_parser(sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Register the ``serve`` subcommand on ``sub`` (the top-level subparsers)."""
    p = sub.add_parser(
        "serve",
        help="serve models over HTTP (LeanCopilot /generate, /encode; /retrieve; OpenAI API)",
        description="Start the API server: LeanCopilot's /generate and /encode, "
        "lean-premise-server's /retrieve (with the GETs Lean's premise-selection client reads "
        "first), an OpenAI-compatible /v1/chat/completions, /health, "
        "/models and /metrics, over the models of the config (default: the bundled SmolLM2 as "
        "'default' and the bundled MiniLM as 'default-encoder', offline). Listens on "
        "127.0.0.1:23337 unless told otherwise. See docs/api_server.md.",
    )
    add_config_options(
        p,
        config_help="YAML file of ServeConfig keys (models, limits, batching); see configs/serve.yaml",
        set_help="override one ServeConfig key (repeatable): --set max_batch=16",
        output_dir=False,
    )
    add_help_config_option(p, "lean_dojo_v2.external_api.config:ServeConfig")
    p.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default 23337, LeanCopilot's)")
    p.add_argument(
        "--token",
        default=None,
        help="bearer token every route but /health requires (default: $LEAN_DOJO_V2_API_TOKEN "
        "when set, else none)",
    )
    p.add_argument("--preload", action="store_true", help="load every model before listening")
    p.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's log level (default info)",
    )
    p.add_argument(
        "--access-log",
        action="store_true",
        help="log a line per request (uvicorn's access log; off by default: it costs about as "
        "much server CPU as the rest of a /generate request; /metrics counts requests)",
    )
    p.set_defaults(func=cmd_serve)
    return p


def cmd_serve(args: argparse.Namespace) -> int:
    from ..config.cli import config_from_args
    from .config import TOKEN_ENV, ServeConfig

    flags: dict[str, Any] = {}
    for key in ("host", "port", "token"):
        if getattr(args, key) is not None:
            flags[key] = getattr(args, key)
    if args.preload:
        flags["preload"] = True
    config = config_from_args(args, ServeConfig, **flags)
    from .server import create_app

    app = create_app(config)  # a bad models entry fails here, before listening
    registry = app.state.server.registry
    if config.preload:
        registry.preload()  # a model that cannot load stops here, named, before listening
    token = config.token or os.environ.get(TOKEN_ENV, "").strip()
    sock = _listen(config.host, config.port)  # an address it cannot use: one line, no more
    if not token and not _is_loopback(config.host):
        log.warning(
            "serving on %s without a token: anyone who can reach it can use the models; set "
            "--token or %s",
            config.host,
            TOKEN_ENV,
        )
    port = sock.getsockname()[1]
    banner = (
        f"lean-dojo-v2 serve: serving {len(registry.models)} models "
        f"({', '.join(registry.names())}) on http://{_url_host(config.host)}:{port} "
        f"({'token required' if token else 'no token'})"
    )
    import uvicorn

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:  # listening: only now say so
                print(banner, flush=True)

    server = _Server(
        uvicorn.Config(
            app,
            log_level=args.log_level,
            access_log=bool(getattr(args, "access_log", False)),
        )
    )
    try:
        server.run(sockets=[sock])
    except SystemExit as exc:  # uvicorn exits this way when the app's start-up fails
        if exc.code not in (None, 0):
            raise APIServerError(
                f"the server stopped while starting on {config.host}:{port} (exit {exc.code}); "
                "see the log lines above"
            ) from None
    finally:
        sock.close()
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening, or a one-line :class:`ServerAddressError`
    saying what to change (checked before anything says it is serving)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except socket.gaierror as exc:
        raise ServerAddressError(
            f"cannot listen on host {host!r}: it does not resolve ({exc.strerror}); use --host "
            "127.0.0.1 or a name or address of this machine"
        ) from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            why = "the port is in use; stop what uses it or pick another --port"
        elif exc.errno == errno.EADDRNOTAVAIL:
            why = (
                f"{host} is not an address of this machine; use --host 127.0.0.1 or one of "
                "its addresses"
            )
        elif exc.errno == errno.EACCES:
            why = "this port needs privileges; pick --port 1024 or above"
        else:
            why = f"{exc.strerror or exc}; check --host and --port"
        raise ServerAddressError(f"cannot listen on {host}:{port}: {why}") from None


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
