"""Train/val/test splits on real LeanDojo Benchmark 4 records.

Every theorem here is a real record from ``shared/data/leandojo_b4``. Larger data sets are made by
replicating real records under fresh identities (``full_name``/``file_path`` changed, proofs and
goal states untouched) or as sub-proofs (a real proof's tactics from the k-th on); sorry theorems
are real records whose tactics were replaced by a single ``sorry`` tactic. No goal state is
invented.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections import Counter
from fractions import Fraction

import pytest

from lean_dojo_v2.data import SplitSpec, Theorem, split_novel_premises, split_random
from lean_dojo_v2.data.splits import SPLIT_NAMES, split_theorems
from lean_dojo_v2.errors import SplitError


@pytest.fixture(scope="module")
def records(b4_records_path) -> list[dict]:
    """The 100 real records (``b4_records_path`` comes from tests/conftest.py: the bundled copy)."""
    return json.loads(b4_records_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def theorems(records) -> list[Theorem]:
    ts = [Theorem.from_dict(r) for r in records]
    assert len(ts) == 100 and sum(t.has_tactic_proof for t in ts) == 51
    assert not any(t.has_sorry for t in ts)
    return ts


def replicate(theorems: list[Theorem], copies: int, tag: str = "replica") -> list[Theorem]:
    """``copies`` new theorems per real one: same proof and goal states, fresh identity."""
    return [
        dataclasses.replace(
            t,
            full_name=f"{t.full_name}.{tag}{k}",
            file_path=t.file_path.replace(".lean", f"_{tag}{k % 7}.lean"),
        )
        for k in range(copies)
        for t in theorems
    ]


def make_sorry(record: dict, name: str) -> Theorem:
    """A sorry theorem made from a real record: identity changed, its tactics replaced by a single
    ``sorry`` applied to the record's real first goal (sorry closes it: ``no goals``)."""
    d = json.loads(json.dumps(record))
    d["full_name"] = name
    first = d["traced_tactics"][0]
    d["traced_tactics"] = [
        {
            "tactic": "sorry",
            "annotated_tactic": ["sorry", []],
            "state_before": first["state_before"],
            "state_after": "no goals",
        }
    ]
    t = Theorem.from_dict(d)
    assert t.has_sorry
    return t


def names(ts) -> set[str]:
    return {t.full_name for t in ts}


def split_names(splits) -> dict[str, set[str]]:
    return {k: names(v) for k, v in splits.items()}


def assert_partition(splits, theorems) -> None:
    assert set(splits) == set(SPLIT_NAMES)
    out = [t.full_name for name in SPLIT_NAMES for t in splits[name]]
    assert Counter(out) == Counter(t.full_name for t in theorems)  # none lost, none duplicated
    # and the split lists hold the very objects passed in
    ids = Counter(id(t) for name in SPLIT_NAMES for t in splits[name])
    assert ids == Counter(id(t) for t in theorems)


def shuffled(ts, seed):
    ts = list(ts)
    random.Random(seed).shuffle(ts)
    return ts


# ---------------------------------------------------------------------------------------- random


@pytest.mark.parametrize(
    "spec",
    [SplitSpec(), SplitSpec(0.1, 0.2), SplitSpec(10, 10), SplitSpec(0, 7), SplitSpec(0.0, 0.0)],
    ids=repr,
)
def test_random_partitions_exactly(theorems, spec):
    splits = split_random(theorems, spec)
    assert_partition(splits, theorems)


def test_random_partitions_large_set(theorems):
    big = theorems + replicate(theorems, 10)
    assert_partition(split_random(big, SplitSpec(0.1, 0.1)), big)


@pytest.mark.parametrize("spec", [SplitSpec(0.1, 0.1), SplitSpec(10, 15)], ids=repr)
def test_random_is_deterministic_under_shuffling(theorems, spec):
    big = theorems + replicate(theorems, 3)
    ref = split_names(split_random(big, spec))
    assert ref["val"] and ref["test"]
    for seed in range(3):
        assert split_names(split_random(shuffled(big, seed), spec)) == ref
    # a generator works as well as a list
    assert split_names(split_random(iter(shuffled(big, 9)), spec)) == ref


def test_random_keeps_input_order_within_splits(theorems):
    big = shuffled(theorems + replicate(theorems, 2), 5)
    position = {t.full_name: i for i, t in enumerate(big)}
    for spec in (SplitSpec(0.2, 0.2), SplitSpec(20, 20)):
        for part in split_random(big, spec).values():
            idx = [position[t.full_name] for t in part]
            assert idx == sorted(idx)


