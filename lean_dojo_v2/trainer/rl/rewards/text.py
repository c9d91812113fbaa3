"""Reading a completion without Lean: where it ends, its tactics, and what a proof may not contain.

Shared by the format, Lean-checked and efficiency scorers, so that "the tactic the model wrote"
and "a cheat" mean the same thing to every reward.

- :func:`clean_completion`: the text before the first end marker (TRL decodes with
  ``skip_special_tokens=True``, but a marker that is not a special token survives), stripped.
- :func:`completion_tactics`: its top-level tactics (``split_tactics``: a multi-line tactic stays
  whole).
- :func:`refusal_reason`: why a proof is refused before any Lean runs (``sorry``, a declaration,
  a restated goal, an axiom or a way around the kernel), or None.
- :func:`balance_problem`: unbalanced brackets, or an unterminated string or comment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ....data.goals import goal_texts
from ....data.lean_lexer import COMMENT_KINDS, DECL_KINDS, strip_leading_by, tokenize
from ....data.sorry import strip_comments
from ....interaction.replay import normalize_tactic, split_tactics
from ....models.candidates import is_forbidden

# What chat templates write after an assistant turn, and common EOS texts.
END_MARKERS: tuple[str, ...] = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|end|>",
    "<｜end▁of▁sentence｜>",
    "</s>",
    "<eos>",
    "<end_of_turn>",
)

# Commands that have no business inside a tactic proof: each could add or change a declaration,
# a tactic, or the file (``#exit`` ends elaboration early). Hash commands are refused by kind.
_COMMANDS = frozenset(
    {
        "import", "namespace", "section", "universe", "variable", "mutual", "export",
        "notation", "macro", "macro_rules", "syntax", "elab", "elab_rules", "initialize",
        "deriving",
    }
)  # fmt: skip
# Names that bring in an axiom outside propext / Classical.choice / Quot.sound, skip the kernel,
# or run arbitrary meta code (which can close a goal with sorryAx unseen). Pantograph does not
# report a proof's axioms, so these are refused as words (any component of a dotted name).
_UNSAFE_NAMES = frozenset(
    {
        "axiom", "sorryAx", "unsafe", "implemented_by", "extern", "native_decide",
        "ofReduceBool", "ofReduceNat", "trustCompiler", "skipKernelTC", "admitGoal",
        "run_tac", "run_cmd", "run_elab", "run_meta",
    }
)  # fmt: skip
# Tactics whose own syntax has ``name : type := value`` at the top level.
_BINDING_TACTICS = frozenset(
    {
        "have", "haveI", "have'", "let", "letI", "let'", "obtain", "set", "suffices", "show",
        "calc", "replace", "rsuffices", "lift", "choose", "exists", "use", "refine_lift",
        "rcases", "cases'", "induction'", "generalize", "specialize", "conv", "match", "fun",
    }
)  # fmt: skip
# After these tokens a new tactic (or term) starts, so a ``:=`` after them is judged afresh.
_SEGMENT_BREAKS = frozenset({";", "<;>", "by", "=>", "·", "."})
_OPENERS = {"(": ")", "[": "]", "{": "}", "⟨": "⟩", "⦃": "⦄", "⟦": "⟧", "@[": "]"}
_CLOSERS = frozenset(_OPENERS.values())
_FENCE = "```"


def clean_completion(text: str, end_markers: Sequence[str] = END_MARKERS) -> str:
    """``text`` cut at its first end marker, white space stripped at both ends."""
    cut = len(text)
    for marker in end_markers:
        i = text.find(marker)
        if 0 <= i < cut:
            cut = i
    return text[:cut].strip()


def completion_tactics(text: str) -> list[str]:
    """The top-level tactics of a cleaned completion (a leading ``by`` dropped)."""
    return split_tactics(text) if text.strip() else []


def first_tactic(text: str) -> str:
    """The completion's first tactic (what a one-tactic prompt asks for), or ``""``."""
    tactics = completion_tactics(text)
    return tactics[0] if tactics else ""


def tactic_key(tactic: str) -> str:
    """The cache key of a tactic: white space normalised (as ``ReplayEnv`` matches tactics)."""
    return normalize_tactic(tactic)


def state_key(state: str) -> str:
    """The cache key of a goal state: its goals' canonical text."""
    return "\n\n".join(goal_texts(state)) if state else ""


