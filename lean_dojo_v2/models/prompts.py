"""The one prompt format shared by training and inference.

Every trainer builds its examples with :func:`training_pair` and every generator builds its
inputs with :func:`render_prompt`; ``training_pair`` calls ``render_prompt`` for its prompt, so a
model is always asked in exactly the text it was trained on (a train/inference mismatch is
impossible by construction; ``tests/models/test_prompts.py`` checks it down to token ids).

Three styles, chosen by :func:`prompt_style` unless a caller names one:

``"chat"`` (the tokenizer has a chat template: SmolLM2, DeepSeek-Prover, Qwen-based provers)
    ``tokenizer.apply_chat_template([system, user], add_generation_prompt=True)``: the text ends
    exactly where the assistant's reply (the tactic) starts. The system turn is
    :data:`SYSTEM_PROMPT`; templates that refuse a system role get it folded into the user turn.
    The completion is ``tactic + end marker``, the marker being what the template writes after an
    assistant message (``<|im_end|>`` for ChatML), found by rendering one (:func:`end_marker`).
``"plain"`` (a causal LM without a chat template)
    :data:`PLAIN_TEMPLATE` (``"[GOAL]\\n{user}\\n[PROOFSTEP]\\n"``); the completion ends with the
    tokenizer's EOS token.
``"state"`` (seq2seq models such as ReProver's ByT5)
    the encoder input is the user content itself; the decoder target is the bare tactic (the
    tokenizer appends its own EOS).

The user content (:func:`user_content`) is :func:`lean_dojo_v2.data.canonical_state` of the goal
state, preceded by the retrieved premises when there are any::

    Premises:
    <premise 1>
    <premise 2>

    Goal:
    <canonical state>

Token-level note for trainers: tokenise chat-style text with ``add_special_tokens=False`` (the
template already writes BOS and the turn markers); the generators do so
(:func:`add_special_tokens_for`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from ..data import canonical_state
from ..errors import ModelError

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedTokenizerBase

PromptStyle = Literal["chat", "plain", "state"]
STYLES: tuple[str, ...] = ("chat", "plain", "state")

SYSTEM_PROMPT = (
    "You are a Lean 4 tactic generator. Given a proof state (and possibly useful premises), "
    "reply with exactly ONE Lean 4 tactic that makes progress on the first goal. "
    "Never use sorry or admit."
)
"""The system turn of every chat-style prompt."""

PLAIN_TEMPLATE = "[GOAL]\n{user}\n[PROOFSTEP]\n"
"""The prompt of a causal LM without a chat template; ``{user}`` is :func:`user_content`."""

PROOF_SYSTEM_PROMPT = (
    "You are a Lean 4 prover. Given a proof state (and possibly useful premises), reply with a "
    "complete Lean 4 tactic proof that closes every goal: the tactics only, one per line, without "
    "the theorem statement and without a leading `by`. Never use sorry or admit."
)
"""The system turn of every chat-style whole-proof prompt (:func:`render_proof_prompt`)."""

PLAIN_PROOF_TEMPLATE = "[GOAL]\n{user}\n[PROOF]\n"
"""The whole-proof prompt of a causal LM without a chat template."""

_SENTINEL = "\u2063TACTIC\u2063"  # invisible separators: never produced by a template itself


def user_content(state: str, premises: Sequence[str] = ()) -> str:
    """The user turn: the canonical goal state, after the premises when there are any."""
    goal = canonical_state(state)
    premises = [p.strip() for p in premises if p and p.strip()]
    if not premises:
        return goal
    return "Premises:\n" + "\n".join(premises) + "\n\nGoal:\n" + goal


def prompt_style(tokenizer: PreTrainedTokenizerBase, style: str | None = None) -> PromptStyle:
    """``style`` checked, or ``"chat"`` when the tokenizer has a chat template, else ``"plain"``."""
    if style is not None:
        if style not in STYLES:
            raise ModelError(f"unknown prompt style {style!r}; valid styles: {', '.join(STYLES)}")
        return style  # type: ignore[return-value]  # one of STYLES, checked just above
    return "chat" if getattr(tokenizer, "chat_template", None) else "plain"


def add_special_tokens_for(style: str) -> bool:
    """Whether text of this style is tokenised with the tokenizer's own special tokens (BOS/EOS):
    not for chat text, whose template writes them already."""
    return style != "chat"


def _messages(user: str, fold_system: bool, system: str = SYSTEM_PROMPT) -> list[dict[str, str]]:
    if fold_system:
        return [{"role": "user", "content": system + "\n\n" + user}]
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _apply(
    tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]], generation_prompt: bool
) -> str:
    text = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=generation_prompt
    )
    if isinstance(text, str):
        return text
    return str(text[0])  # some versions return a list for a single conversation


def _render_chat(
    tokenizer: PreTrainedTokenizerBase,
    messages_for: Callable[[bool], list[dict[str, str]]],
    generation_prompt: bool,
) -> str:
    try:
        return _apply(tokenizer, messages_for(False), generation_prompt)
    except Exception:  # jinja2 TemplateError and friends: "System role not supported"
        return _apply(tokenizer, messages_for(True), generation_prompt)


def render_prompt(
    tokenizer: PreTrainedTokenizerBase,
    state: str,
    premises: Sequence[str] = (),
    *,
    style: str | None = None,
) -> str:
    """The exact text fed to the model for ``state``; it ends exactly where the tactic starts."""
    style = prompt_style(tokenizer, style)
    user = user_content(state, premises)
    if style == "state":
        return user
    if style == "plain":
        return PLAIN_TEMPLATE.format(user=user)
    return _render_chat(tokenizer, lambda fold: _messages(user, fold), True)


def end_marker(tokenizer: PreTrainedTokenizerBase, style: str | None = None) -> str:
    """The text that ends a completion: what the chat template writes after an assistant message
    (stripped of white space), else the EOS token; ``""`` for the ``"state"`` style."""
    style = prompt_style(tokenizer, style)
    if style == "state":
        return ""
    eos = getattr(tokenizer, "eos_token", None) or ""
    if style == "plain":
        return eos
    full = _render_chat(
        tokenizer,
        lambda fold: [*_messages("x", fold), {"role": "assistant", "content": _SENTINEL}],
        False,
    )
    at = full.rfind(_SENTINEL)
    after = full[at + len(_SENTINEL) :].strip() if at >= 0 else ""
    if not after:
        return eos
    # Only the first special piece ("<|im_end|>"), not a following turn or white space.
    return after.split()[0]


def training_pair(
    tokenizer: PreTrainedTokenizerBase,
    state: str,
    tactic: str,
    premises: Sequence[str] = (),
    *,
    style: str | None = None,
) -> tuple[str, str]:
    """``(prompt, completion)`` for one traced tactic: ``prompt`` is :func:`render_prompt`'s text
    and ``completion`` the tactic (trailing white space removed) followed by :func:`end_marker`
    (the token generation stops at).
    """
    style = prompt_style(tokenizer, style)
    prompt = render_prompt(tokenizer, state, premises, style=style)
    return prompt, tactic.rstrip() + end_marker(tokenizer, style)


# --------------------------------------------------------------------------- whole proofs and chat APIs
#
# Whole-proof mode asks for every tactic of a proof at once. The prompt differs from the tactic
# prompt only in its instruction (:data:`PROOF_SYSTEM_PROMPT`, or ``[PROOF]`` instead of
# ``[PROOFSTEP]``); the completion is the proof (tactics one per line, multi-line tactics kept)
# followed by the same end marker, so generation stops at the end marker, not at a line break.


def chat_messages(
    state: str, premises: Sequence[str] = (), *, whole_proof: bool = False
) -> list[dict[str, str]]:
    """The ``messages`` of an OpenAI-compatible chat request for ``state``: the system turn
    (:data:`SYSTEM_PROMPT`, or :data:`PROOF_SYSTEM_PROMPT` for a whole proof) and the user turn
    (:func:`user_content`), exactly what :func:`render_prompt` renders through a chat template."""
    system = PROOF_SYSTEM_PROMPT if whole_proof else SYSTEM_PROMPT
    return _messages(user_content(state, premises), False, system)


def render_proof_prompt(
    tokenizer: PreTrainedTokenizerBase,
    state: str,
    premises: Sequence[str] = (),
    *,
    style: str | None = None,
) -> str:
    """The exact text fed to a model asked for a whole proof of ``state``; it ends exactly where
    the proof starts (the whole-proof twin of :func:`render_prompt`)."""
    style = prompt_style(tokenizer, style)
    user = user_content(state, premises)
    if style == "state":
        return user
    if style == "plain":
        return PLAIN_PROOF_TEMPLATE.format(user=user)
    return _render_chat(tokenizer, lambda fold: _messages(user, fold, PROOF_SYSTEM_PROMPT), True)


def proof_training_pair(
    tokenizer: PreTrainedTokenizerBase,
    state: str,
    proof: str,
    premises: Sequence[str] = (),
    *,
    style: str | None = None,
) -> tuple[str, str]:
    """``(prompt, completion)`` for a whole proof of ``state`` (its tactics, one per line):
    :func:`render_proof_prompt`'s text, and the proof followed by :func:`end_marker`."""
    style = prompt_style(tokenizer, style)
    prompt = render_proof_prompt(tokenizer, state, premises, style=style)
    return prompt, proof.rstrip() + end_marker(tokenizer, style)