@pytest.mark.parametrize(
    "spec", [SplitSpec(), SplitSpec(0.1, 0.15), SplitSpec(0.3, 0.05)], ids=repr
)
def test_random_is_hash_stable_when_theorems_are_added(theorems, spec):
    before = split_names(split_random(theorems, spec))
    newcomers = replicate(theorems, 10, tag="added")
    assert len(newcomers) == 1000
    after = split_names(split_random(shuffled(theorems + newcomers, 1), spec))
    for name in SPLIT_NAMES:
        assert before[name] <= after[name], name
    # the newcomers did land in every split (so the check above is not vacuous)
    for name in SPLIT_NAMES:
        assert after[name] - before[name]


def test_random_hash_ignores_the_commit(theorems):
    spec = SplitSpec(0.2, 0.2)
    moved = [dataclasses.replace(t, commit="0" * 40) for t in theorems]
    assert split_names(split_random(moved, spec)) == split_names(split_random(theorems, spec))


@pytest.mark.parametrize("val,test", [(10, 10), (0, 5), (3, 0), (1, 98), (50, 50)])
def test_random_counts_are_exact(theorems, val, test):
    splits = split_random(theorems, SplitSpec(val, test))
    assert len(splits["val"]) == val
    assert len(splits["test"]) == test
    assert len(splits["train"]) == len(theorems) - val - test


def test_random_counts_take_the_same_theorems_whatever_the_order(theorems):
    big = theorems + replicate(theorems, 4)
    ref = split_names(split_random(big, SplitSpec(25, 40)))
    assert (len(ref["val"]), len(ref["test"])) == (25, 40)
    assert split_names(split_random(shuffled(big, 3), SplitSpec(25, 40))) == ref


def test_random_ratio_sizes_on_a_large_set(theorems):
    big = replicate(theorems, 200)
    assert len(big) == 20_000 and len(names(big)) == 20_000
    splits = split_random(big, SplitSpec(0.02, 0.02))
    for name in ("val", "test"):
        assert 0.015 * len(big) <= len(splits[name]) <= 0.025 * len(big), name
    splits = split_random(big, SplitSpec(0.1, 0.3))
    assert 0.09 * len(big) <= len(splits["val"]) <= 0.11 * len(big)
    assert 0.28 * len(big) <= len(splits["test"]) <= 0.32 * len(big)
    assert_partition(splits, big)


def test_random_counts_larger_than_data(theorems):
    with pytest.raises(SplitError):
        split_random(theorems, SplitSpec(60, 41))
    split_random(theorems, SplitSpec(60, 40))  # exactly all of them is fine


# -------------------------------------------------------------------------------- novel_premises


def assert_novel(splits) -> None:
    """Every val/test theorem uses a premise that no train theorem uses, computed from the raw
    provenance full names of ``annotated_tactic`` (not from ``Theorem.premises``)."""

    def used(t: Theorem) -> set[str]:
        return {
            p["full_name"]
            for tac in t.to_dict()["traced_tactics"]
            for p in tac["annotated_tactic"][1]
        }

    train_premises = set().union(*(used(t) for t in splits["train"]))
    for name in ("val", "test"):
        for t in splits[name]:
            if t.has_sorry:
                continue  # sorry theorems go to test by policy, whatever their premises
            assert used(t) - train_premises, f"{t.full_name} in {name} uses only train premises"


def requested(spec: SplitSpec, n: int) -> int:
    """val + test theorems asked for: a ratio of n theorems is ceil(ratio * n), computed exactly
    from the decimal the user wrote (0.07 of 100 is 7, not 8)."""
    if spec.uses_ratios:
        return sum(math.ceil(Fraction(repr(r)) * n) for r in (spec.val, spec.test))
    return spec.val + spec.test


def largest_group(theorems) -> int:
    return max(Counter(p for t in theorems for p in t.premises).values())


@pytest.mark.parametrize(
    "spec",
    [
        SplitSpec(),
        SplitSpec(0.07, 0.07),
        SplitSpec(0.1, 0.1),
        SplitSpec(0.0, 0.03),
        SplitSpec(10, 10),
        SplitSpec(5, 20),
        SplitSpec(24, 24),
    ],
    ids=repr,
)
def test_novel_premises_on_real_records(theorems, spec):
    splits = split_novel_premises(theorems, spec)
    assert_partition(splits, theorems)
    assert_novel(splits)
    held = len(splits["val"]) + len(splits["test"])
    want = requested(spec, len(theorems))
    # at least what was asked; the last premise group taken may overshoot, by less than a group
    assert want <= held < want + largest_group(theorems)
    # In these records the rarest premises are each used by a single theorem (176 of 185), so the
    # groups taken add one theorem at a time and no group overshoots: the count is exact.
    assert held == want
    assert splits["val"] or spec.val == 0
    assert splits["test"]
    # theorems without premises (term-mode proofs included) can never be held out
    assert all(t.premises for name in ("val", "test") for t in splits[name])


