"""Settings are read lazily; importing any module has no side effects."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import lean_dojo_v2
from lean_dojo_v2.config import get_settings, reset_settings
from lean_dojo_v2.errors import ConfigError


def test_settings_read_environment_when_first_used(monkeypatch, tmp_path):
    monkeypatch.setenv("RAID_DIR", str(tmp_path / "r"))
    monkeypatch.setenv("LEAN_DOJO_V2_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("GITHUB_ACCESS_TOKEN", "tok")
    reset_settings()
    s = get_settings()
    assert s.raid_dir == tmp_path / "r" and s.cache_dir == tmp_path / "c"
    assert s.data_dir == tmp_path / "r" / "data"
    assert s.github_token == "tok" and "tok" not in repr(s)
    assert not (tmp_path / "r").exists(), "settings never create directories"
    monkeypatch.delenv("GITHUB_ACCESS_TOKEN")
    assert get_settings().github_token == "tok", "cached until reset"
    reset_settings()
    assert get_settings().github_token is None or "GITHUB_TOKEN" in os.environ
    reset_settings()


def test_bad_worker_count(monkeypatch):
    monkeypatch.setenv("LEAN_DOJO_V2_NUM_WORKERS", "many")
    reset_settings()
    with pytest.raises(ConfigError, match="NUM_WORKERS"):
        get_settings()
    reset_settings()


def test_importing_every_module_has_no_side_effects(tmp_path):
    """Import every module in a fresh interpreter, in an empty directory, with no token set and
    sockets disabled: nothing may be created, and nothing may touch the network."""
    modules = [
        m.name
        for m in pkgutil.walk_packages(lean_dojo_v2.__path__, "lean_dojo_v2.")
        if not m.name.endswith("__main__")
    ]
    code = (
        "import socket, sys, importlib\n"
        "def deny(*a, **k): raise RuntimeError('network at import')\n"
        "socket.socket.connect = deny\n"
        "socket.create_connection = deny\n"
        f"mods = {modules!r}\n"
        "layer0 = [m for m in mods if m.startswith(('lean_dojo_v2.data', 'lean_dojo_v2.config', 'lean_dojo_v2.errors'))]\n"
        "for m in layer0: importlib.import_module(m)\n"
        "assert 'torch' not in sys.modules, 'the data layer must not import torch'\n"
        "for m in mods: importlib.import_module(m)\n"
    )
    env = {k: v for k, v in os.environ.items() if "TOKEN" not in k}
    env["HOME"] = str(tmp_path / "home")
    # trainer/retrieval_module.py subclasses a LightningModule, so importing it imports Lightning,
    # which imports matplotlib, which writes its own font cache on first import: a third-party
    # cache, not a file of ours, so it goes to a folder outside the one checked here.
    env["MPLCONFIGDIR"] = str(tmp_path.parent / f"{tmp_path.name}-matplotlib")
    env["PYTHONPATH"] = str(Path(lean_dojo_v2.__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == [], "import created files"
