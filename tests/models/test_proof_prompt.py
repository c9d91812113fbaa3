"""``ProofPrompt``: DeepSeek-Prover's prompt for a standalone statement, the library's own
whole-proof prompt for a traced theorem (the very text SFT trains on), refinement prompts with
Lean's first error, and templates read from files (a bad one is one line, naming what to fix).
The statements are miniF2F's (DeepSeek-Prover-V1.5's release)."""

from __future__ import annotations

import json

import pytest
import yaml

from lean_dojo_v2.interaction.standalone import standalone_theorem
from lean_dojo_v2.models.prompts import (
    PROOF_SYSTEM_PROMPT,
    render_messages,
    render_proof_prompt,
)
from lean_dojo_v2.models.proof_prompt import (
    DEEPSEEK_PROMPT,
    STATE_PROMPT,
    FailedProof,
    LeanFeedback,
    PromptTemplateError,
    ProofPrompt,
    ProofRequest,
    ProofTask,
    default_proof_prompt,
    fill_template,
    load_proof_prompt,
)

HEADER = (
    "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\n"
    "open BigOperators Real Nat Topology Rat\n\n"
)
STATEMENT = "theorem mathd_algebra_182 (y : ℂ) : 7 * (3 * y + 2) = 21 * y + 14 := by\n"
INFORMAL = "Expand the following expression: $7(3y+2)$ Show that it is 21y+14."
GOAL = "y : ℂ\n⊢ 7 * (3 * y + 2) = 21 * y + 14"


def task() -> ProofTask:
    thm = standalone_theorem("mathd_algebra_182", HEADER, STATEMENT, goal=GOAL, informal=INFORMAL)
    return ProofTask.from_theorem(thm)


def test_a_benchmark_problem_gets_deepseek_provers_prompt():
    t = task()
    assert t.standalone and t.header == HEADER and t.state == GOAL
    assert default_proof_prompt(t) is DEEPSEEK_PROMPT
    messages = DEEPSEEK_PROMPT.messages(ProofRequest(t))
    assert [m["role"] for m in messages] == ["user"]  # asked without a system turn
    assert messages[0]["content"] == (
        "Complete the following Lean 4 code:\n\n```lean4\n"
        + HEADER
        + f"/-- {INFORMAL} -/\n"
        + STATEMENT.rstrip()
        + "\n```"
    )


def test_an_informal_statement_already_a_comment_is_kept_as_it_is():
    prefix = f"/-- {INFORMAL}-/\n"  # DeepSeek-Prover's informal_prefix
    t = ProofTask("t", HEADER, STATEMENT, prefix)
    assert prefix in DEEPSEEK_PROMPT.whole_prompt(t)
    assert "/-- /--" not in DEEPSEEK_PROMPT.whole_prompt(t)


def test_a_traced_theorem_gets_the_prompt_sft_trains_on(tiny_causal):
    from lean_dojo_v2.data import load_theorems, sample_dataset_path

    thm = next(t for t in load_theorems(sample_dataset_path()) if t.traced_tactics)
    state = thm.traced_tactics[0].state_before
    t = ProofTask.from_theorem(thm, state)
    assert not t.standalone and default_proof_prompt(t) is STATE_PROMPT
    tok = tiny_causal.tokenizer
    for style in ("chat", "plain", "state"):
        premises = ["theorem foo : True"]
        sent = render_messages(tok, STATE_PROMPT.messages(ProofRequest(t), premises), style=style)
        if style == "chat" and not getattr(tok, "chat_template", None):
            continue
        assert sent == render_proof_prompt(tok, state, premises, style=style), style
    assert STATE_PROMPT.messages(ProofRequest(t))[0] == {
        "role": "system",
        "content": PROOF_SYSTEM_PROMPT,
    }


def test_the_refine_prompt_carries_the_failed_proof_and_leans_first_error():
    t = task()
    failed = FailedProof(
        "ring_nf\nlinarith",
        LeanFeedback(
            "linarith failed to find a contradiction", 2, 0, "y : ℂ\n⊢ 14 + y * 21 = 21 * y + 14"
        ),
    )
    (user,) = DEEPSEEK_PROMPT.messages(ProofRequest(t, (failed,)))
    text = user["content"]
    assert text.startswith(DEEPSEEK_PROMPT.whole_prompt(t))
    assert STATEMENT.rstrip() + "\n  ring_nf\n  linarith\n```" in text  # the code as checked
    assert "at line 2, column 0 of the proof:\nlinarith failed to find a contradiction" in text
    assert "The goal there:\ny : ℂ\n⊢ 14 + y * 21 = 21 * y + 14" in text
    outside = FailedProof("", LeanFeedback("unsolved goals", goal=GOAL))
    (user,) = DEEPSEEK_PROMPT.messages(ProofRequest(t, (failed, outside)))
    assert "at the statement (outside the proof):\nunsolved goals" in user["content"]
    assert "linarith failed" not in user["content"]  # the latest failure is the one shown


