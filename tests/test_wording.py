"""The project's text names things themselves, not the project's own history.

A reader of the package, the docs, the README, the examples or the tests does not know what "the seed", "the
seed's calls" or "issue 9" refer to: upstream LeanDojo-v2's calls, the quickstart snippet, the
measurement itself are what to write. A random generator's ``seed`` is fine and is not matched
where it reads as one; the few sentences where "the seed" means a random seed are listed below.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("lean_dojo_v2", "docs", "README.md", "examples", "tests")
SUFFIXES = {".py", ".md", ".ipynb", ".lean", ".txt"}

# What upstream LeanDojo-v2 / LeanAgent / LeanProgress / LeanHammer wrote used to be called
# "the seed" here; these nouns followed it.
_NOUNS = (
    r"snippets?|api|designs?|scripts?|examples?|repo(?:sitory)?|code|versions?|constructors?|"
    r"calls?|keywords?|names?|signatures?|defaults?|readme|loop|trainers?|paths?|modules?|"
    r"flags?|keys?|alias(?:es)?|promise|fields?|helpers?|yaml|config|files?|layout|behaviou?r|"
    r"spelling|form|shape|arguments?|tests?|way|results?|options?|attributes?"
)
HISTORY = {
    "seed": re.compile(
        r"\bthe[ -]seed\b(?! of\b)|\bseed's\b|\bseed-(?:style|era|design)\b|\bseed (?:"
        + _NOUNS
        + r")\b",
        re.IGNORECASE,
    ),
    "issue number": re.compile(r"\bissues? \d+\b|\bthe issue's\b", re.IGNORECASE),
    "session": re.compile(r"\bthis session\b|\bstop \d+\b", re.IGNORECASE),
}

# (file, text on the line): "the seed" as a random generator's seed.
RANDOM_SEED = {
    ("docs/training.md", "draws its refills afresh from the seed"),
    ("lean_dojo_v2/trainer/premise_selector.py", "(deterministic in the seed)"),
}


def _files() -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            out.append(path)
            continue
        out.extend(
            p
            for p in sorted(path.rglob("*"))
            if p.is_file()
            and p.suffix in SUFFIXES
            and "__pycache__" not in p.parts
            and p != Path(__file__).resolve()  # its own examples of the words
        )
    return out


def _allowed(rel: str, line: str) -> bool:
    return any(rel == path and text in line for path, text in RANDOM_SEED)


def _history_lines(kind: str) -> list[str]:
    pattern = HISTORY[kind]
    hits = []
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line) and not _allowed(rel, line):
                hits.append(f"{rel}:{number}: {line.strip()[:120]}")
    return hits


# What each kind of history word should become instead.
INSTEAD = {
    "seed": "name the thing: upstream LeanDojo-v2's README, its calls, the quickstart snippet, ...",
    "issue number": "say what was measured or decided instead",
    "session": "say what the text is about instead",
}


@pytest.mark.parametrize("kind", sorted(HISTORY))
def test_no_text_speaks_of_the_projects_own_history(kind: str):
    hits = _history_lines(kind)
    assert not hits, f"{len(hits)} lines with {kind} wording ({INSTEAD[kind]}):\n" + "\n".join(hits)


def test_the_patterns_tell_random_seeds_from_history():
    seed = HISTORY["seed"]
    for history in (
        "The seed's calls as written",
        "the seed design's keys",
        "| seed call | here |",
        "a seed-style script",
        "| seed key | ours |",
        "(training.md#grpoconfig-keys-of-the-seed-design)",
        "as in the seed, the model sees the whole state",
    ):
        assert seed.search(history), history
    for random_seed in (
        "seed: int = 0",
        "``seed``: reproducible sampling",
        "the same modules, fractions and seed always give the same split",
        "Seed of the split, the data order",
        "the seed of the key shuffler",
        "mean over 5 seeds",
    ):
        assert not seed.search(random_seed), random_seed
