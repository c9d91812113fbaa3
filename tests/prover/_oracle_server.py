"""Helpers of the prove-CLI tests that need proofs found end to end: the answer of a fake
OpenAI-compatible server that proposes the recorded tactics (after a wrong one), and a git
repository with a ``sorry`` in place of each theorem's proof (for write-back)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from lean_dojo_v2.data import sample_dataset_path

from .pipeline_oracle import OracleGenerator

SAMPLE = str(sample_dataset_path())


def oracle_answer() -> Callable[[dict, int], str]:
    """A fake OpenAI server's answer: a wrong tactic first, then the recorded tactics of the
    longest recorded goal in the request (in turn)."""
    oracle = OracleGenerator(SAMPLE)

    def answer(request: dict, index: int) -> str:
        text = "\n".join(str(m.get("content")) for m in request["messages"])
        goals = [g for g in oracle.table if g in text]
        if not goals or index == 0:
            return "exact wrong_answer"
        tactics = oracle.table[max(goals, key=len)]
        return tactics[(index - 1) % len(tactics)]

    return answer


def repo_with_sorries(root: Path, theorems: list, *, git: bool = True) -> Path:
    """A repository with one file per theorem file: each theorem declared at its recorded start
    line as ``theorem <last name component> : True := sorry`` (committed when ``git``)."""
    by_file: dict[str, list] = {}
    for t in theorems:
        by_file.setdefault(t.file_path, []).append(t)
    for rel, ts in by_file.items():
        lines = [""] * max(t.start.line_nb for t in ts)
        for t in ts:
            lines[t.start.line_nb - 1] = f"theorem {t.full_name.rsplit('.', 1)[-1]} : True := sorry"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", "utf-8")
    root.mkdir(parents=True, exist_ok=True)
    if git:
        env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
        env |= {"GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(root)}
        for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "--allow-empty", "-m", "s"]):
            subprocess.run(["git", *cmd], cwd=root, env=env, check=True)
    return root


def one_line_error(argv: list[str], capsys) -> str:
    """Run ``lean-dojo-v2 ARGV``: it must fail with status 1 and exactly one ``error:`` line on
    stderr, no traceback; that line."""
    from lean_dojo_v2.cli import main

    rc = main(argv)
    _, err = capsys.readouterr()
    assert rc == 1
    lines = [line for line in err.strip().splitlines() if line.startswith("lean-dojo-v2: error:")]
    assert len(lines) == 1 and "Traceback" not in err
    return lines[0]
