"""The one prompt format: training pairs and inference prompts are the same text and tokens."""

from __future__ import annotations

import pytest

from lean_dojo_v2.data import canonical_state
from lean_dojo_v2.errors import ModelError
from lean_dojo_v2.models.prompts import (
    PLAIN_TEMPLATE,
    SYSTEM_PROMPT,
    add_special_tokens_for,
    end_marker,
    prompt_style,
    render_prompt,
    training_pair,
    user_content,
)

STATE = "n : ℕ\n⊢ n + 0 = n"
WRAPPED = "a b :\n  ℕ\nh : a ≤ b\n⊢ a < b + 1"
TACTICS = [
    "simp",
    "rw [Nat.add_comm] at h",
    "induction n with\n  | zero => rfl\n  | succ n ih => simp",
]


@pytest.fixture(scope="module")
def tok(tiny_causal):
    return tiny_causal.tokenizer


def test_chat_prompt_ends_where_the_tactic_starts(tok):
    prompt = render_prompt(tok, STATE)
    assert prompt.endswith("<|im_start|>assistant\n")
    assert SYSTEM_PROMPT in prompt
    assert canonical_state(STATE) in prompt


def test_user_content_is_the_canonical_state_with_premises_first():
    assert user_content(WRAPPED) == canonical_state(WRAPPED)
    text = user_content(STATE, ["Nat.add_zero (n : ℕ) : n + 0 = n", "  "])
    assert text == "Premises:\nNat.add_zero (n : ℕ) : n + 0 = n\n\nGoal:\n" + canonical_state(STATE)


def test_wrapped_and_unwrapped_states_give_the_same_prompt(tok):
    assert render_prompt(tok, WRAPPED) == render_prompt(tok, "a b : ℕ\nh : a ≤ b\n⊢ a < b + 1")


@pytest.mark.parametrize("tactic", TACTICS)
@pytest.mark.parametrize("premises", [(), ("Nat.add_comm : a + b = b + a",)])
def test_training_pair_prompt_is_the_inference_prompt_token_for_token(tok, tactic, premises):
    prompt, completion = training_pair(tok, STATE, tactic, premises)
    assert prompt == render_prompt(tok, STATE, premises)
    assert completion == tactic + "<|im_end|>"
    special = add_special_tokens_for(prompt_style(tok))
    inference_ids = tok(render_prompt(tok, STATE, premises), add_special_tokens=special).input_ids
    train_ids = tok(prompt + completion, add_special_tokens=special).input_ids
    assert train_ids[: len(inference_ids)] == inference_ids
    assert train_ids[-1] == tok.eos_token_id  # generation stops at the token training ends with
    assert tok.decode(train_ids[len(inference_ids) : -1]) == tactic


def test_end_marker_comes_from_the_chat_template(tok):
    assert end_marker(tok) == "<|im_end|>"


def test_plain_style_without_chat_template(tiny_causal_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_causal_dir))
    tok.chat_template = None
    assert prompt_style(tok) == "plain"
    prompt, completion = training_pair(tok, STATE, "simp  \n")
    assert prompt == PLAIN_TEMPLATE.format(user=canonical_state(STATE))
    assert completion == "simp" + tok.eos_token


def test_state_style_for_seq2seq(tiny_seq2seq):
    tok = tiny_seq2seq.tokenizer
    prompt, completion = training_pair(tok, STATE, "simp", style="state")
    assert prompt == canonical_state(STATE) and completion == "simp"


def test_template_without_system_role_gets_the_system_text_in_the_user_turn(tiny_causal_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_causal_dir))
    tok.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}"
        "{{ raise_exception('System role not supported') }}{% endif %}"
        "<u>{{ m['content'] }}</u>{% endfor %}{% if add_generation_prompt %}<a>{% endif %}"
    )
    prompt = render_prompt(tok, STATE)
    assert prompt.startswith("<u>" + SYSTEM_PROMPT) and prompt.endswith("<a>")


def test_unknown_prompt_style_names_the_valid_ones(tok):
    with pytest.raises(ModelError, match="chat, plain, state"):
        render_prompt(tok, STATE, style="alpaca")
