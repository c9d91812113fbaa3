"""Turning a model's completion text into one tactic, or into one whole proof.

Chat models do not answer in the bare format a fine-tuned tactic generator writes. They wrap code
in fenced blocks (```` ```lean ... ``` ````), repeat the theorem statement, start with ``by``, or
add a sentence of prose. :func:`completion_tactic` and :func:`completion_proof` reduce such text
to what :class:`~lean_dojo_v2.interaction.ProofEnv` takes:

1. **Fences.** The first fenced block is unwrapped (a ``lean``/``lean4`` block is preferred to
   one in another language; for a whole proof the *last* Lean block, after any ``</think>``:
   reasoning provers sketch code before the complete proof); an unterminated block runs to the
   end of the text. A completion
   wrapped in single backticks (`` `simp` ``) is unwrapped too. Text without fences is kept.
2. **Statement.** A repeated ``theorem``/``lemma``/``example`` header ending in ``:= by`` is
   removed with everything before it.
3. **``by``.** A leading ``by`` (``by simp``, ``by`` followed by an indented block) is removed and
   the block dedented.
4. **One tactic** (:func:`completion_tactic` only): the first tactic of what is left, cut where
   :func:`~lean_dojo_v2.models.generator.tactic_end` cuts a generated tactic: a line break ends it
   unless the next line is indented or starts with ``|``, so a multi-line tactic (``induction n
   with`` and its ``| zero => ...`` alternatives, ``have h : p := by`` and its indented block) is
   kept whole, exactly as the Hugging Face generators cut their own output.
   A whole proof (:func:`completion_proof`) keeps every line.
5. **Forbidden.** A result that is empty or uses ``sorry``/``admit`` is dropped (``None``).

:func:`frequency_scores` is the score of completions that come without log-probabilities.

The other way round, :func:`state_text` and :func:`whole_proof_input` turn what upstream
LeanDojo-v2's calls (``next_tactic(state)``, ``generate_whole_proof(theorem)``) are given into the
goal text a prompt carries.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections import Counter
from collections.abc import Sequence

from ..errors import ModelError
from ..models.generator import is_forbidden, tactic_end
from ..models.proof_prompt import ProofRequest

__all__ = [
    "check_requests",
    "completion_proof",
    "completion_tactic",
    "frequency_scores",
    "state_text",
    "strip_by",
    "unwrap_fence",
    "whole_proof_input",
]

_FENCE = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.S | re.M)
_LEAN_LANGS = {"lean", "lean4", ""}
_HEADER = re.compile(
    r"^[ \t]*(?:@\[[^\]]*\][ \t]*)?(?:private[ \t]+|protected[ \t]+)?"
    r"(?:theorem|lemma|example)\b.*?:=[ \t]*by\b",
    re.S | re.M,
)
_BY = re.compile(r"^[ \t]*by(?=\s|$)")
_TRAILING_BY = re.compile(r"\s*:=\s*(?:by)?\s*$")


def unwrap_fence(text: str, *, last: bool = False) -> str:
    """The body of the first (``last``: the last) fenced code block of ``text`` (a Lean block
    preferred), or of a completion wrapped in single backticks; ``text`` itself when it has
    neither."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    if blocks:
        lean = [body for lang, body in blocks if lang in _LEAN_LANGS] or [blocks[0][1]]
        return lean[-1] if last else lean[0]
    stripped = text.strip()
    if len(stripped) > 2 and stripped[0] == stripped[-1] == "`" and "`" not in stripped[1:-1]:
        return stripped[1:-1]
    return text


def strip_statement(text: str) -> str:
    """``text`` after a repeated ``theorem ... := by`` header, when it holds one."""
    m = _HEADER.search(text)
    return text[m.end() :] if m else text


def strip_by(text: str) -> str:
    """``text`` without a leading ``by``, the rest dedented (``"by\\n  simp"`` -> ``"simp"``)."""
    m = _BY.match(text.lstrip("\n"))
    if not m:
        return text
    rest = text.lstrip("\n")[m.end() :]
    if rest.startswith((" ", "\t")) and "\n" not in rest.strip(" \t"):
        return rest.strip()  # by simp
    first, _, tail = rest.partition("\n")
    if first.strip():  # "by intro n\n  simp": the first tactic sits on the `by` line
        return first.strip() + ("\n" + textwrap.dedent(tail) if tail.strip() else "")
    return textwrap.dedent(tail)


