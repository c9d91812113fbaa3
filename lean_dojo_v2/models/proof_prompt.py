"""Whole-proof and refinement prompts: :class:`ProofPrompt` and what it is rendered from.

Tactic prompts and the library's own whole-proof prompt live in :mod:`.prompts` (the format the
trainers train on). This module holds the prompts of the published whole-proof provers, which
are given a theorem *statement* rather than a goal state, and the prompt of a refinement round,
which adds a failed proof and Lean's first error:

- :class:`ProofTask`: what is proved: ``name``, ``header`` (imports, options, opens; None for a
  theorem of a traced repository), ``formal_statement`` (up to ``:= by``), the informal statement
  and the first goal state.
- :class:`LeanFeedback`: Lean's first error of a failed attempt (position, message, the goal
  there); :class:`FailedProof` pairs it with the proof.
- :class:`ProofRequest`: a task and the failed proofs of its refinement chain so far (none for a
  first attempt).
- :class:`ProofPrompt`: templates (``whole``, ``refine``, ``system``; bare ``{name}``
  placeholders, filled by :func:`fill_template`) turned into
  chat ``messages``; :meth:`ProofPrompt.from_file` reads them from a JSON, YAML or TOML file, and
  a subclass may override :meth:`ProofPrompt.messages` (e.g. a multi-turn conversation).

Which prompt a request gets when none is named (:func:`default_proof_prompt`): a standalone
statement (a benchmark problem: ``header`` is not None) gets :data:`DEEPSEEK_PROMPT`, the format of
DeepSeek-Prover and the provers trained like it; a theorem of a traced repository gets
:data:`STATE_PROMPT`, the library's own whole-proof prompt (the goal state, premises when a
retrieval prover adds them), exactly what :func:`~.prompts.render_proof_prompt` renders and SFT
trains on. ``docs/evaluation.md`` shows both, with a refinement round.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.jsonio import loads
from ..errors import ConfigError
from .prompts import PROOF_SYSTEM_PROMPT, user_content

if TYPE_CHECKING:  # pragma: no cover
    from ..data.model import Theorem


class PromptTemplateError(ConfigError):
    """A proof prompt template that cannot be used: a file that cannot be read or parsed, an
    unknown key in it, or a placeholder no prompt fills. The message names the file or the
    template and lists what is allowed."""


# --------------------------------------------------------------------------- what a prompt is built from


@dataclass(frozen=True)
class ProofTask:
    """What a whole proof is asked for.

    ``header``: the text before the statement (imports, ``set_option``, ``open``) for a
    standalone statement, None for a theorem of a traced repository (whose context is its file).
    ``formal_statement``: the declaration up to and including ``:= by``. ``informal_statement``:
    the problem in words, when the benchmark has it. ``state``: the first goal state as Lean
    prints it (from the environment's ``start``, or the benchmark)."""

    name: str
    header: str | None = None
    formal_statement: str | None = None
    informal_statement: str | None = None
    state: str | None = None

    @property
    def standalone(self) -> bool:
        """A statement checked on its own (a benchmark problem), not a theorem of a repository."""
        return self.header is not None and bool(self.formal_statement)

    @classmethod
    def from_theorem(cls, theorem: Theorem, state: str | None = None) -> ProofTask:
        """The task of ``theorem``: a standalone statement
        (:func:`~lean_dojo_v2.interaction.standalone.standalone_theorem`: a benchmark problem)
        has its header, statement, informal statement and recorded goal; a theorem of a traced
        repository has its statement when the dataset records one. ``state``: the first goal
        state (from the environment), else the recorded goal."""
        from ..interaction.standalone import INFORMAL_KEY, recorded_goal, standalone_header

        informal = theorem.extra.get(INFORMAL_KEY)
        return cls(
            name=theorem.full_name,
            header=standalone_header(theorem),
            formal_statement=theorem.theorem_statement or None,
            informal_statement=informal if isinstance(informal, str) and informal else None,
            state=state if state is not None else recorded_goal(theorem),
        )


@dataclass(frozen=True)
class LeanFeedback:
    """Lean's first error of a failed attempt, as a refinement prompt shows it: ``message``,
    its position in the proof (``line`` 1 is the proof's first line, ``column`` counted from 0
    as Lean counts; None when Lean placed the error outside the proof, e.g. ``unsolved goals``
    at the statement's ``by``) and ``goal``, the goal Lean printed there when it printed one."""

    message: str
    line: int | None = None
    column: int | None = None
    goal: str | None = None

    @property
    def position(self) -> str:
        """``"line 3, column 2 of the proof"``, or ``"the statement (outside the proof)"``."""
        if self.line is None:
            return "the statement (outside the proof)"
        column = f", column {self.column}" if self.column is not None else ""
        return f"line {self.line}{column} of the proof"


@dataclass(frozen=True)
class FailedProof:
    """One failed attempt of a refinement chain: the proof as checked (``""`` when the answer
    held none), Lean's feedback on it, and the model's ``answer`` as it wrote it."""

    proof: str
    feedback: LeanFeedback
    answer: str = ""


@dataclass(frozen=True)
class ProofRequest:
    """A whole proof to sample: the ``task``, and the ``failed`` attempts of its refinement chain
    so far, oldest first (empty: a first attempt)."""

    task: ProofTask
    failed: tuple[FailedProof, ...] = ()


# --------------------------------------------------------------------------- templates

WHOLE_TEMPLATE = (
    "Complete the following Lean 4 code:\n\n```lean4\n{header}{informal}{formal_statement}\n```"
)
"""DeepSeek-Prover's whole-proof prompt (V1.5's ``Complete the following Lean 4 code`` with the
code fenced, as V2 and Goedel-Prover ask it): header, the informal statement as a doc comment,
the formal statement ending in ``:= by``."""

REFINE_TEMPLATE = (
    "{whole}\n\n"
    "A previous attempt was rejected by Lean:\n\n"
    "```lean4\n{attempt}\n```\n\n"
    "Lean's first error, at {position}:\n{error}\n"
    "{goal_block}"
    "\nWrite a corrected complete proof."
)
"""The refinement prompt (Goedel-Prover-V2's self-correction, one user turn): the whole-proof
prompt, the failed attempt, Lean's first error with its position and the goal there."""

WHOLE_FIELDS = (
    "name",
    "header",
    "informal",
    "informal_statement",
    "formal_statement",
    "state",
    "goal",
)
"""Placeholders of a ``whole`` template: ``header`` and ``formal_statement`` as the problem gives
them (``formal_statement`` without trailing white space), ``informal`` the informal statement as
a Lean doc comment and a line break (``""`` when there is none), ``informal_statement`` its bare
text, ``state`` the goal state with the premises a retrieval prover adds (the library's own user
turn, :func:`~.prompts.user_content`), ``goal`` the bare goal state, ``name`` the theorem's."""

REFINE_FIELDS = (
    *WHOLE_FIELDS,
    "whole",
    "proof",
    "attempt",
    "error",
    "line",
    "column",
    "position",
    "error_goal",
    "goal_block",
    "answer",
    "round",
)
"""Placeholders of a ``refine`` template, besides :data:`WHOLE_FIELDS`: ``whole`` the rendered
whole-proof prompt, ``proof`` the failed proof, ``attempt`` the code it was checked as (header,
statement and proof for a standalone statement; the proof otherwise), ``error`` Lean's message,
``line``/``column`` its position in the proof (:class:`LeanFeedback`; ``""`` outside the
proof), ``position`` both in words,
``error_goal`` the goal there (``""`` when unknown), ``goal_block`` ``"The goal there:\\n…\\n"``
or ``""``, ``answer`` the model's failed answer as written, ``round`` the refinement round (1…)."""


def _parsed(template: str, where: str) -> list[tuple[str, str | None, str | None, str | None]]:
    try:
        return list(string.Formatter().parse(template))
    except ValueError as exc:
        raise PromptTemplateError(
            f"{where}: {exc} (write a literal brace as '{{{{' or '}}}}')"
        ) from None


def _check_template(template: object, allowed: Sequence[str], where: str) -> str:
    """``template`` when each of its placeholders is one of ``allowed``, written as the bare
    name. A format spec (``{header:>3000000000}`` would pad to gigabytes), a conversion
    (``!r``), an attribute or an index (``{header.__class__}``, ``{header[0]}``: a template
    reaching into the objects behind the values) is refused, naming the placeholder."""
    if not isinstance(template, str) or not template.strip():
        raise PromptTemplateError(f"{where} must be a non-empty text template")
    valid = "; valid placeholders: " + ", ".join("{" + name + "}" for name in allowed)
    for _, name, spec, conversion in _parsed(template, where):
        if name is None:
            continue
        shown = "{" + name + (f"!{conversion}" if conversion else "")
        shown += (f":{spec}" if spec else "") + "}"
        if name == "" or name.isdigit():
            raise PromptTemplateError(f"{where}: positional placeholder {shown}; name it{valid}")
        base = name.split(".")[0].split("[")[0]
        if name != base and base in allowed:
            why = f"reads an attribute or an index of {{{base}}}; write {{{base}}} alone"
            raise PromptTemplateError(f"{where}: placeholder {shown} {why}{valid}")
        if name not in allowed:
            raise PromptTemplateError(f"{where}: unknown placeholder {shown}{valid}")
        if conversion or spec:
            what = "a conversion" if conversion else "a format spec"
            raise PromptTemplateError(
                f"{where}: placeholder {shown} has {what}; a placeholder is a bare name: "
                f"write {{{name}}}{valid}"
            )
    return template


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` replaced by ``values[name]`` and ``{{``/``}}`` by a
    brace: the one way a user's template is filled. Only bare names are read (the template was
    checked by :func:`_check_template`); no format spec runs, whatever the template holds."""
    parts: list[str] = []
    for literal, name, _, _ in _parsed(template, "the template"):
        parts.append(literal)
        if name is not None:
            parts.append(values[name])
    return "".join(parts)


def _informal_comment(text: str | None) -> str:
    if not text:
        return ""
    text = text.strip()
    if text.startswith("/-"):  # already a comment (DeepSeek-Prover's informal_prefix)
        return text + "\n"
    return f"/-- {text} -/\n"


def indent_proof(proof: str, by: str = "  ") -> str:
    """``proof`` with every non-empty line indented by ``by`` (under a ``:= by``)."""
    return "\n".join(by + line if line.strip() else line for line in proof.splitlines())


@dataclass(frozen=True)
class ProofPrompt:
    """The prompt of a whole-proof request: templates of bare ``{name}`` placeholders
    (:data:`WHOLE_FIELDS`, :data:`REFINE_FIELDS`) and an optional system turn.

    ``whole``: the user turn of a first attempt. ``refine``: the user turn of a refinement round
    (one turn that carries everything; override :meth:`messages` for a multi-turn conversation).
    ``system``: the system turn, or None for none (DeepSeek-Prover and Goedel-Prover are asked
    without one). A template with a placeholder no prompt fills, or one that is more than a
    bare name (a format spec, a conversion, an attribute, an index), is refused when the prompt
    is made (:class:`PromptTemplateError`)."""

    whole: str = WHOLE_TEMPLATE
    refine: str = REFINE_TEMPLATE
    system: str | None = None

    def __post_init__(self) -> None:
        _check_template(self.whole, WHOLE_FIELDS, "ProofPrompt.whole")
        _check_template(self.refine, REFINE_FIELDS, "ProofPrompt.refine")
        if self.system is not None and not isinstance(self.system, str):
            raise PromptTemplateError(
                f"ProofPrompt.system must be a text or None, not {type(self.system).__name__}"
            )

    # ................................................................. rendering

    def whole_values(self, task: ProofTask, premises: Sequence[str] = ()) -> dict[str, str]:
        """The values of :data:`WHOLE_FIELDS` for ``task``."""
        goal = task.state or ""
        return {
            "name": task.name,
            "header": task.header or "",
            "informal": _informal_comment(task.informal_statement),
            "informal_statement": (task.informal_statement or "").strip(),
            "formal_statement": (task.formal_statement or "").rstrip(),
            "state": user_content(goal, premises) if goal else "",
            "goal": goal,
        }

    def whole_prompt(self, task: ProofTask, premises: Sequence[str] = ()) -> str:
        """The user turn of a first attempt at ``task``."""
        return fill_template(self.whole, self.whole_values(task, premises))

    def refine_prompt(
        self,
        task: ProofTask,
        failed: FailedProof,
        premises: Sequence[str] = (),
        *,
        step: int = 1,
    ) -> str:
        """The user turn of refinement round ``step`` after the ``failed`` attempt."""
        values = self.whole_values(task, premises)
        fb = failed.feedback
        if task.standalone:
            attempt = values["header"] + values["formal_statement"] + "\n"
            attempt += indent_proof(failed.proof)
        else:
            attempt = failed.proof
        values.update(
            whole=fill_template(self.whole, values),
            proof=failed.proof,
            attempt=attempt.strip("\n"),
            error=fb.message.strip(),
            line="" if fb.line is None else str(fb.line),
            column="" if fb.column is None else str(fb.column),
            position=fb.position,
            error_goal=fb.goal or "",
            goal_block=f"The goal there:\n{fb.goal.strip()}\n" if fb.goal else "",
            answer=failed.answer,
            round=str(step),
        )
        return fill_template(self.refine, values)

    def messages(self, request: ProofRequest, premises: Sequence[str] = ()) -> list[dict[str, str]]:
        """The chat ``messages`` of ``request``: the system turn (when there is one), then one
        user turn, :meth:`whole_prompt` for a first attempt, else :meth:`refine_prompt` of the
        chain's latest failure."""
        if request.failed:
            user = self.refine_prompt(
                request.task, request.failed[-1], premises, step=len(request.failed)
            )
        else:
            user = self.whole_prompt(request.task, premises)
        out = [] if self.system is None else [{"role": "system", "content": self.system}]
        out.append({"role": "user", "content": user})
        return out

    # ................................................................. files

    @classmethod
    def from_file(cls, path: str | Path) -> ProofPrompt:
        """A prompt from a JSON (``.json``), YAML (``.yaml``/``.yml``) or TOML (``.toml``) file
        with the keys ``whole``, ``refine`` and ``system`` (each optional: a missing one keeps
        the default). Anything wrong is a one-line :class:`PromptTemplateError`."""
        p = Path(path).expanduser()
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptTemplateError(
                f"cannot read the prompt template {p}: {type(exc).__name__}: {exc}"
            ) from None
        data = _parse_template_file(p, text)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise PromptTemplateError(
                f"{p}: unknown key(s) {', '.join(unknown)}; a prompt template has "
                + ", ".join(sorted(known))
            )
        default = cls()
        whole, refine = data.get("whole", default.whole), data.get("refine", default.refine)
        system = data.get("system", default.system)
        for key, value in (("whole", whole), ("refine", refine)):
            if not isinstance(value, str):
                raise PromptTemplateError(f"{p}: {key} must be a text, not {type(value).__name__}")
        if system is not None and not isinstance(system, str):
            raise PromptTemplateError(
                f"{p}: system must be a text or null, not {type(system).__name__}"
            )
        try:
            return cls(whole=str(whole), refine=str(refine), system=system)
        except PromptTemplateError as exc:
            raise PromptTemplateError(f"{p}: {exc}") from None


def _parse_template_file(path: Path, text: str) -> dict[str, object]:
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            data: object = loads(text)
        elif suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        elif suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            raise PromptTemplateError(
                f"{path}: a prompt template is a .json, .yaml/.yml or .toml file with the keys "
                "whole, refine and system"
            )
    except PromptTemplateError:
        raise
    except Exception as exc:  # noqa: BLE001 - json, yaml and toml each raise their own
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PromptTemplateError(f"{path} does not parse as {suffix[1:]}: {first}") from None
    if not isinstance(data, dict):
        raise PromptTemplateError(
            f"{path} must hold a mapping with the keys whole, refine and system, not "
            f"{type(data).__name__}"
        )
    return {str(k): v for k, v in data.items()}


DEEPSEEK_PROMPT = ProofPrompt()
"""The default prompt of a standalone statement (see :data:`WHOLE_TEMPLATE`)."""

STATE_PROMPT = ProofPrompt(whole="{state}", system=PROOF_SYSTEM_PROMPT)
"""The library's own whole-proof prompt as a :class:`ProofPrompt`: the system turn
:data:`~.prompts.PROOF_SYSTEM_PROMPT` and the goal state (with premises) as the user turn, the
text :func:`~.prompts.render_proof_prompt` renders; refinement rounds add the failed proof and
Lean's error as :data:`REFINE_TEMPLATE` does."""


def default_proof_prompt(task: ProofTask) -> ProofPrompt:
    """:data:`DEEPSEEK_PROMPT` for a standalone statement, :data:`STATE_PROMPT` otherwise."""
    return DEEPSEEK_PROMPT if task.standalone else STATE_PROMPT


def load_proof_prompt(source: str | Path | ProofPrompt | None) -> ProofPrompt | None:
    """``source`` as a prompt: a :class:`ProofPrompt` as it is, a path read with
    :meth:`ProofPrompt.from_file`, None as None (each request gets
    :func:`default_proof_prompt`)."""
    if source is None or isinstance(source, ProofPrompt):
        return source
    if isinstance(source, (str, Path)):
        return ProofPrompt.from_file(source)
    raise PromptTemplateError(
        f"a proof prompt is a ProofPrompt or the path of a template file, not "
        f"{type(source).__name__}"
    )


__all__ = [
    "DEEPSEEK_PROMPT",
    "REFINE_FIELDS",
    "REFINE_TEMPLATE",
    "STATE_PROMPT",
    "WHOLE_FIELDS",
    "WHOLE_TEMPLATE",
    "FailedProof",
    "LeanFeedback",
    "PromptTemplateError",
    "ProofPrompt",
    "ProofRequest",
    "ProofTask",
    "default_proof_prompt",
    "fill_template",
    "indent_proof",
    "load_proof_prompt",
]
