"""Goal-state normalisation: the one place where goal text is cleaned, split and made canonical.

Goal text reaches us from several printers: LeanDojo traces (``state_before`` / ``state_after``;
old benchmarks prefix ``N goals``), Pantograph, and miniCTX (``🎉 no goals``). Models, search
deduplication and replay all go through these functions so the same state always looks the same.

A state is a list of goals separated by blank lines. A goal is an optional ``case tag`` line,
hypotheses ``names : type`` (long ones wrap onto indented continuation lines) and a target
``⊢ type`` (which may wrap too).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from .marks import remove_marks

NO_GOALS = "no goals"
_NO_GOALS_FORMS = frozenset(
    {"no goals", "🎉 no goals", "goals accomplished", "🎉 goals accomplished", ""}
)
_COUNT_PREFIX = re.compile(r"^\d+ goals?\n")
_WS = re.compile(r"\s+")
TURNSTILE = "⊢"


@dataclass(frozen=True, slots=True)
class Hypothesis:
    names: tuple[str, ...]
    type: str
    value: str | None = None  # let-bound hypotheses print as ``x : T := v``

    def render(self) -> str:
        text = f"{' '.join(self.names)} : {self.type}" if self.names else self.type
        return text if self.value is None else f"{text} := {self.value}"


@dataclass(frozen=True, slots=True)
class Goal:
    case: str | None
    hypotheses: tuple[Hypothesis, ...]
    target: str

    def render(self) -> str:
        lines = [f"case {self.case}"] if self.case is not None else []
        lines.extend(h.render() for h in self.hypotheses)
        lines.append(f"{TURNSTILE} {self.target}")
        return "\n".join(lines)


def is_no_goals(state: str) -> bool:
    """True for every printed form of a finished proof."""
    return _strip_count(_unwrap_comment(remove_marks(state)).strip()) in _NO_GOALS_FORMS


def _strip_count(text: str) -> str:
    # "1 goal\n…" / "3 goals\n…" headers of LeanDojo v1 pretty-printing carry no information.
    return _COUNT_PREFIX.sub("", text, count=1) if text[:1].isdigit() else text


_COMMENT_BLOCK = re.compile(r"/-(.*?)-/", re.DOTALL)


def _unwrap_comment(text: str) -> str:
    # miniCTX prints states inside Lean comments, indented: "/-\n  ⊢ …\n-/". Where several goals
    # are open it prints one block per goal, finished ones as "🎉 no goals"; those are dropped.
    stripped = text.strip()
    if not (stripped.startswith("/-") and stripped.endswith("-/") and len(stripped) >= 4):
        return text
    blocks = [textwrap.dedent(b.strip("\n")).strip() for b in _COMMENT_BLOCK.findall(stripped)]
    open_goals = [b for b in blocks if b not in _NO_GOALS_FORMS]
    return "\n\n".join(open_goals) if open_goals else NO_GOALS


def clean_state(state: str) -> str:
    """Marks removed, ``N goals`` header and comment wrapping dropped, trailing spaces cut, every
    finished form → ``no goals``.

    Line breaks and indentation are kept: this is the text a model sees.
    """
    text = _strip_count(_unwrap_comment(remove_marks(state)).strip("\n"))
    if text.strip() in _NO_GOALS_FORMS:
        return NO_GOALS
    if " \n" in text or text.endswith(" "):
        text = "\n".join(line.rstrip() for line in text.split("\n"))
    return text


_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def _split_goal_blocks(text: str) -> list[str]:
    if "\n\n" not in text and "\n " not in text and "\n\t" not in text:
        return [text] if text.strip() else []
    return [block for block in _BLANK_LINE.split(text) if block.strip()]


def _join_continuations(block: str) -> list[str]:
    """Logical lines: an indented line continues the line before it (Lean wraps long types)."""
    lines: list[str] = []
    for raw in block.split("\n"):
        if lines and raw[:1] in (" ", "\t"):
            lines[-1] = f"{lines[-1]} {raw.strip()}"
        elif raw.strip():
            lines.append(raw.strip())
    return lines


def _parse_hypothesis(line: str) -> Hypothesis:
    names, sep, rest = line.partition(" : ")
    if not sep:
        # Not of the form "names : type" (should not happen in Lean output); keep it whole.
        return Hypothesis((), _WS.sub(" ", line))
    value = None
    type_text = rest
    if " := " in rest:
        # Only a top-level " := " marks a let value; ":=" inside structure instances
        # ({ toFun := … }) sits within brackets.
        depth = 0
        for i, ch in enumerate(rest):
            if ch in "([{⟨":
                depth += 1
            elif ch in ")]}⟩":
                depth -= 1
            elif depth == 0 and rest.startswith(" := ", i):
                type_text, value = rest[:i], rest[i + 4 :]
                break
    return Hypothesis(
        tuple(names.split()),
        _WS.sub(" ", type_text).strip(),
        None if value is None else _WS.sub(" ", value).strip(),
    )


def parse_goal(block: str) -> Goal:
    """One goal's text → :class:`Goal`."""
    lines = _join_continuations(block)
    case = None
    if lines and (lines[0].startswith("case ") or lines[0] == "case"):
        case = lines.pop(0)[4:].strip()
    target_idx = next((i for i, line in enumerate(lines) if line.startswith(TURNSTILE)), None)
    if target_idx is None:
        # Some printers (and truncated records) omit the turnstile; the last line is the target.
        target_idx = len(lines) - 1
        target = lines[target_idx] if lines else ""
    else:
        target = lines[target_idx][len(TURNSTILE) :]
    # A target that wrapped was already joined; anything after it belongs to it as well.
    target = " ".join([target, *lines[target_idx + 1 :]])
    hyps = tuple(_parse_hypothesis(line) for line in lines[:target_idx])
    return Goal(case, hyps, _WS.sub(" ", target).strip())