def _folded(messages: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """``messages`` with a leading system turn folded into the first user turn."""
    out = [dict(m) for m in messages]
    if len(out) > 1 and out[0].get("role") == "system" and out[1].get("role") == "user":
        system = out.pop(0)
        out[0]["content"] = system["content"] + "\n\n" + out[0]["content"]
    return out


def render_messages(
    tokenizer: PreTrainedTokenizerBase,
    messages: Sequence[Mapping[str, str]],
    *,
    style: str | None = None,
) -> str:
    """The exact text fed to a model for chat ``messages`` (``role``/``content`` turns); it ends
    where the answer starts. ``"chat"``: the tokenizer's template with a generation prompt (a
    template that refuses a system role gets the system turn folded into the first user turn);
    ``"plain"``: :data:`PLAIN_PROOF_TEMPLATE` around the non-system turns joined by blank lines;
    ``"state"``: those turns alone. For ``[system PROOF_SYSTEM_PROMPT, user user_content(state)]``
    this is :func:`render_proof_prompt`'s text, so a whole-proof request of a traced theorem is
    asked exactly as SFT trains."""
    style = prompt_style(tokenizer, style)
    if style != "chat":
        user = "\n\n".join(m["content"] for m in messages if m.get("role") != "system")
        return user if style == "state" else PLAIN_PROOF_TEMPLATE.format(user=user)
    plain = [dict(m) for m in messages]
    return _render_chat(tokenizer, lambda fold: _folded(plain) if fold else plain, True)
