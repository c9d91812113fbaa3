"""Train/val/test splits: ``random`` and ``novel_premises``.

Both are deterministic. ``random`` is hash-stable: each theorem's split depends only on a hash of
its identity, so adding theorems never moves existing ones between splits. ``novel_premises``
holds out the theorems whose proofs use premises that are rare in the data, so that every val/test
proof uses at least one premise that no training proof uses (LeanDojo's "novel premises" setting).
Rarity depends on the whole data set, so this split can change when data is added; it is still
deterministic for a given set of theorems (ties break by hash, never by input order).

Theorems whose proofs contain ``sorry`` never go to train: by default they are put in ``test``
(they are what a prover should attempt), or dropped with ``sorry="drop"``.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..errors import DuplicateTheoremError, SplitError
from .jsonio import gc_paused
from .model import Pos, Theorem

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

SPLIT_NAMES = ("train", "val", "test")
STRATEGIES = ("random", "novel_premises")
SorryPolicy = Literal["test", "drop"]


@dataclass(frozen=True)
class SplitSpec:
    """How much goes to val and test: a ratio in [0, 1) or an absolute count (int >= 1).

    Defaults follow LeanAgent: 2 % / 2 %. Ratios are hash thresholds (growth-stable); counts take the
    theorems with the smallest hashes, so they are exact but a newcomer with a smaller hash can push
    a theorem back into train.
    """

    val: float | int = 0.02
    test: float | int = 0.02
    sorry: SorryPolicy = "test"

    def __post_init__(self) -> None:
        for name in ("val", "test"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise SplitError(f"{name} must be a ratio or a count, got {v!r}")
            if isinstance(v, float) and not (0.0 <= v < 1.0):
                raise SplitError(f"{name} ratio must be in [0, 1), got {v}")
            if isinstance(v, int) and v < 0:
                raise SplitError(f"{name} count must be >= 0, got {v}")
        if isinstance(self.val, float) != isinstance(self.test, float):
            raise SplitError("give val and test both as ratios (floats) or both as counts (ints)")
        if self.uses_ratios and self.val + self.test >= 1.0:
            raise SplitError(f"val + test ratios must be below 1, got {self.val} + {self.test}")
        if self.sorry not in ("test", "drop"):
            raise SplitError(f"sorry policy must be 'test' or 'drop', got {self.sorry!r}")

    @property
    def uses_ratios(self) -> bool:
        return isinstance(self.val, float)

    @classmethod
    def parse(cls, val: str, test: str, sorry: SorryPolicy = "test") -> SplitSpec:
        """From command-line text: ``0.02`` is a ratio, ``2000`` a count."""

        def one(text: str) -> float | int:
            try:
                return int(text)
            except ValueError:
                try:
                    return float(text)
                except ValueError as exc:
                    raise SplitError(f"not a ratio or a count: {text!r}") from exc

        return cls(one(val), one(test), sorry)


def add_split_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--val``, ``--test`` and ``--sorry`` (what :class:`SplitSpec` holds) to a command that
    splits theorems; :func:`split_spec_from_args` reads them back."""
    defaults = SplitSpec()
    for name in ("val", "test"):
        parser.add_argument(
            f"--{name}",
            default=str(getattr(defaults, name)),
            metavar="SIZE",
            help=f"{name} size: a ratio (0.02) or a count (2000) (default: "
            f"{getattr(defaults, name)})",
        )
    parser.add_argument(
        "--sorry",
        default=defaults.sorry,
        choices=["test", "drop"],
        help=f"where theorems with an unproved sorry go (never train; default: {defaults.sorry})",
    )


def split_spec_from_args(args: argparse.Namespace) -> SplitSpec:
    """The :class:`SplitSpec` of the options added by :func:`add_split_options`."""
    return SplitSpec.parse(args.val, args.test, args.sorry)


Splits = dict[str, list[Theorem]]


