"""Fixtures for the Pantograph client tests: the fake REPL's command line and recorded theorems.

Every expected goal state comes from real recorded transitions: the bundled LeanDojo Benchmark 4
sample and miniCTX's miniF2F-test proofs (``tests/data/real``, the ``shared_data`` fixture).
"""

from __future__ import annotations

import json
import shlex
import stat
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.data import (
    Pos,
    Theorem,
    TracedTactic,
    goal_texts,
    load_theorems,
    sample_dataset_path,
)
from lean_dojo_v2.interaction.pantograph import PantographConfig

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:  # the fake lives in tests/fake_pantograph
    sys.path.insert(0, str(TESTS_DIR))

MINIF2F_JSON = Path("minictx") / "derived" / "minif2f_test_traced_tactics.json"
_SEPARATOR = "\n-/\n/-\n"


def _fake_command() -> list[str]:
    from fake_pantograph.launcher import fake_command

    return fake_command()


@pytest.fixture(scope="session")
def fake_cmd() -> list[str]:
    return _fake_command()


def fake_config(**kwargs) -> PantographConfig:
    """A config that runs the fake REPL, with test-friendly limits."""
    base = dict(
        command=_fake_command(),
        imports=("Init",),
        ready_timeout=30.0,
        request_timeout=30.0,
        tactic_timeout=10.0,
    )
    base.update(kwargs)
    # Tactic-mechanics tests start B4 sample theorems, whose statements are not recorded: the
    # fake's copyFrom then answers the recorded first state (the real server gives the whole
    # type; tests of start() itself switch this off).
    base["env"] = {"FAKE_PANTOGRAPH_COPYFROM_RECORDED": "1", **dict(base.get("env") or {})}
    return PantographConfig(**base)


def write_script(path: Path, body: str) -> Path:
    """An executable ``/bin/sh`` script."""
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_wrapper(path: Path, before: str = "") -> Path:
    """A script that runs ``before`` (shell) and then execs the fake REPL with its arguments."""
    cmd = " ".join(shlex.quote(a) for a in _fake_command())
    return write_script(path, f'{before}\nexec {cmd} "$@"')


@pytest.fixture(scope="session")
def sample_proofs() -> list[Theorem]:
    """Bundled B4 sample theorems that have tactic proofs (51)."""
    return [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]


@pytest.fixture(scope="session")
def minif2f_theorems(shared_data: Path) -> list[Theorem]:
    """miniF2F-test proofs recorded by miniCTX whose states are plain goal text (no comment-block
    separators) and end in ``no goals``: as :class:`Theorem` with their statement."""
    path = shared_data / MINIF2F_JSON
    out = []
    for rec in json.loads(path.read_text(encoding="utf-8")):
        steps = rec.get("traced_tactics") or []
        states = [s["state_before"] for s in steps] + [s["state_after"] for s in steps]
        if not steps or any(_SEPARATOR in s or "-/" in s for s in states):
            continue
        if steps[-1]["state_after"].strip() not in ("no goals", "🎉 no goals"):
            continue
        if any(not s.strip() for s in states[:-1]):
            continue
        out.append(
            Theorem(
                url="https://github.com/rah4927/lean-dojo-mew",
                commit="d00c776260c77de7e70125ef0cd119de6c0ff1de",
                file_path="MiniF2F/Test.lean",
                full_name=rec["full_name"],
                start=Pos(1, 1),
                end=Pos(1, 1),
                traced_tactics=[
                    TracedTactic.unannotated(s["tactic"], s["state_before"], s["state_after"])
                    for s in steps
                ],
                theorem_statement=rec["statement"],
                has_statement_field=True,
            )
        )
    return out


def first_step(thm: Theorem) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    """(goals before, tactic, goals after) of a theorem's first recorded tactic."""
    tt = thm.traced_tactics[0]
    return tuple(goal_texts(tt.state_before)), tt.tactic, tuple(goal_texts(tt.state_after))


def goals_of(result) -> tuple[str, ...] | None:
    """A result's goals: a state's goals, ``()`` for a finished proof, None for an error."""
    from lean_dojo_v2.interaction import ProofFinished, ProofState

    if isinstance(result, ProofState):
        return result.goals
    if isinstance(result, ProofFinished):
        return ()
    return None
