"""``generate_benchmark`` refuses wrong-typed arguments before tracing anything.

Upstream 1.0.9 had ``generate_benchmark(repo, dst_dir, build_deps)``: called positionally here it
used to put the path into ``build_deps`` (a truthy string, so dependencies were traced) and
``build_deps`` into ``output_dir``; ``dst_dir=`` went on to ``trace(dst_dir=...)``, which copies the
checkout there while the dataset went to ``RAID_DIR/data``. Each is now a ``ConfigError`` whose
message shows the right call. Tracing is replaced here: no Lean, no git.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from lean_dojo_v2.errors import ConfigError, LeanDojoError
from lean_dojo_v2.lean_dojo import LeanGitRepo, benchmark, generate_benchmark

URL = "https://github.com/yangky11/lean4-example"
COMMIT = "0" * 40


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Records every trace()/write_benchmark() call instead of running it."""
    calls: list[tuple[Any, ...]] = []

    def fake_trace(repo: LeanGitRepo, **kwargs: Any) -> LeanGitRepo:
        calls.append(("trace", repo.url, repo.commit, kwargs))
        return repo

    def fake_write(traced_repo: Any, dst: Path, spec: Any = None) -> Path:
        calls.append(("write", Path(dst)))
        return Path(dst)

    monkeypatch.setattr(benchmark, "trace", fake_trace)
    monkeypatch.setattr(benchmark, "write_benchmark", fake_write)
    return calls


def test_generate_benchmark_refuses_upstream_positional_call(traced, tmp_path):
    dst = str(tmp_path / "data" / "lean4-example")
    with pytest.raises(ConfigError) as err:
        generate_benchmark((URL, COMMIT), dst, True)  # upstream: (repo, dst_dir, build_deps)
    message = str(err.value)
    assert "build_deps must be True or False" in message and repr(dst) in message
    assert "output_dir must be a directory path" in message
    assert "generate_benchmark([(url, commit)], build_deps=True, output_dir='raid/data')" in message
    assert traced == []  # nothing traced, nothing written


def test_generate_benchmark_refuses_dst_dir_keyword(traced, tmp_path):
    with pytest.raises(ConfigError) as err:
        generate_benchmark([(URL, COMMIT)], build_deps=True, dst_dir=tmp_path / "ds")
    assert "output_dir=" in str(err.value) and "trace(repo, dst_dir=...)" in str(err.value)
    assert traced == []


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"build_deps": "yes"}, "build_deps must be True or False"),
        ({"build_deps": 1}, "build_deps must be True or False"),
        ({"build_deps": None}, "build_deps must be True or False"),
        ({"output_dir": 5}, "output_dir must be a directory path"),
        ({"spec": "random"}, "spec must be a lean_dojo_v2.data.SplitSpec"),
        ({"on_error": "ignore"}, "on_error must be 'raise' or 'warn'"),
        ({"repos": 42}, "repos must be a repository"),
        ({"repos": [(URL, COMMIT), 42]}, "each repository must be"),
    ],
    ids=[
        "build_deps-str",
        "build_deps-int",
        "build_deps-None",
        "output_dir-int",
        "spec-str",
        "on_error-unknown",
        "repos-int",
        "repos-list-with-int",
    ],
)
def test_generate_benchmark_refuses_wrong_typed_arguments(traced, kwargs, says):
    args: dict[str, Any] = {"repos": [(URL, COMMIT)], "build_deps": False, **kwargs}
    with pytest.raises(LeanDojoError) as err:
        generate_benchmark(**args)
    assert says in str(err.value)
    assert "output_dir='raid/data'" in str(err.value)  # shows the right call
    assert traced == []


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_generate_benchmark_accepts_every_documented_repository_form(traced, tmp_path):
    """The checks refuse only wrong types: one repository (path, URL-like string, LeanGitRepo), a
    (url, commit) pair, a list, a generator; ``build_deps`` and ``output_dir`` by position."""
    repo = tmp_path / "lean4-example"
    repo.mkdir()
    (repo / "lean-toolchain").write_text("leanprover/lean4:v4.22.0\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "lean-toolchain")
    _git(repo, "commit", "-q", "-m", "init")
    commit = _git(repo, "rev-parse", "HEAD")
    url, out = str(repo), tmp_path / "data"

    generate_benchmark(url, output_dir=out)
    generate_benchmark((url, commit), False, out)
    generate_benchmark([LeanGitRepo(url, commit), (url, None), repo], output_dir=str(out))
    generate_benchmark((r for r in [(url, commit)]), build_deps=True, output_dir=out)

    calls = [(c[1], c[2], c[3]["build_deps"]) for c in traced if c[0] == "trace"]
    assert calls == [(url, commit, True), (url, commit, False)] + [(url, commit, True)] * 4
    written = [c[1] for c in traced if c[0] == "write"]
    assert written == [out / f"lean4-example_{commit}"] * 6
