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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..errors import SplitError
from .model import Theorem

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


Splits = dict[str, list[Theorem]]


def theorem_hash(theorem: Theorem, salt: str = "") -> float:
    """A stable number in [0, 1) from the theorem's identity (not Python's randomised ``hash``).

    The commit is left out on purpose: the same theorem in a newer commit keeps its split.
    """
    ident = f"{salt}\x00{theorem.url}\x00{theorem.file_path}\x00{theorem.full_name}"
    digest = hashlib.blake2b(ident.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def _set_aside_sorry(theorems: Iterable[Theorem]) -> tuple[list[Theorem], list[Theorem]]:
    regular, sorry = [], []
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


def split_novel_premises(theorems: Iterable[Theorem], spec: SplitSpec | None = None) -> Splits:
    spec = spec or SplitSpec()
    regular, sorry = _set_aside_sorry(theorems)
    n = len(regular)
    want = _count(spec.val, n) + _count(spec.test, n)
    if want > n:
        raise SplitError(f"asked for {want} val+test theorems but only {n} are available")

    users: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(regular):
        for name in t.premises:
            users[name].append(i)
    # Rarest premises first; equal counts break by a hash of the name (independent of input order).
    order = sorted(
        users,
        key=lambda p: (len(users[p]), hashlib.blake2b(p.encode(), digest_size=8).digest()),
    )
    held: set[int] = set()
    for premise in order:
        if len(held) >= want:
            break
        held.update(users[premise])

    splits: Splits = {name: [] for name in SPLIT_NAMES}
    # Within the held-out theorems, val/test by hash rank so the proportions follow the spec.
    ranked = sorted(held, key=lambda i: theorem_hash(regular[i], "novel"))
    n_val = round(len(ranked) * (_count(spec.val, n) / want)) if want else 0
    val_ids = set(ranked[:n_val])
    for i, t in enumerate(regular):
        if i not in held:
            splits["train"].append(t)
        elif i in val_ids:
            splits["val"].append(t)
        else:
            splits["test"].append(t)
    return _finish(splits, sorry, spec)


def split_theorems(theorems: Iterable[Theorem], spec: SplitSpec | None = None) -> dict[str, Splits]:
    """Both strategies at once: ``{"random": {...}, "novel_premises": {...}}``."""
    theorems = list(theorems)
    return {
        "random": split_random(theorems, spec),
        "novel_premises": split_novel_premises(theorems, spec),
    }