def test_novel_premises_on_replicated_records(theorems):
    # replicas share their originals' premises, so premise groups have several theorems
    big = theorems + replicate(theorems, 4)
    spec = SplitSpec(0.05, 0.1)
    splits = split_novel_premises(big, spec)
    assert_partition(splits, big)
    assert_novel(splits)
    held = len(splits["val"]) + len(splits["test"])
    want = requested(spec, len(big))
    assert want <= held < want + largest_group(big)
    # a real record and its replicas use the same premises, so they stay together
    base = {t.full_name.split(".replica")[0] for t in splits["train"]}
    for name in ("val", "test"):
        assert not {t.full_name.split(".replica")[0] for t in splits[name]} & base


def tails(theorems: list[Theorem]) -> list[Theorem]:
    """Sub-proofs of real records: the tactics from the k-th on (k >= 1) under a fresh name. Real
    tactics and goal states, nothing invented; each shares only part of its original's premises,
    so premise groups overlap unevenly (unlike whole replicas)."""
    return [
        dataclasses.replace(
            t, full_name=f"{t.full_name}.tail{k}", traced_tactics=t.traced_tactics[k:]
        )
        for t in theorems
        for k in range(1, len(t.traced_tactics))
        if any(tac.annotations for tac in t.traced_tactics[k:])
    ]


@pytest.mark.parametrize(
    "spec", [SplitSpec(), SplitSpec(0.05, 0.05), SplitSpec(3, 7), SplitSpec(30, 30)], ids=repr
)
def test_novel_premises_with_overlapping_premise_groups(theorems, spec):
    data = theorems + tails(theorems)
    assert len(data) > 180
    splits = split_novel_premises(data, spec)
    assert_partition(splits, data)
    assert_novel(splits)
    held = len(splits["val"]) + len(splits["test"])
    want = requested(spec, len(data))
    assert want <= held < want + largest_group(data)
    assert split_names(split_novel_premises(shuffled(data, 7), spec)) == split_names(splits)


@pytest.mark.parametrize("spec", [SplitSpec(), SplitSpec(0.1, 0.1), SplitSpec(5, 5)], ids=repr)
def test_novel_premises_with_previous_never_moves_placed_theorems(theorems, spec):
    first = split_novel_premises(theorems, spec)
    # Newcomers: sub-proofs (sharing some premises with placed theorems) and whole replicas.
    grown = theorems + tails(theorems) + replicate(theorems, 3, "grown")
    second = split_novel_premises(shuffled(grown, 3), spec, previous=first)
    assert_partition(second, grown)
    assert_novel(second)
    before, after = split_names(first), split_names(second)
    for name in SPLIT_NAMES:
        assert before[name] <= after[name], f"a theorem left {name}"
    # A newcomer that uses a premise held out before joins val/test (else it would leak to train).
    held_before = {p for name in ("val", "test") for t in first[name] for p in t.premises}
    train_before = {p for t in first["train"] for p in t.premises}
    novel_before = held_before - train_before
    for t in second["train"]:
        assert not novel_before.intersection(t.premises), t.full_name
    # Still at least what was asked of the grown data.
    assert len(second["val"]) + len(second["test"]) >= requested(spec, len(grown))


def test_novel_premises_previous_equals_fresh_when_empty(theorems):
    spec = SplitSpec(0.1, 0.1)
    assert split_names(split_novel_premises(theorems, spec, previous={})) == split_names(
        split_novel_premises(theorems, spec)
    )
    with pytest.raises(SplitError):
        split_novel_premises(theorems, spec, previous={"dev": theorems})


def test_novel_premises_val_test_proportion(theorems):
    big = theorems + replicate(theorems, 2)
    splits = split_novel_premises(big, SplitSpec(10, 30))
    held = len(splits["val"]) + len(splits["test"])
    assert held >= 40
    assert abs(len(splits["val"]) - held * 10 / 40) <= 1


@pytest.mark.parametrize("spec", [SplitSpec(), SplitSpec(10, 10), SplitSpec(0.1, 0.2)], ids=repr)
def test_novel_premises_is_deterministic_under_shuffling(theorems, spec):
    big = theorems + replicate(theorems, 2)
    ref = split_names(split_novel_premises(big, spec))
    for seed in range(4):
        assert split_names(split_novel_premises(shuffled(big, seed), spec)) == ref


def test_novel_premises_counts_larger_than_data(theorems):
    with pytest.raises(SplitError):
        split_novel_premises(theorems, SplitSpec(60, 41))