def split_goals(state: str) -> list[Goal]:
    """A state's goals, in order; ``[]`` for a finished proof."""
    text = clean_state(state)
    if text == NO_GOALS:
        return []
    return [parse_goal(block) for block in _split_goal_blocks(text)]


_CONTINUATION = re.compile(r"\n[ \t]+")
_SPACES = re.compile(r"[ \t]{2,}|\t")


def _canonical_goal(block: str) -> str:
    # Fast path, same result as parse_goal(block).render() when the one turnstile starts the last
    # logical line: join wrapped lines and collapse runs of blanks. Each step is skipped when there
    # is nothing to change, which is the usual case; anything unusual takes the parser.
    joined = block.strip("\n")
    if "\n " in joined or "\n\t" in joined:
        joined = _CONTINUATION.sub(" ", joined)
    if "  " in joined or "\t" in joined:
        joined = _SPACES.sub(" ", joined)
    if " \n" in joined or joined[:1] == " " or joined[-1:] == " ":
        joined = "\n".join(line.strip() for line in joined.split("\n"))
    last_start = joined.rfind("\n") + 1
    if (
        joined.find(TURNSTILE) == last_start
        and joined.startswith(TURNSTILE + " ", last_start)
        and "\n\n" not in joined
        and not joined.startswith("case\n")
    ):
        return joined
    return parse_goal(block).render()


def goal_texts(state: str) -> list[str]:
    """Each goal's canonical text (see :func:`canonical_state`), in order."""
    text = clean_state(state)
    if text == NO_GOALS:
        return []
    return [_canonical_goal(block) for block in _split_goal_blocks(text)]


_MACRO_SCOPES = re.compile(r"\.(?:«_@»|_@)(?:\.|$)")


def erase_case_macro_scopes(goal: str) -> str:
    """A goal text whose ``case`` tag has its macro scopes erased, as Lean's
    ``Name.eraseMacroScopes`` does (``case h._@.Foo._hyg.123`` → ``case h``; the printed form
    ``a.«_@».M._hyg.177.«0»`` too). LeanDojo's tracer erases them; Pantograph keeps them. A tag
    that is nothing but scopes is left as it is."""
    if "_@" not in goal or not goal.startswith("case "):
        return goal
    head, sep, rest = goal.partition("\n")
    tags = []
    for tag in head[5:].split(" "):
        m = _MACRO_SCOPES.search(tag)
        tags.append(tag[: m.start()] if m is not None and m.start() > 0 else tag)
    return "case " + " ".join(tags) + sep + rest


def canonical_state(state: str) -> str:
    """A canonical string for dedup and lookup: goals re-rendered one hypothesis per line with
    white space collapsed, so line wrapping and printer headers do not make two states differ;
    macro scopes in case tags are erased (:func:`erase_case_macro_scopes`)."""
    goals = [erase_case_macro_scopes(g) for g in goal_texts(state)]
    return "\n\n".join(goals) if goals else NO_GOALS


def normalize_state(state: str) -> str:
    """Alias of :func:`clean_state`: the text to show a model."""
    return clean_state(state)


# An unassigned metavariable as Lean prints it: ?a, ?refine_1, ?m.123 (not the `?` of `exact?`).
_MVAR = re.compile(r"\?[A-Za-z_][\w.']*")


def metavariable_pattern(goal: str) -> re.Pattern[str] | None:
    """A regex matching ``goal`` with each metavariable filled in by some text (the same text for
    repeated occurrences of one metavariable); None when ``goal`` has no metavariable.

    A goal that mentions ``?refine_1`` prints differently once a sibling goal assigns it; the
    replay environment and the steps-remaining labels both match the later text with this.
    """
    if "?" not in goal:
        return None
    parts: list[str] = []
    seen: dict[str, str] = {}
    last = 0
    for m in _MVAR.finditer(goal):
        parts.append(re.escape(goal[last : m.start()]))
        name = m.group(0)
        if name in seen:
            parts.append(f"(?P={seen[name]})")
        else:
            seen[name] = f"m{len(seen)}"
            parts.append(f"(?P<{seen[name]}>.+?)")
        last = m.end()
    if not seen:
        return None
    parts.append(re.escape(goal[last:]))
    return re.compile("".join(parts), re.DOTALL)
