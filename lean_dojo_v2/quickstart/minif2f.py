"""The quickstart's bundled data: miniF2F-test's recorded tactic proofs as a LeanDojo dataset.

``lean_dojo_v2/resources/minif2f_tactics/`` holds the 56 well-formed proof chains of miniCTX's
miniF2F-test state-prediction data (real Lean goal states, one recorded tactic each step; see
``SOURCE.txt`` there for origin and licence) in the LeanDojo layout, so that the database ingests
it like any traced repository and ``ReplayEnv`` replays it. The ``random`` strategy is split by
:func:`is_held_out` (a hash of the theorem name, so it never depends on record order): ``train``
(44 theorems) and ``test`` (12, held out from training); ``val`` is empty.

:func:`build_dataset` is how the folder was written (``tests/quickstart`` rebuilds it from the
copy of the source in ``tests/data/real`` and compares the bytes).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..data.dataset import write_dataset
from ..data.goals import goal_texts
from ..data.model import Pos, PremiseFile, Theorem, TracedTactic

DATA_NAME = "minif2f_tactics"
URL = "https://github.com/rah4927/lean-dojo-mew"
"""The Lean project miniCTX's miniF2F statements point at (``data/minif2f.jsonl``)."""
COMMIT = "d00c776260c77de7e70125ef0cd119de6c0ff1de"
FILE_PATH = "MiniF2F/Test.lean"
HELD_OUT_MODULUS = 4

_NO_GOALS_FINAL = {"no goals", "🎉 no goals"}
_BLOCK_SEPARATOR = "\n-/\n/-\n"


def bundled_dataset_path() -> Path:
    """Directory of the bundled miniF2F dataset (read-only package data)."""
    return Path(__file__).resolve().parent.parent / "resources" / DATA_NAME


def is_held_out(full_name: str) -> bool:
    """Whether a theorem belongs to the held-out (``test``) split: one name in four, by CRC-32,
    so the split is the same on every machine and for any order of the records."""
    return zlib.crc32(full_name.encode("utf-8")) % HELD_OUT_MODULUS == 1


def _state(state: str) -> str:
    # The derived file unwrapped each state from "/- … -/"; where miniCTX printed one comment
    # block per goal the inner separators remain: wrap it again so the goal parser splits them.
    return f"/-\n{state}\n-/" if _BLOCK_SEPARATOR in state else state


def chains_to_theorems(records: Iterable[Mapping[str, Any]]) -> list[Theorem]:
    """miniCTX's derived miniF2F-test chains (``minif2f_test_traced_tactics.json``) → theorems.

    A chain is left out when its final state is not a clean "no goals" (two are malformed in the
    source) or when Lean printed no state after some prefix (it did not elaborate)."""
    out = []
    for rec in records:
        steps = rec.get("traced_tactics") or []
        if not steps or steps[-1].get("state_after", "").strip() not in _NO_GOALS_FINAL:
            continue
        inner = [s["state_before"] for s in steps] + [s["state_after"] for s in steps[:-1]]
        if any(not state.strip() for state in inner):
            continue
        tactics = [
            TracedTactic.unannotated(
                s["tactic"], _state(s["state_before"]), _state(s["state_after"])
            )
            for s in steps
        ]
        if any("-/" in g for t in tactics for g in goal_texts(t.state_before)):
            continue
        out.append(
            Theorem(
                url=URL,
                commit=COMMIT,
                file_path=FILE_PATH,
                full_name=rec["full_name"],
                start=Pos(1, 1),
                end=Pos(1, 1),
                traced_tactics=tactics,
                theorem_statement=rec.get("statement"),
                has_statement_field=True,
            )
        )
    return out


def build_dataset(records: Iterable[Mapping[str, Any]], dst: str | Path) -> Path:
    """Write the chains as a LeanDojo dataset at ``dst`` (``random``: train / empty val / test
    by :func:`is_held_out`; a one-file corpus without premises: the chains record none)."""
    theorems = chains_to_theorems(records)
    train = [t for t in theorems if not is_held_out(t.full_name)]
    test = [t for t in theorems if is_held_out(t.full_name)]
    return write_chain_dataset(
        dst,
        train,
        test,
        split=f"random: test = theorems whose name's CRC-32 % {HELD_OUT_MODULUS} == 1",
    )


def write_chain_dataset(
    dst: str | Path,
    train: Iterable[Theorem],
    test: Iterable[Theorem] = (),
    *,
    split: str = "random: as chosen by the writer",
    force: bool = False,
) -> Path:
    """A complete LeanDojo dataset at ``dst`` holding theorems of these chains (the bundled set
    or a part of it, such as the quickstart's focused set): the ``random`` split as given (``val``
    empty), the one-file corpus and the metadata of :func:`build_dataset`, so that
    ``agent.setup_traced_dataset(dst)`` and the database take it like any traced repository."""
    metadata = {
        "dataset_name": "miniF2F-test recorded tactic proofs (miniCTX)",
        "from_repo": {"url": URL, "commit": COMMIT},
        "split": split,
        "licence": "Apache-2.0 (miniCTX data); miniF2F statements MIT / Apache-2.0",
    }
    return write_dataset(
        dst,
        {"random": {"train": train, "val": [], "test": test}},
        corpus=[PremiseFile(path=FILE_PATH, imports=[], premises=[])],
        traced_files=[FILE_PATH],
        metadata=metadata,
        force=force,
    )