def test_split_theorems_gives_both(theorems):
    spec = SplitSpec(10, 10)
    both = split_theorems(iter(theorems), spec)
    assert set(both) == {"random", "novel_premises"}
    assert split_names(both["random"]) == split_names(split_random(theorems, spec))
    assert split_names(both["novel_premises"]) == split_names(split_novel_premises(theorems, spec))


# ------------------------------------------------------------------------------------------ sorry


@pytest.fixture(scope="module")
def sorry_theorems(records) -> list[Theorem]:
    with_tactics = [r for r in records if r["traced_tactics"]]
    return [make_sorry(r, f"{r['full_name']}.sorry_copy") for r in with_tactics[:8]]


@pytest.mark.parametrize("split", [split_random, split_novel_premises])
@pytest.mark.parametrize("spec", [SplitSpec(), SplitSpec(10, 10), SplitSpec(0.2, 0.3)], ids=repr)
def test_sorry_theorems_go_to_test(theorems, sorry_theorems, split, spec):
    data = shuffled(theorems + sorry_theorems, 2)
    splits = split(data, spec)
    assert_partition(splits, data)
    assert names(sorry_theorems) <= names(splits["test"])
    assert not names(sorry_theorems) & (names(splits["train"]) | names(splits["val"]))
    # the regular theorems split exactly as without the sorry ones
    alone = split_names(split(theorems, spec))
    got = split_names(splits)
    got["test"] -= names(sorry_theorems)
    assert got == alone


@pytest.mark.parametrize("split", [split_random, split_novel_premises])
@pytest.mark.parametrize(
    "spec", [SplitSpec(sorry="drop"), SplitSpec(10, 10, sorry="drop")], ids=repr
)
def test_sorry_theorems_dropped(theorems, sorry_theorems, split, spec):
    splits = split(theorems + sorry_theorems, spec)
    assert not any(t.has_sorry for part in splits.values() for t in part)
    assert_partition(splits, theorems)


def test_sorry_theorems_do_not_count_towards_counts(theorems, sorry_theorems):
    # 100 regular theorems: 60 + 40 is possible, 60 + 41 is not, however many sorry ones are added
    splits = split_random(theorems + sorry_theorems, SplitSpec(60, 40))
    assert len(splits["train"]) == 0 and len(splits["val"]) == 60
    assert len(splits["test"]) == 40 + len(sorry_theorems)
    with pytest.raises(SplitError):
        split_random(theorems + sorry_theorems, SplitSpec(60, 41))


# -------------------------------------------------------------------------------------- SplitSpec


def test_spec_defaults():
    spec = SplitSpec()
    assert (spec.val, spec.test, spec.sorry) == (0.02, 0.02, "test")
    assert spec.uses_ratios
    assert not SplitSpec(1, 2).uses_ratios


@pytest.mark.parametrize(
    "kwargs",
    [
        {"val": 1.5},
        {"test": 1.5},
        {"val": -0.1},
        {"test": -0.1},
        {"val": 1.0},
        {"val": -1, "test": 5},
        {"val": True, "test": 0.02},
        {"val": 0.02, "test": False},
        {"val": True, "test": 3},
        {"val": "0.02"},
        {"val": None},
        {"val": 0.5, "test": 0.5},
        {"val": 0.6, "test": 0.7},
        {"sorry": "train"},
        {"sorry": "keep"},
    ],
    ids=repr,
)
def test_spec_rejects(kwargs):
    with pytest.raises(SplitError):
        SplitSpec(**kwargs)


@pytest.mark.parametrize("val,test", [(0.02, 10), (10, 0.02), (0.5, 1), (5, 0.0)])
def test_spec_rejects_mixing_ratios_and_counts(val, test):
    with pytest.raises(SplitError, match="both"):
        SplitSpec(val, test)


def test_spec_accepts():
    assert SplitSpec(0.0, 0.99).test == 0.99
    assert SplitSpec(0, 0).val == 0
    assert SplitSpec(0.4, 0.59, sorry="drop").sorry == "drop"


def test_spec_parse():
    spec = SplitSpec.parse("10", "10")
    assert (spec.val, spec.test) == (10, 10)
    assert type(spec.val) is int and type(spec.test) is int and not spec.uses_ratios
    spec = SplitSpec.parse("0.02", "0.05", "drop")
    assert (spec.val, spec.test, spec.sorry) == (0.02, 0.05, "drop") and spec.uses_ratios
    for val, test in [
        ("0.02", "2000"),
        ("2000", "0.02"),
        ("1.5", "0.1"),
        ("0.1", "abc"),
        ("", "1"),
    ]:
        with pytest.raises(SplitError):
            SplitSpec.parse(val, test)
    with pytest.raises(SplitError):
        SplitSpec.parse("1", "1", "nope")