def starts_with_by(text: str) -> bool:
    return strip_leading_by(text) is not None


def balance_problem(text: str) -> str | None:
    """Why ``text`` cannot parse as whole tactics (unbalanced or crossed brackets, an unterminated
    string or block comment), or None. A lexical check: no Lean runs."""
    stack: list[str] = []
    for token in tokenize(text):
        if token.kind == "string" and (len(token.text) < 2 or not token.text.endswith('"')):
            return "an unterminated string literal"
        if token.kind in ("block", "doc", "moddoc") and not token.text.endswith("-/"):
            return "an unterminated block comment"
        if token.text in _OPENERS and token.kind in ("other", "attr"):
            stack.append(_OPENERS[token.text])
        elif token.kind == "other" and token.text in _CLOSERS:
            if not stack or stack.pop() != token.text:
                return f"an unmatched {token.text!r}"
    if stack:
        return f"an unclosed bracket (expected {stack[-1]!r})"
    return None


def _restates_goal(tactic: str) -> bool:
    """Whether one top-level tactic restates a goal with ``:=``: its first line holds a ``:=``
    outside brackets that no binding tactic (``have``, ``obtain``, ``set``, ``calc``…) owns, or
    the tactic starts with ``:`` / ``:=`` (the model wrote the statement before the proof)."""
    first_line = tactic.split("\n", 1)[0]
    tokens = [t for t in tokenize(first_line) if t.kind not in COMMENT_KINDS]
    if not tokens:
        return False
    if tokens[0].text in (":", ":=") or tokens[0].text.startswith(":"):
        return True
    depth = 0
    owner: str | None = None  # the first word of the current tactic segment
    for token in tokens:
        text = token.text
        if token.kind == "other" and text in _OPENERS or token.kind == "attr":
            depth += 1
            continue
        if token.kind == "other" and text in _CLOSERS:
            depth = max(0, depth - 1)
            continue
        if depth:
            continue
        if text in _SEGMENT_BREAKS:
            owner = None
            continue
        if owner is None:
            owner = text
        if token.kind == "assign" and owner not in _BINDING_TACTICS:
            return True
    return False


def refusal_reason(text: str) -> str | None:
    """Why a completion cannot count as a proof whatever Lean says, or None.

    Refused: ``sorry``/``admit``/``sorryAx`` as words in code; a declaration keyword
    (``theorem``, ``lemma``, ``def``, ``axiom``…), an attribute ``@[...]``, a command
    (``import``, ``macro``, ``#exit``…); a name that brings in a non-standard axiom, skips the
    kernel or runs meta code (``native_decide``, ``implemented_by``, ``extern``, ``unsafe``,
    ``run_tac``…); a tactic that restates the goal with ``:=``. Comments are ignored."""
    if is_forbidden(strip_comments(text)):
        return "uses sorry, admit or sorryAx"
    for token in tokenize(text):
        if token.kind == "hash":
            return f"contains the command {token.text}"
        if token.kind == "attr":
            return "contains an attribute @[...]"
        if token.kind != "ident":
            continue
        if token.text in DECL_KINDS:
            return f"declares something ({token.text})"
        if token.text in _COMMANDS:
            return f"contains the command {token.text}"
        for part in token.text.split("."):
            if part in _UNSAFE_NAMES:
                return f"uses {part} (a non-standard axiom, kernel bypass or meta code)"
    for tactic in completion_tactics(text):
        if _restates_goal(tactic):
            return "restates the goal with := (a changed statement)"
    return None


def has_fence(text: str) -> bool:
    return _FENCE in text


# Capitalised English words that start prose, never a Lean tactic.
_PROSE_START = re.compile(
    r"^(The|This|That|These|We|To|First|Here|Let's|Sure|Proof|Note|Since|Now|Next|Then|Thus|"
    r"Therefore|Hence|So|I|It|In|Okay|OK|Answer|Solution|Step|Explanation|Because|Using|"
    r"Apply|Use)\b[ ,:]"
)
_SENTENCE = re.compile(r"[a-z]{2,}[.!?] +[A-Z][a-z]")


def looks_like_prose(text: str) -> bool:
    """Heuristic: the text opens with an English word or holds a sentence break."""
    return bool(_PROSE_START.match(text)) or bool(_SENTENCE.search(strip_comments(text)))
