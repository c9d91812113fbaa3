"""Fixtures of the API server tests: tiny real models (a causal LM, a BERT encoder, a progress
regressor, an exported retriever over the bundled real corpus), an app factory, and a live
uvicorn server on 127.0.0.1 for the clients that need a socket (curl, the openai package)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import tiny_models  # tests/ is on sys.path


@pytest.fixture(autouse=True)
def _no_server_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A progress model or a token set in the caller's environment would change every answer."""
    monkeypatch.delenv("LEANPROGRESS_MODEL", raising=False)
    monkeypatch.delenv("LEAN_DOJO_V2_API_TOKEN", raising=False)


@pytest.fixture(scope="session")
def tiny_causal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models.build_tiny_causal(tmp_path_factory.mktemp("api_tiny_causal"))


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from models.retrieval_fixtures import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("api_tiny_bert"))


@pytest.fixture(scope="session")
def progress_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lean_progress.tiny_bert import build_tiny_progress_model

    return build_tiny_progress_model(tmp_path_factory.mktemp("api_tiny_progress"))


@pytest.fixture(scope="session")
def retriever_dir(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path) -> Path:
    """An exported retriever: the tiny encoder over the bundled real corpus (185 premises)."""
    from lean_dojo_v2.data import Corpus, sample_dataset_path
    from lean_dojo_v2.models.premise_index import PremiseIndex, export_retriever
    from lean_dojo_v2.models.retrieval import load_encoder

    encoder = load_encoder(str(tiny_bert_dir), device="cpu")
    corpus = Corpus.from_jsonl(sample_dataset_path() / "corpus.jsonl")
    index = PremiseIndex.build(corpus, encoder, show_progress=False)
    return export_retriever(tmp_path_factory.mktemp("api_retriever") / "export", encoder, index)


def make_app(models: dict[str, dict[str, Any]] | None = None, **settings: Any):
    """An app over ``models`` (no defaults unless asked), with ``settings`` of ServeConfig."""
    from lean_dojo_v2.external_api.config import ServeConfig
    from lean_dojo_v2.external_api.server import create_app

    settings.setdefault("default_models", False)
    return create_app(ServeConfig(models=models or {}, **settings))


CONSTANT = {"const": {"kind": "constant"}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread on a free loopback port; yields the base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