class TheoremRegistry:
    """Remembers where each theorem (full name, file, start) was seen, to report a duplicate with
    both of its records."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, Pos], tuple[str | None, int]] = {}

    def add(self, theorems: Iterable[Theorem], source: str | Path | None = None) -> None:
        """Note ``theorems`` (records of file ``source``, or items of a list when None)."""
        where = str(source) if source is not None else None
        with gc_paused():  # millions of small tuples: the cyclic collector would rescan the heap
            self._add(theorems, source, where)

    def _add(
        self, theorems: Iterable[Theorem], source: str | Path | None, where: str | None
    ) -> None:
        seen = self._seen
        for i, t in enumerate(theorems):
            first = seen.setdefault((t.full_name, t.file_path, t.start), (where, i))
            if first[1] != i or first[0] != where:
                also = f"file {first[0]}, record {first[1]}" if first[0] else f"item {first[1]}"
                raise DuplicateTheoremError(
                    f"theorem {t.full_name!r} at {t.file_path}:{t.start.line_nb}:"
                    f"{t.start.column_nb} appears twice (also {also}); each theorem must appear "
                    "once per split strategy: remove one",
                    file=source,
                    record=i,
                )


def check_unique_theorems(theorems: Iterable[Theorem], source: str | Path | None = None) -> None:
    """Raise :class:`DuplicateTheoremError` naming both records if a theorem (same full name,
    file and start) occurs twice in ``theorems`` (the records of file ``source``)."""
    TheoremRegistry().add(theorems, source)


def theorem_hash(theorem: Theorem, salt: str = "") -> float:
    """A stable number in [0, 1) from the theorem's identity (not Python's randomised ``hash``).

    The commit is left out on purpose: the same theorem in a newer commit keeps its split.
    """
    ident = f"{salt}\x00{theorem.url}\x00{theorem.file_path}\x00{theorem.full_name}"
    digest = hashlib.blake2b(ident.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def _set_aside_sorry(theorems: Iterable[Theorem]) -> tuple[list[Theorem], list[Theorem]]:
    regular: list[Theorem] = []
    sorry: list[Theorem] = []
    for t in theorems:
        (sorry if t.has_sorry else regular).append(t)
    return regular, sorry


def _finish(splits: Splits, sorry: list[Theorem], spec: SplitSpec) -> Splits:
    if spec.sorry == "test":
        splits["test"].extend(sorry)
    return splits


def _count(value: float | int, n: int) -> int:
    # Round off float noise first: 0.07 * 100 is 7.000000000000001, which must give 7, not 8.
    return value if isinstance(value, int) else math.ceil(round(value * n, 6)) if value else 0


def split_random(theorems: Iterable[Theorem], spec: SplitSpec | None = None) -> Splits:
    spec = spec or SplitSpec()
    regular, sorry = _set_aside_sorry(theorems)
    splits: Splits = {name: [] for name in SPLIT_NAMES}
    if spec.uses_ratios:
        for t in regular:
            h = theorem_hash(t)
            if h < spec.val:
                splits["val"].append(t)
            elif h < spec.val + spec.test:
                splits["test"].append(t)
            else:
                splits["train"].append(t)
    else:
        if spec.val + spec.test > len(regular):
            raise SplitError(
                f"asked for {spec.val} val + {spec.test} test theorems but only {len(regular)} "
                "theorems without sorry are available"
            )
        ranked = sorted(range(len(regular)), key=lambda i: theorem_hash(regular[i]))
        role = {}
        for rank, i in enumerate(ranked):
            role[i] = (
                "val" if rank < spec.val else "test" if rank < spec.val + spec.test else "train"
            )
        for i, t in enumerate(regular):  # keep input order inside each split
            splits[role[i]].append(t)
    return _finish(splits, sorry, spec)


def _identity(t: Theorem) -> tuple[str, str, str]:
    # The commit is left out, as in theorem_hash: a theorem keeps its split across commits.
    return (t.url, t.file_path, t.full_name)


def _premise_key(name: str) -> bytes:
    return hashlib.blake2b(name.encode(), digest_size=8).digest()


def split_novel_premises(
    theorems: Iterable[Theorem],
    spec: SplitSpec | None = None,
    previous: Mapping[str, Iterable[Theorem]] | None = None,
) -> Splits:
    """Hold out the theorems that use premises rare in the data.

    Premises are taken rarest first (ties by a hash of the name) and every theorem using one is held
    out, until val + test is reached. With ``previous`` (an earlier result of this function), every
    theorem already placed keeps its split, premises held out before stay held out, and only the
    newcomers are placed: so adding theorems never moves existing ones, and val/test proofs still use
    a premise that no training proof uses.
    """
    spec = spec or SplitSpec()
    regular, sorry = _set_aside_sorry(theorems)
    n = len(regular)
    want = _count(spec.val, n) + _count(spec.test, n)
    if want > n:
        raise SplitError(f"asked for {want} val+test theorems but only {n} are available")

    before: dict[tuple[str, str, str], str] = {}
    for split, placed in (previous or {}).items():
        if split not in SPLIT_NAMES:
            raise SplitError(f"unknown split {split!r} in previous; expected one of {SPLIT_NAMES}")
        for t in placed:
            before[_identity(t)] = split
    role: dict[int, str] = {}
    for i, t in enumerate(regular):
        old = before.get(_identity(t))
        if old is not None:
            role[i] = old

    users: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(regular):
        for name in t.premises:
            users[name].append(i)
    in_train = {p for i, r in role.items() if r == "train" for p in regular[i].premises}
    held_premises = {
        p for i, r in role.items() if r != "train" for p in regular[i].premises if p not in in_train
    }
    # Newcomers that use a premise held out before must join val/test, or it would leak into train.
    held = {i for i, r in role.items() if r != "train"}
    newly_held = {
        i for i, t in enumerate(regular) if i not in role and held_premises.intersection(t.premises)
    }
    held |= newly_held
    # Top up with the rarest premises used by newcomers alone, so no placed theorem has to move.
    placed_train = {i for i, r in role.items() if r == "train"}
    candidates = [p for p, ids in users.items() if not placed_train.intersection(ids)]
    candidates.sort(key=lambda p: (len(users[p]), _premise_key(p)))
    for premise in candidates:
        if len(held) >= want:
            break
        newly_held.update(i for i in users[premise] if i not in held)
        held.update(users[premise])

    # Newly held theorems: val/test by hash rank so the proportions follow the spec.
    ranked = sorted(newly_held, key=lambda i: theorem_hash(regular[i], "novel"))
    n_val = round(len(ranked) * (_count(spec.val, n) / want)) if want else 0
    for rank, i in enumerate(ranked):
        role[i] = "val" if rank < n_val else "test"
    splits: Splits = {name: [] for name in SPLIT_NAMES}
    for i, t in enumerate(regular):
        splits[role.get(i, "train")].append(t)
    return _finish(splits, sorry, spec)


def split_theorems(
    theorems: Iterable[Theorem],
    spec: SplitSpec | None = None,
    previous: Mapping[str, Mapping[str, Iterable[Theorem]]] | None = None,
) -> dict[str, Splits]:
    """Both strategies at once: ``{"random": {...}, "novel_premises": {...}}``.

    ``previous`` (an earlier result, e.g. a dataset read back) keeps existing theorems in their
    ``novel_premises`` splits; ``random`` needs no memory with ratio sizes. A theorem given twice
    is a :class:`DuplicateTheoremError` (it could land in two splits).
    """
    theorems = list(theorems)
    check_unique_theorems(theorems)
    return {
        "random": split_random(theorems, spec),
        "novel_premises": split_novel_premises(
            theorems, spec, (previous or {}).get("novel_premises")
        ),
    }