def _body(text: str, last_block: bool = False) -> str:
    body = strip_by(strip_statement(unwrap_fence(text, last=last_block)))
    lines = textwrap.dedent(body).splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(line.rstrip() for line in lines).strip()


def completion_tactic(text: str | None) -> str | None:
    """The one tactic a completion proposes (see the module docstring), or None when it holds
    none (empty, or ``sorry``/``admit``)."""
    if not text or not text.strip():
        return None
    body = _body(text)
    cut = tactic_end(body, final=True)
    tactic = (body if cut is None else body[:cut]).rstrip()
    if not tactic or is_forbidden(tactic):
        return None
    return tactic


def completion_proof(text: str | None) -> str | None:
    """The whole tactic proof a completion proposes (every line kept, dedented, no leading
    ``by``), or None when it holds none or uses ``sorry``/``admit`` anywhere.

    Provers that reason before answering (DeepSeek-Prover-V2, Goedel-Prover-V2, Kimina-Prover)
    sketch code along the way and give the complete proof last: the answer after a closing
    ``</think>`` is read (an answer still thinking holds no proof), and its last Lean block."""
    if not text or not text.strip():
        return None
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    elif "<think>" in text:
        return None  # cut off while thinking: no answer yet
    proof = _body(text, last_block=True)
    if not proof or is_forbidden(proof):
        return None
    return proof


def frequency_scores(texts: Sequence[str | None]) -> list[float]:
    """Scores for completions that came without log-probabilities: each one's empirical
    log-frequency among the samples, ``log(count / len(texts))`` (a tactic sampled 3 times out
    of 8 scores ``log(3/8)``). The frequency of a sample is an unbiased estimate of its
    probability under the model, so these scores rank like log-probs and add up along a proof
    path. Ties keep the server's order (search sorts stably). ``None`` entries (dropped
    completions) count in the total but get ``-inf``."""
    total = len(texts)
    counts = Counter(t for t in texts if t is not None)
    return [math.log(counts[t] / total) if t is not None else -math.inf for t in texts]


def state_text(state: object) -> str:
    """The goal-state text of ``state``: a ``str`` as it is, a
    :class:`~lean_dojo_v2.interaction.ProofState` as the model sees it (``.text``), anything
    else (PyPantograph's ``GoalState``) as its ``str``."""
    if isinstance(state, str):
        return state
    text = getattr(state, "text", None)
    return text if isinstance(text, str) else str(state)


def whole_proof_input(theorem: object) -> str:
    """What a whole-proof prompt carries for ``theorem``.

    A :class:`~lean_dojo_v2.data.Theorem` gives its first traced state (the canonical state the
    models are trained on), else its statement, else its name; a statement text
    (``"theorem t : p → p := by"``) is taken without its trailing ``:= by`` (the model writes
    what follows it); a :class:`~lean_dojo_v2.interaction.ProofState` gives its text."""
    tactics = getattr(theorem, "traced_tactics", None)
    if tactics:
        return str(tactics[0].state_before)
    if hasattr(theorem, "full_name"):
        statement = getattr(theorem, "theorem_statement", None)
        text = statement if statement else str(theorem.full_name)
    else:
        text = state_text(theorem)
    return _TRAILING_BY.sub("", text.strip())


def check_requests(requests: object, num_samples: object) -> None:
    """Raise :class:`~lean_dojo_v2.errors.ModelError` unless ``requests`` is a list of
    :class:`~lean_dojo_v2.models.proof_prompt.ProofRequest` and ``num_samples`` an int >= 1
    (what ``sample_proofs`` takes)."""
    if isinstance(requests, (str, bytes)) or not isinstance(requests, Sequence):
        raise ModelError(f"requests must be a list of ProofRequest, not {type(requests).__name__}")
    bad = [i for i, r in enumerate(requests) if not isinstance(r, ProofRequest)]
    if bad:
        raise ModelError(
            f"requests[{bad[0]}] is a {type(requests[bad[0]]).__name__}, not a ProofRequest"
        )
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ModelError(f"num_samples must be a whole number >= 1, got {num_samples!r}")
