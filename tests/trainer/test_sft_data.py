"""SFT examples: built only through ``models.prompts.training_pair``, sorry/admit tactics dropped,
prompt ids equal to the inference prompt's ids, loss on the completion only, and clear errors for
data that yields no example."""

from __future__ import annotations

import dataclasses

import pytest

from lean_dojo_v2.data import DatasetDir, TracedTactic
from lean_dojo_v2.errors import LeanDojoError
from lean_dojo_v2.models.prompts import render_prompt, training_pair
from lean_dojo_v2.trainer.errors import EmptyDatasetError
from lean_dojo_v2.trainer.sft_data import (
    build_examples,
    check_usable,
    is_sorry_tactic,
    tokenize_pairs,
)


def _theorems(sample_path):
    return DatasetDir(sample_path).theorems("random", "train")


def _with_tactics(theorem, tactics):
    first = theorem.traced_tactics[0]
    return dataclasses.replace(
        theorem, traced_tactics=[dataclasses.replace(first, tactic=t) for t in tactics]
    )


def test_examples_are_training_pairs_of_every_traced_tactic(sample_path, tiny_tok):
    theorems = _theorems(sample_path)
    built = build_examples(theorems, tiny_tok)
    expected = [
        training_pair(tiny_tok, tt.state_before, tt.tactic)
        for th in theorems
        for tt in th.traced_tactics
    ]
    assert built.pairs == expected
    assert built.stats.examples == built.stats.tactics == 128
    assert built.stats.theorems == 80 and built.stats.theorems_with_tactics == 42
    # the prompt is the inference prompt, the completion the tactic and the end marker
    tt = next(t for t in theorems if t.traced_tactics).traced_tactics[0]
    prompt, completion = built.pairs[0]
    assert prompt == render_prompt(tiny_tok, tt.state_before)
    assert completion == tt.tactic + "<|im_end|>"


def test_sorry_and_admit_tactics_are_dropped(sample_path, tiny_tok):
    base = next(t for t in _theorems(sample_path) if t.traced_tactics)
    th = _with_tactics(base, ["simp", "sorry", "exact foo.sorry_lemma", "· admit", "exact h.sorry"])
    built = build_examples([th], tiny_tok)
    assert [c.removesuffix("<|im_end|>") for _, c in built.pairs] == [
        "simp",
        "exact foo.sorry_lemma",
        "exact h.sorry",
    ]
    assert built.stats.sorry_dropped == 2
    assert is_sorry_tactic("by sorry") and not is_sorry_tactic("exact sorryAx")


def test_use_premises_puts_the_tactic_premises_in_the_prompt(sample_path, tiny_tok):
    th = next(t for t in _theorems(sample_path) if any(tt.premises for tt in t.traced_tactics))
    tt = next(tt for tt in th.traced_tactics if tt.premises)
    built = build_examples(
        [dataclasses.replace(th, traced_tactics=[tt])], tiny_tok, use_premises=True
    )
    assert built.pairs == [training_pair(tiny_tok, tt.state_before, tt.tactic, tt.premises)]
    assert tt.premises[0] in built.pairs[0][0]


def test_prompt_ids_are_the_inference_ids_and_only_the_completion_is_masked_in(
    sample_path, tiny_tok
):
    built = build_examples(_theorems(sample_path), tiny_tok, max_examples=5)
    rows, too_long = tokenize_pairs(built.pairs, tiny_tok, max_seq_len=4096)
    assert too_long == 0 and len(rows) == 5
    for (prompt, completion), row in zip(built.pairs, rows, strict=True):
        inference_ids = tiny_tok(prompt, add_special_tokens=False)["input_ids"]
        n = len(inference_ids)
        assert row["input_ids"][:n] == inference_ids
        assert row["completion_mask"] == [0] * n + [1] * (len(row["input_ids"]) - n)
        assert tiny_tok.decode(row["input_ids"][n:]) == completion


def test_examples_longer_than_max_seq_len_are_left_out_not_cut(sample_path, tiny_tok):
    built = build_examples(_theorems(sample_path), tiny_tok)
    rows, too_long = tokenize_pairs(built.pairs, tiny_tok, max_seq_len=300)
    assert too_long > 0 and len(rows) + too_long == len(built.pairs)
    assert all(len(r["input_ids"]) <= 300 for r in rows)


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("no_theorems", ["holds no theorems"]),
        ("no_tactics", ["traced tactics", "term-mode"]),
        ("only_sorry", ["sorry"]),
    ],
)
def test_data_without_usable_tactics_is_empty_dataset_error(sample_path, tiny_tok, case, words):
    theorems = _theorems(sample_path)
    if case == "no_theorems":
        data = []
    elif case == "no_tactics":
        data = [t for t in theorems if not t.traced_tactics]
    else:
        data = [_with_tactics(next(t for t in theorems if t.traced_tactics), ["sorry", "admit"])]
    for call in (
        lambda: build_examples(data, tiny_tok, source="my data"),
        lambda: check_usable(data, source="my data"),
    ):
        with pytest.raises(EmptyDatasetError) as info:
            call()
        assert isinstance(info.value, LeanDojoError)
        assert "my data" in str(info.value)
        for word in words:
            assert word in str(info.value)


def test_traced_tactic_type_is_the_data_layers():
    assert TracedTactic.__module__ == "lean_dojo_v2.data.model"
