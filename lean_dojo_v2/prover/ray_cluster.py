"""Layer 3 (prover): joining a Ray cluster, or starting a local Ray instance, for the Ray proving
backend (:mod:`.ray_backend`) and the Ray pool of GRPO's reward environments.

:func:`connect_ray` is the one way in: it checks the address first (:func:`check_ray_address`),
because ``ray.init(address=...)`` on an address where nothing answers, or where a gRPC server
other than Ray's answers, retries for minutes without a word (and takes no time limit); here that
is one :class:`RayClusterUnreachableError` in seconds, before anything is written. Addresses:
``"host:port"`` (the head's GCS port, ``ray start --head --port=6379``), ``"ray://host:10001"``
(Ray Client, from outside the cluster), ``"auto"`` (the cluster this
machine belongs to: ``RAY_ADDRESS`` or the last ``ray start``), or None (a local instance that
this call starts, unless Ray is running in this process already).
"""

from __future__ import annotations

import importlib
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
"""Seconds each step of the address check waits: the connection, the HTTP/2 greeting, the
call only Ray answers."""


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


# What answers a gRPC call at a port: a Ray head's GCS (what ``host:port`` joins), a Ray Client
# server (what ``ray://host:port`` joins), or neither.
_GCS, _CLIENT = "gcs", "client"


def _grpc_target(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _ray_service(host: str, port: int, first: str, timeout: float) -> str | None:
    """Which Ray service answers at ``host:port`` (:data:`_GCS` or :data:`_CLIENT`, ``first``
    asked first), asked with the cheap call Ray itself makes first (the GCS's ``GetClusterId``,
    Ray Client's ``PING``); None when the gRPC server there serves neither. Ray's GCS retries
    any other answer for minutes inside ``ray.init``, which is why it is asked here."""
    try:  # by name: grpcio and Ray's generated modules carry no type information
        grpc = importlib.import_module("grpc")
        gcs = importlib.import_module("ray.core.generated.gcs_service_pb2")
        gcs_grpc = importlib.import_module("ray.core.generated.gcs_service_pb2_grpc")
        client = importlib.import_module("ray.core.generated.ray_client_pb2")
        client_grpc = importlib.import_module("ray.core.generated.ray_client_pb2_grpc")
    except ImportError:  # plain `ray` without grpcio, or Ray's layout changed: greeting only
        return first

    def ask(service: str, channel: Any) -> object:
        if service == _GCS:
            stub = gcs_grpc.NodeInfoGcsServiceStub(channel)
            return stub.GetClusterId(gcs.GetClusterIdRequest(), timeout=timeout)
        ping = client.ClusterInfoRequest(type=client.ClusterInfoType.PING)
        return client_grpc.RayletDriverStub(channel).ClusterInfo(ping, timeout=timeout)

    order = (first, _CLIENT if first == _GCS else _GCS)
    with grpc.insecure_channel(_grpc_target(host, port)) as channel:
        for service in order:
            try:
                ask(service, channel)
            except grpc.RpcError as exc:
                code = exc.code()
                if code == grpc.StatusCode.UNIMPLEMENTED:
                    continue  # another gRPC service: try the other Ray service
                if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE):
                    return None
                # Any other refusal (a token-authenticated cluster's UNAUTHENTICATED) is still
                # the service's own answer: ray.init says the rest.
            return service
    return None


def _wrong_service(
    resolved: str, host: str, port: int, expected: str, timeout: float
) -> str | None:
    """Why ``resolved`` does not serve the ``expected`` Ray service; None when it does."""
    found = _ray_service(host, port, expected, timeout)
    if found == expected:
        return None
    where = _grpc_target(host, port)
    if found == _CLIENT:
        return (
            f"{resolved} is a Ray Client server, which is joined through ray://: give "
            f"ray://{where} (--ray-address, ray_address), or the head's GCS port as HOST:PORT"
        )
    if found == _GCS:
        return (
            f"{resolved} is a Ray head's GCS port, not a Ray Client server: give it without "
            f"ray:// ({where}), or the head's Ray Client port as ray://HOST:PORT (10001 by default)"
        )
    return (
        f"no Ray cluster answers at {resolved} (a gRPC server answers there, but neither Ray's "
        f"GCS nor Ray Client within {timeout:g} s: another program on that port?): check the "
        "address (--ray-address, ray_address): a head's GCS port (ray start --head "
        "--port=PORT) as HOST:PORT, its Ray Client port as ray://HOST:PORT"
    )


def check_ray_address(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise :class:`RayClusterUnreachableError` unless a Ray head's GCS (``host:port``) or a
    Ray Client server (``ray://host:port``) answers at ``address`` within ``timeout`` seconds a
    step (``auto`` resolved first). A port that accepts and then says nothing (another program,
    a firewall's tarpit), or another gRPC service, would otherwise leave ``ray.init`` waiting
    for minutes; a Ray Client port given without ``ray://`` (or a GCS port with it) is named."""
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
    if not tls:
        expected = _CLIENT if resolved.strip().startswith("ray://") else _GCS
        wrong = _wrong_service(resolved, host, port, expected, timeout)
        if wrong is not None:
            raise RayClusterUnreachableError(wrong)


def check_ray(address: str | None) -> None:
    """Every check that asking for Ray can fail before work starts: Ray installed, and the
    address (when one is given and Ray is not already running in this process) answering as
    the Ray service its scheme names."""
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
