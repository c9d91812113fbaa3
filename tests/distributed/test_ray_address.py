"""A Ray address where nothing answers (``127.0.0.1:1``): ``prove``, ``eval prove`` and ``train
grpo`` (``reward_workers_backend: ray``) end in one line on stderr with exit status 1, in
seconds (``ray.init`` alone would retry for minutes), and write nothing: no database record, no
output or working directory. So does an address where a gRPC server other than Ray's answers
(fake local gRPC servers; a Ray Client port given without ``ray://`` is named). The Python calls
raise the same typed error. No Ray starts here."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prover._oracle_server import one_line_error, repo_with_sorries
from prover.pipeline_oracle import OracleSpec

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.prover.parallel import ReplayEnvSpec, prove_theorems
from lean_dojo_v2.prover.ray_cluster import RayClusterUnreachableError, check_ray_address
from lean_dojo_v2.trainer.rl.rewards import open_reward_context

pytestmark = pytest.mark.distributed

SAMPLE = str(sample_dataset_path())
NOBODY = "127.0.0.1:1"
SECONDS = 15  # the check waits 5 s at most for a connection; the rest is start-up


def test_prove_with_an_address_that_answers_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    theorems = [t for t in load_theorems(SAMPLE) if t.traced_tactics][:2]
    repo = repo_with_sorries(tmp_path / "repo", theorems)
    db_path = tmp_path / "db.sqlite"
    with DynamicDatabase(db_path) as db:
        db.add_repository(SAMPLE)
    before = db_path.read_bytes()
    t = time.monotonic()
    line = one_line_error(
        ["prove", "--data", SAMPLE, "--parallel", "ray", "--ray-address", NOBODY]
        + ["--db", str(db_path), "--write-back", str(repo), "--out", str(tmp_path / "work")],
        capsys,
    )
    assert time.monotonic() - t < SECONDS
    assert f"no Ray cluster answers at {NOBODY}" in line and "ray start --head" in line
    assert db_path.read_bytes() == before and not (tmp_path / "work").exists()


def test_eval_prove_with_an_address_that_answers_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval"
    t = time.monotonic()
    line = one_line_error(
        ["eval", "prove", "--benchmark", "minif2f-test", "--limit", "1", "--verifier", "recorded"]
        + ["--parallel", "ray", "--ray-address", NOBODY, "--out", str(out), "--no-progress"],
        capsys,
    )
    assert time.monotonic() - t < SECONDS
    assert f"no Ray cluster answers at {NOBODY}" in line
    assert not out.exists()


def test_train_grpo_with_ray_rewards_at_an_address_that_answers_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "grpo"
    t = time.monotonic()
    line = one_line_error(
        ["train", "grpo", "--data", SAMPLE, "--set", "reward_workers_backend=ray"]
        + ["--set", f"ray_address={NOBODY}", "--set", f"output_dir={out}"],
        capsys,
    )
    assert time.monotonic() - t < SECONDS
    assert f"no Ray cluster answers at {NOBODY}" in line and "ray_address" in line
    assert not out.exists()


def test_the_python_calls_raise_the_typed_error() -> None:
    theorems = [t for t in load_theorems(SAMPLE) if t.traced_tactics][:1]
    with pytest.raises(RayClusterUnreachableError, match="no Ray cluster answers"):
        prove_theorems(theorems, ReplayEnvSpec(SAMPLE), OracleSpec(SAMPLE), backend="ray",
                       ray_address=NOBODY, progress=False)  # fmt: skip
    with pytest.raises(RayClusterUnreachableError, match="no Ray cluster answers"):
        open_reward_context(theorems, backend="replay", workers="ray", ray_address=NOBODY)
    with pytest.raises(RayClusterUnreachableError, match="not a Ray address"):
        check_ray_address("nonsense")
    assert isinstance(RayClusterUnreachableError("x"), ConnectionError)


def test_where_the_reward_environments_live_is_not_in_the_fingerprint() -> None:
    """A GRPO run resumes with the reward environments on another cluster (or back home)."""
    from lean_dojo_v2.trainer.grpo_config import GRPOConfig
    from lean_dojo_v2.trainer.run_dir import config_fingerprint

    plan = {"data": "d"}
    local = config_fingerprint(GRPOConfig(), plan)
    on_ray = GRPOConfig(reward_workers_backend="ray", ray_address="10.0.0.1:6379")
    assert config_fingerprint(on_ray, plan) == local
    assert config_fingerprint(GRPOConfig(reward_envs=2, lr=1e-3), plan) != local


class _Listener:
    """A TCP server on a free local port that answers each connection with ``reply`` (None: it
    accepts and says nothing) and keeps it open until closed."""

    def __init__(self, reply: bytes | None) -> None:
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.reply, self.conns = reply, []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            if self.reply is not None:
                conn.recv(64)
                conn.sendall(self.reply)

    def close(self) -> None:
        for conn in self.conns:
            conn.close()
        self.sock.close()


# An HTTP/2 server's first frame: an empty SETTINGS frame (length 0, type 4, no flags, stream 0).
_SETTINGS = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (None, "it accepted the connection but said nothing within 0.5 s"),
        (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "not a gRPC server"),
    ],
)
def test_a_port_that_accepts_but_is_no_ray_head_is_refused_in_the_timeout(
    reply: bytes | None, why: str
) -> None:
    listener = _Listener(reply)
    try:
        started = time.monotonic()
        with pytest.raises(RayClusterUnreachableError, match="no Ray cluster answers") as err:
            check_ray_address(listener.address, timeout=0.5)
        assert why in str(err.value) and time.monotonic() - started < 3
    finally:
        listener.close()


class _GrpcServer:
    """A local gRPC server whose ``methods`` (``"/package.Service/Method"``) answer with an empty
    message: Ray's GCS (``GetClusterId``), a Ray Client server (``ClusterInfo``) or any other
    service (``grpc.health.v1.Health/Check``), as ``ray.init`` would meet them."""

    def __init__(self, *methods: str) -> None:
        from concurrent import futures

        import grpc

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        by_service: dict[str, dict[str, object]] = {}
        for path in methods:
            service, method = path.strip("/").split("/")
            by_service.setdefault(service, {})[method] = grpc.unary_unary_rpc_method_handler(
                lambda request, context: b""
            )
        self.server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(s, h) for s, h in by_service.items()]
        )
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def __enter__(self) -> _GrpcServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(grace=None)


GCS = "/ray.rpc.NodeInfoGcsService/GetClusterId"
RAY_CLIENT = "/ray.rpc.RayletDriver/ClusterInfo"
HEALTH = "/grpc.health.v1.Health/Check"


def test_ray_services_pass_the_check_at_their_own_scheme(monkeypatch) -> None:
    with _GrpcServer(GCS) as gcs, _GrpcServer(RAY_CLIENT) as client:
        check_ray_address(gcs.address, timeout=2)
        check_ray_address(f"ray://{client.address}", timeout=2)
    silent = _Listener(None)
    try:  # a TLS head answers a plain greeting with nothing useful: only the port is checked
        monkeypatch.setenv("RAY_USE_TLS", "1")
        check_ray_address(silent.address, timeout=0.5)
    finally:
        silent.close()


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_another_grpc_service_is_refused_in_seconds(scheme: str) -> None:
    with _GrpcServer(HEALTH) as other:
        started = time.monotonic()
        with pytest.raises(RayClusterUnreachableError, match="no Ray cluster answers") as err:
            check_ray_address(scheme + other.address, timeout=2)
    assert "neither Ray's GCS nor Ray Client" in str(err.value)
    assert time.monotonic() - started < 2


def test_a_ray_client_port_without_ray_scheme_and_a_gcs_port_with_it_are_named() -> None:
    with _GrpcServer(RAY_CLIENT) as client, _GrpcServer(GCS) as gcs:
        with pytest.raises(RayClusterUnreachableError, match="is a Ray Client server") as err:
            check_ray_address(client.address, timeout=2)
        assert f"give ray://{client.address}" in str(err.value)
        with pytest.raises(RayClusterUnreachableError, match="is a Ray head's GCS port") as err:
            check_ray_address(f"ray://{gcs.address}", timeout=2)
        assert f"without ray:// ({gcs.address})" in str(err.value)


def test_eval_prove_and_train_grpo_at_another_grpc_service_end_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the check, ``ray.init`` retries a server that is not Ray's GCS for minutes."""
    out, grpo = tmp_path / "eval", tmp_path / "grpo"
    with _GrpcServer(HEALTH) as other, _GrpcServer(RAY_CLIENT) as client:
        t = time.monotonic()
        line = one_line_error(
            ["eval", "prove", "--benchmark", "minif2f-test", "--limit", "1"]
            + ["--verifier", "recorded", "--parallel", "ray", "--ray-address", other.address]
            + ["--out", str(out), "--no-progress"],
            capsys,
        )
        assert f"no Ray cluster answers at {other.address}" in line
        line = one_line_error(
            ["train", "grpo", "--data", SAMPLE, "--set", "reward_workers_backend=ray"]
            + ["--set", f"ray_address={client.address}", "--set", f"output_dir={grpo}"],
            capsys,
        )
        assert "is a Ray Client server" in line and f"ray://{client.address}" in line
        assert time.monotonic() - t < SECONDS
    assert not out.exists() and not grpo.exists()


@pytest.mark.slow
def test_a_real_ray_head_passes_at_its_gcs_port_and_names_its_client_port() -> None:
    """The calls the check makes are the ones a real Ray head answers (about 10 s: one head)."""
    import socket

    from ray.cluster_utils import Cluster

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        client_port = s.getsockname()[1]
    head = {"num_cpus": 1, "ray_client_server_port": client_port, "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        check_ray_address(cluster.address)
        client = f"127.0.0.1:{client_port}"
        deadline = time.monotonic() + 30  # the head starts its Ray Client server after itself
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", client_port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        check_ray_address(f"ray://{client}")
        with pytest.raises(RayClusterUnreachableError, match=f"give ray://{client}"):
            check_ray_address(client)
        with pytest.raises(RayClusterUnreachableError, match="is a Ray head's GCS port"):
            check_ray_address(f"ray://{cluster.address}")
    finally:
        cluster.shutdown()