def test_a_template_file_overrides_the_prompt(tmp_path):
    path = tmp_path / "goedel.yaml"
    path.write_text(
        "system: You prove theorems in Lean 4.\n"
        "whole: |-\n  Prove {name}:\n  {formal_statement}\n"
        "refine: |-\n  {whole}\n  Round {round}. Lean said at {line}:{column}: {error}\n",
        encoding="utf-8",
    )
    prompt = ProofPrompt.from_file(path)
    assert load_proof_prompt(str(path)) == prompt and load_proof_prompt(prompt) is prompt
    t = task()
    system, user = prompt.messages(ProofRequest(t))
    assert system == {"role": "system", "content": "You prove theorems in Lean 4."}
    assert user["content"] == f"Prove mathd_algebra_182:\n{STATEMENT.rstrip()}"
    failed = FailedProof("simp", LeanFeedback("simp made no progress", 1, 0))
    _, user = prompt.messages(ProofRequest(t, (failed,)))
    assert user["content"].endswith("Round 1. Lean said at 1:0: simp made no progress")
    only_whole = tmp_path / "whole.json"
    only_whole.write_text(json.dumps({"whole": "{formal_statement}"}), encoding="utf-8")
    partial = ProofPrompt.from_file(only_whole)
    assert partial.refine == DEEPSEEK_PROMPT.refine and partial.system is None
    toml = tmp_path / "p.toml"
    toml.write_text('whole = "{header}{formal_statement}"\n', encoding="utf-8")
    assert ProofPrompt.from_file(toml).whole_prompt(t) == HEADER + STATEMENT.rstrip()


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        ("typo.json", '{"whole": "{formal_statment}"}', r"unknown placeholder \{formal_statment\}"),
        ("refine_only.json", '{"whole": "{error}"}', r"unknown placeholder \{error\}"),
        ("key.json", '{"wole": "{name}"}', r"unknown key\(s\) wole"),
        ("bad.json", '{"whole": ', r"does not parse as json"),
        ("list.yaml", "- a\n- b\n", r"must hold a mapping"),
        ("brace.json", '{"whole": "{name"}', r"brace"),
        ("positional.json", '{"whole": "{}"}', r"positional placeholder"),
        ("number.json", '{"whole": 3}', r"whole must be a text"),
        ("prompt.txt", "{name}", r"\.json, \.yaml/\.yml or \.toml"),
    ],
)
def test_a_bad_template_file_is_one_line_saying_what_to_fix(tmp_path, name, text, match):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PromptTemplateError, match=match) as info:
        ProofPrompt.from_file(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("{header:>3000000000}", "has a format spec"),  # would pad the prompt to 3 GB
        ("{formal_statement:{name}}", "has a format spec"),
        ("{header!r}", "has a conversion"),
        ("{header.__class__.__name__}", "reads an attribute or an index of {header}"),
        ("{header[0]}", "reads an attribute or an index of {header}"),
        ("{__class__}", "unknown placeholder"),
    ],
)
def test_a_placeholder_is_a_bare_name(tmp_path, template, why):
    """Only the documented names, as they are: no format spec, conversion, attribute or index;
    the error names the placeholder and lists the valid ones, in a file or in Python."""
    path = tmp_path / "prompt.yaml"
    path.write_text(yaml.safe_dump({"whole": "Prove: " + template}), encoding="utf-8")
    with pytest.raises(PromptTemplateError) as info:
        ProofPrompt.from_file(path)
    message = str(info.value)
    assert f"placeholder {template}" in message and why in message, message
    assert str(path) in message and "\n" not in message
    assert "valid placeholders: {name}, {header}, {informal}" in message
    with pytest.raises(PromptTemplateError, match="ProofPrompt.refine: .*valid placeholders"):
        ProofPrompt(refine="{whole} " + template)


def test_a_template_is_filled_with_its_values_alone():
    assert fill_template("{{x}} {name}: {header}", {"name": "p", "header": "h"}) == "{x} p: h"
    # values are never formatted again: braces in them stay as they are
    assert fill_template("{name}", {"name": "{header:>9}"}) == "{header:>9}"


def test_a_missing_template_file_names_it(tmp_path):
    with pytest.raises(PromptTemplateError, match="cannot read the prompt template"):
        load_proof_prompt(tmp_path / "nope.yaml")
    with pytest.raises(PromptTemplateError, match="not int"):
        load_proof_prompt(3)  # type: ignore[arg-type]
