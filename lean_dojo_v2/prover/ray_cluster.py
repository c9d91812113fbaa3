"""Layer 3 (prover): joining a Ray cluster, or starting a local Ray instance, for the Ray proving
backend (:mod:`.ray_backend`) and the Ray pool of GRPO's reward environments.

:func:`connect_ray` is the one way in: it checks the address first (:func:`check_ray_address`),
because ``ray.init(address=...)`` on an address where nothing answers retries for minutes
without a word; here that is one :class:`RayClusterUnreachableError` in seconds, before anything
is written. Addresses: ``"host:port"`` (the head's GCS port, ``ray start --head --port=6379``),
``"ray://host:10001"`` (Ray Client, from outside the cluster), ``"auto"`` (the cluster this
machine belongs to: ``RAY_ADDRESS`` or the last ``ray start``), or None (a local instance that
this call starts, unless Ray is running in this process already).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from types import ModuleType
from typing import Any

from ..errors import LeanDojoError

logger = logging.getLogger(__name__)

__all__ = [
    "CONNECT_TIMEOUT",
    "RayClusterUnreachableError",
    "RayNotInstalledError",
    "check_ray",
    "check_ray_address",
    "connect_ray",
    "import_ray",
]

CONNECT_TIMEOUT = 5.0
"""Seconds the address check waits for the head to accept a connection."""


class RayNotInstalledError(LeanDojoError, ImportError):
    """Ray was asked for (``--parallel ray``, ``reward_workers_backend: ray``) but is not
    installed."""


class RayClusterUnreachableError(LeanDojoError, ConnectionError):
    """The Ray address given (``--ray-address``, ``ray_address``) answers nothing: no head node
    listens there, or ``auto`` finds no cluster on this machine."""


def import_ray() -> ModuleType:
    """The ``ray`` module, or :class:`RayNotInstalledError`."""
    try:
        import ray
    except ImportError:
        raise RayNotInstalledError(
            "Ray is not installed: pip install 'lean-dojo-v2[ray]' (or use the default process "
            "workers)"
        ) from None
    return ray


def _endpoint(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``host:port`` or ``ray://host:port``; None when ``address`` has no
    port to check."""
    text = address.removeprefix("ray://").strip()
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def _auto_address() -> str:
    """The address ``auto`` stands for: ``RAY_ADDRESS``, else what Ray finds on this machine."""
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env and env != "auto":
        return env
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
    except ImportError:  # Ray's layout changed: ray.init finds it (or says why) itself
        return "auto"
    try:
        return str(canonicalize_bootstrap_address_or_die("auto"))
    except ConnectionError as exc:
        raise RayClusterUnreachableError(
            f"--ray-address auto finds no Ray cluster on this machine ({exc}); start one "
            "(ray start --head), set RAY_ADDRESS, give the head's host:port, or leave "
            "--ray-address out to start a local Ray instance"
        ) from None


# What every HTTP/2 client sends first (RFC 9113 §3.4), then an empty SETTINGS frame. A gRPC
# server (a Ray head's GCS port, a Ray Client server) answers with a SETTINGS frame of its own.
_HTTP2_GREETING = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_SETTINGS_FRAME = 4


def _speaks_grpc(conn: socket.socket, timeout: float) -> str | None:
    """None when the server on ``conn`` greets back as an HTTP/2 (gRPC) server within
    ``timeout`` seconds; otherwise why not, in a few words."""
    conn.settimeout(timeout)
    try:
        conn.sendall(_HTTP2_GREETING)
        head = b""
        while len(head) < 9:  # a frame header: length (3), type (1), flags (1), stream (4)
            chunk = conn.recv(9 - len(head))
            if not chunk:
                return "it accepted the connection and closed it"
            head += chunk
    except TimeoutError:
        return f"it accepted the connection but said nothing within {timeout:g} s"
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()
    if head[3] != _SETTINGS_FRAME:
        return "what answers there is not a gRPC server"
    return None


def check_ray_address(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise :class:`RayClusterUnreachableError` unless a gRPC server (a Ray head's GCS port,
    or a Ray Client server for ``ray://``) answers at ``address`` within ``timeout`` seconds
    (``auto`` resolved first). A port that accepts and then says nothing (another program, a
    firewall's tarpit) would otherwise leave ``ray.init`` waiting for minutes."""
    resolved = _auto_address() if address.strip() == "auto" else address
    endpoint = _endpoint(resolved)
    if endpoint is None:
        if resolved != "auto":
            raise RayClusterUnreachableError(
                f"{address!r} is not a Ray address: give the head node's host:port (e.g. "
                "10.0.0.1:6379), ray://host:10001, or auto"
            )
        return
    host, port = endpoint
    # Under RAY_USE_TLS the head speaks TLS first: a plain greeting proves nothing there.
    tls = os.environ.get("RAY_USE_TLS", "").strip().lower() in {"1", "true"}
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            why = None if tls else _speaks_grpc(conn, timeout)
    except OSError as exc:
        if isinstance(exc, TimeoutError):
            why = f"no answer within {timeout:g} s"
        else:
            why = (exc.strerror or str(exc)).lower()
    if why is not None:
        raise RayClusterUnreachableError(
            f"no Ray cluster answers at {resolved} ({why}): start its head there (ray start "
            "--head --port=PORT), check the address (--ray-address, ray_address), or leave it "
            "out to start a local Ray instance"
        ) from None


def check_ray(address: str | None) -> None:
    """Every check that asking for Ray can fail before work starts: Ray installed, and the
    address (when one is given and Ray is not already running in this process) answering."""
    ray = import_ray()
    if address is not None and not ray.is_initialized():
        check_ray_address(address)


def connect_ray(address: str | None) -> bool:
    """Join the cluster at ``address`` or start a local Ray instance (None), unless Ray is running
    in this process already; True when this call connected (the caller then shuts Ray down when
    done)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
    if address is None:
        # A local instance: its workers import our factories by module name, so they get this
        # process's import path (tests, scripts run from a checkout). A cluster's nodes have
        # their own environment: lean-dojo-v2 installed there (docs/proving.md).
        path = os.pathsep.join(p for p in sys.path if p)
        kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
    else:
        check_ray_address(address)
        kwargs["address"] = address
    ray.init(**kwargs)
    if address is not None:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        cpus = sum(float(n.get("Resources", {}).get("CPU", 0)) for n in nodes)
        logger.info(
            "joined the Ray cluster at %s: %d node(s), %g CPU(s)", address, len(nodes), cpus
        )
    return True
