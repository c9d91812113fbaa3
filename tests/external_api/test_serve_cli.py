"""``lean-dojo-v2 serve``: its config (the shipped YAML files included), one-line errors, a real
start on a free port, and the upstream layout's ``uvicorn server:app`` from
``lean_dojo_v2/external_api/python``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lean_dojo_v2.cli import main

from .conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_help_config_lists_the_keys(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["serve", "--help-config"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for key in ('host = "127.0.0.1"', "port = 23337", "max_batch", "models", "max_k = 1024"):
        assert key in out


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (["--set", "max_btach=3"], "did you mean 'max_batch'"),
        (["--set", "max_batch=0"], "max_batch"),
        (["--set", "port=99999"], "port"),
        (["--set", "queue_timeout_s=nan"], "finite"),
    ],
)
def test_bad_settings_are_one_line(capsys, argv, word) -> None:
    assert main(["serve", *argv]) == 1
    err = capsys.readouterr().err.strip()
    assert word in err and len(err.splitlines()) == 1


def test_a_bad_models_entry_stops_serve_before_it_listens(tmp_path, capsys) -> None:
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("models:\n  m:\n    kind: quantum\n", "utf-8")
    assert main(["serve", "--config", str(cfg)]) == 1
    err = capsys.readouterr().err
    assert "unknown kind 'quantum'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["serve.yaml", "serve_upstream.yaml"])
def test_shipped_configs_load_and_build_a_registry(name) -> None:
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.external_api.config import ServeConfig
    from lean_dojo_v2.external_api.registry import ModelRegistry

    cfg = load_config(ServeConfig, ROOT / "configs" / name)
    registry = ModelRegistry.from_specs(cfg.models, defaults=cfg.default_models)
    assert {"default", "default-encoder"} <= set(registry.names())
    assert not any(m.loaded for m in registry.models.values())


def _wait(url: str, proc: subprocess.Popen, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.stderr.read()}")
        try:
            return json.loads(urllib.request.urlopen(url, timeout=2).read())
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the server did not answer")


def _post(url: str, body: dict, headers: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}


def test_serve_starts_answers_and_needs_its_token(tmp_path) -> None:
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("models:\n  c:\n    kind: constant\ndefault_models: false\n", "utf-8")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lean_dojo_v2", "serve", "--config", str(cfg), "--port",
         str(port), "--token", "t0k", "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        assert _wait(base + "/health", proc)["status"] == "ok"
        body = {"name": "c", "input": "⊢ True", "prefix": ""}
        assert _post(base + "/generate", body)[0] == 401
        status, reply = _post(base + "/generate", body, {"Authorization": "Bearer t0k"})
        assert status == 200 and reply["outputs"][0]["output"] == "rfl"
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert "1 models (c) on http://127.0.0.1:" in out and "token required" in out


def test_uvicorn_server_app_from_the_python_folder() -> None:
    """Upstream LeanDojo-v2's ``uvicorn server:app --port 23337``, run from that folder (another port
    here): the default app, which loads no model to start."""
    folder = ROOT / "lean_dojo_v2" / "external_api" / "python"
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "server:app", "--port", str(port), "--log-level",
         "warning"],
        cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        assert _wait(base + "/health", proc)["status"] == "ok"
        models = json.loads(urllib.request.urlopen(base + "/models", timeout=5).read())
        names = {m["name"]: m["loaded"] for m in models["models"]}
        assert names == {"default": False, "default-encoder": False}
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def _one_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_port_in_use_is_one_line_before_anything_is_served(capsys) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        rc = main(["serve", "--set", "default_models=false", "--port", str(port)])
    out, err = capsys.readouterr()
    assert rc == 1
    line = _one_line(err)
    assert f"127.0.0.1:{port}" in line and "in use" in line and "--port" in line
    assert "serving" not in out


@pytest.mark.parametrize(
    ("host", "word"),
    [("192.0.2.1", "not an address of this machine"), ("no.such.host.invalid", "no.such.host")],
)
def test_a_bad_host_is_one_line_before_anything_is_served(capsys, caplog, host, word) -> None:
    caplog.set_level("WARNING")
    rc = main(["serve", "--set", "default_models=false", "--host", host, "--port", "0"])
    out, err = capsys.readouterr()
    assert rc == 1
    line = _one_line(err)
    assert word in line and "--host" in line
    assert "serving" not in out
    # nothing else: the no-token warning is for a server that listens, which this one never did
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []


def test_serving_beyond_loopback_without_a_token_warns_once_it_listens(monkeypatch, caplog) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    caplog.set_level("WARNING")
    assert main(["serve", "--set", "default_models=false", "--host", "0.0.0.0", "--port", "0"]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "without a token" in warnings[0], warnings


def test_preload_with_a_missing_model_names_it_and_serves_nothing(tmp_path, capsys) -> None:
    missing = tmp_path / "no-such-model"
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(
        f"default_models: false\nmodels:\n  enc:\n    kind: encoder\n    model: {missing}\n",
        "utf-8",
    )
    port = free_port()
    rc = main(["serve", "--config", str(cfg), "--preload", "--port", str(port)])
    out, err = capsys.readouterr()
    assert rc == 1
    line = _one_line(err)
    assert "'enc'" in line and "no-such-model" in line and "could not be loaded" in line
    assert "serving" not in out
    import socket

    with socket.socket() as probe:  # nothing listens on the port
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_a_retriever_entry_with_a_missing_path_is_refused_at_start(tmp_path, capsys) -> None:
    missing = tmp_path / "no-export"
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(f"models:\n  mathlib:\n    kind: retriever\n    path: {missing}\n", "utf-8")
    assert main(["serve", "--config", str(cfg), "--port", str(free_port())]) == 1
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert "'mathlib'" in line and str(missing) in line and "export_retriever" in line
    assert "serving" not in out
