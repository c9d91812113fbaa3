"""``report.html``: one self-contained page of an evaluation, made from its output directory.

:func:`write_report_html` reads ``--out`` (:func:`~.report_data.read_report_data`) and writes
``report.html`` there: a summary table (benchmark, mode, verifier, solved, pass@k, budget), the
plots found in the directory (embedded), then every problem with its status and, collapsed, its
attempts (proof, verdict, Lean's messages, what the attempt cost) and, in tactic mode, the search
tree as nested expandable nodes (tactic, score, outcome; the goal inside). The nodes on the path
to a proof start open.

Model output and Lean's messages are untrusted text: every piece of it is HTML-escaped, and the
page's Content-Security-Policy lets only its own inline style and script run (by hash) and loads
nothing from anywhere, so the page also works offline. Without JavaScript the page is complete;
the script only filters, sorts, and opens what the URL's ``#fragment`` names.
"""

from __future__ import annotations

import base64
import hashlib
import html
import logging
import math
import os
import re
import threading
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path

from ..interaction.messages import LeanMessage
from ..prover.attempt import TreeNode
from .report_data import (
    NOT_RUN,
    SOLVED,
    STATUSES,
    AttemptRecord,
    ProblemRecord,
    ReportData,
    read_report_data,
)

log = logging.getLogger(__name__)

REPORT_FILE = "report.html"
MAX_TEXT = 20_000
"""Characters of one proof, message or goal shown; the rest stays in ``attempts.jsonl`` (a model
that never stops writing would otherwise make the page as large as its output)."""
MAX_TREE_NODES = 2_000
"""Nodes of one search tree shown: the first ones tried, and the path to the proof always."""
PAGE_TREE_NODES = 40_000
"""Nodes of all the search trees of a page together: a tactic-mode evaluation of PutnamBench
(672 trees of hundreds of nodes, each new state with its goal) would otherwise make a page of
hundreds of megabytes. Each tree gets an equal share, at least :data:`MIN_TREE_NODES`."""
MIN_TREE_NODES = 50
MAX_PLOT_BYTES = 4_000_000
"""A PNG larger than this is linked, not embedded."""

# Budget keys as the table names them; others are shown with their own name.
_BUDGET_LABELS = {
    "attempts": "attempts",
    "tokens_in": "generator tokens in",
    "tokens_out": "generator tokens out",
    "generator_seconds": "generator seconds",
    "gpu_seconds": "GPU seconds",
    "lean_calls": "Lean calls",
    "lean_cpu_seconds": "Lean CPU seconds",
    "wall_seconds": "wall seconds",
    "dollars": "dollars",
}
_HEAD_KEYS = ("benchmark", "mode", "verifier", "model", "n", "early_stop", "attempted", "solved")


def write_report_html(out_dir: str | Path) -> Path:
    """Write ``out_dir/report.html`` from the evaluation files in ``out_dir`` and return its path.

    Works on a finished evaluation and on one that was killed (the page then says so); the file
    is replaced atomically, so an open browser tab never sees half a page. Raises
    :class:`~lean_dojo_v2.evaluation.errors.ReportInputError` when ``out_dir`` holds no
    evaluation, :class:`~lean_dojo_v2.errors.DataFormatError` for a file that cannot be read.
    """
    return save_report_html(read_report_data(out_dir))


def save_report_html(data: ReportData) -> Path:
    """Write the page of ``data`` (read by :func:`~.report_data.read_report_data`) into its
    output directory, atomically; return its path."""
    target = data.out_dir / REPORT_FILE
    page = render_report_html(data)
    # A named file beside it rather than mkstemp's: that one is private (0600) whatever the umask,
    # and the report is read like the other files of --out.
    tmp = target.with_name(f".{REPORT_FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    log.info("report written to %s (%d problems)", target, len(data.problems))
    return target


def render_report_html(data: ReportData) -> str:
    """The page for ``data``, as one string."""
    style, script = _asset("report.css"), _asset("report.js")
    csp = (
        "default-src 'none'; img-src data:; "
        f"style-src '{_csp_hash(style)}'; script-src '{_csp_hash(script)}'"
    )
    title = f"Evaluation: {_title(data)}"
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{_e(title)}</title>\n<style>{style}</style>\n</head>\n<body>\n",
        f"<h1>{_e(title)}</h1>\n",
        _overview(data),
        _plots(data.out_dir),
        _problem_list(data),
        f"<script>{script}</script>\n</body>\n</html>\n",
    ]
    return "".join(parts)


# --------------------------------------------------------------------------- the summary


def _title(data: ReportData) -> str:
    names = [_plain(data.summary.get(k)) for k in ("benchmark", "mode", "verifier")]
    return " · ".join(n for n in names if n) or str(data.out_dir.name)


def _overview(data: ReportData) -> str:
    s = data.summary
    parts = [f'<p class="sub">{_e(str(data.out_dir))}</p>\n']
    if not data.finished:
        parts.append(
            '<p class="banner">No summary.json: this evaluation has not finished (killed, or still '
            "running). Statuses are those of the attempts written so far; <code>--resume</code> "
            "finishes it.</p>\n"
        )
    head = [(k.replace("_", " "), v) for k in _HEAD_KEYS if (v := _plain(s.get(k))) is not None]
    if "solved" not in s:
        head.append(("attempted", str(sum(1 for p in data.problems if p.attempts))))
        head.append(("solved", str(sum(1 for p in data.problems if p.status == SOLVED))))
    head.append(("problems", str(len(data.problems))))
    accepted = s.get("checked_by")
    if isinstance(accepted, Mapping) and accepted:
        head.append(("accepted by", ", ".join(f"{k}: {v}" for k, v in accepted.items())))
    tables = [_table("Result", head), _pass_table(s)]
    budget = _budget_rows(s.get("budget"))
    if budget:
        tables.append(_table("Budget", budget, numbers=True))
    parts.append('<div class="tables">\n' + "".join(tables) + "</div>\n")
    settings = s.get("settings")
    if isinstance(settings, Mapping) and settings:
        rows = [(str(k), _plain(v) or "") for k, v in settings.items()]
        parts.append("<details><summary>Settings</summary>\n" + _table(None, rows) + "</details>\n")
    files = sorted(p.name for p in data.out_dir.iterdir() if p.is_file() and _linked(p.name))
    if files:
        links = "".join(f'<a href="{_e(n)}">{_e(n)}</a>' for n in files)
        parts.append(f'<p class="files">Files: {links}</p>\n')
    return "".join(parts)


def _pass_table(s: Mapping[str, object]) -> str:
    """pass@k (the unbiased estimator) beside the plain count of problems solved within the
    first k samples; with early stop only the count."""
    pass_at, solved_at = s.get("pass_at"), s.get("solved_at")
    pass_at = pass_at if isinstance(pass_at, Mapping) else {}
    solved_at = solved_at if isinstance(solved_at, Mapping) else {}
    ks = sorted({str(k) for k in (*pass_at, *solved_at)}, key=_k_order)
    if not ks:
        return ""
    rows = "".join(
        f'<tr><th>{_e(k)}</th><td class="num">{_e(_pass(pass_at.get(k)))}</td>'
        f'<td class="num">{_e(_plain(solved_at.get(k)) or "–")}</td></tr>\n'
        for k in ks
    )
    note = "" if pass_at else '<tr><td colspan="3">early stop: counts, not pass@k</td></tr>\n'
    return (
        "<table>\n<caption>pass@k</caption>\n"
        "<tr><th>k</th><th>pass@k</th><th>solved in first k</th></tr>\n"
        f"{rows}{note}</table>\n"
    )


def _linked(name: str) -> bool:
    return (
        not name.startswith(".")
        and name != REPORT_FILE
        and name.endswith((".json", ".jsonl", ".png"))
    )


def _budget_rows(budget: object) -> list[tuple[str, str]]:
    if not isinstance(budget, Mapping):
        return []
    # The totals are the budget itself or its "total" entry; per-problem entries are left out.
    total = budget.get("total")
    source = total if isinstance(total, Mapping) else budget
    rows = []
    for key, value in source.items():
        shown = _plain(value)
        if shown is None or isinstance(value, (Mapping, list)):
            continue
        label = _BUDGET_LABELS.get(str(key), str(key).replace("_", " "))
        if key == "dollars" and isinstance(value, (int, float)):
            shown = f"${value:,.2f}"
        rows.append((label, shown))
    if "dollars" in source and source.get("dollars") is None:
        rows.append(("dollars", "no price given"))
    return rows


def _table(caption: str | None, rows: Iterable[tuple[str, str]], *, numbers: bool = False) -> str:
    cell = '<td class="num">' if numbers else "<td>"
    body = "".join(f"<tr><th>{_e(k)}</th>{cell}{_e(v)}</td></tr>\n" for k, v in rows)
    head = f"<caption>{_e(caption)}</caption>\n" if caption else ""
    return f"<table>\n{head}{body}</table>\n"


def _plots(out_dir: Path) -> str:
    figures = []
    for path in sorted(out_dir.glob("*.png")):
        if path.stat().st_size > MAX_PLOT_BYTES:
            continue
        encoded = base64.b64encode(path.read_bytes()).decode("ascii")
        figures.append(
            f'<figure><img alt="{_e(path.name)}" src="data:image/png;base64,{encoded}">'
            f"<figcaption>{_e(path.name)}</figcaption></figure>\n"
        )
    return "<h2>Plots</h2>\n" + "".join(figures) if figures else ""


# --------------------------------------------------------------------------- the problems


def _problem_list(data: ReportData) -> str:
    options = "".join(f'<option value="{_e(s)}">{_e(s)}</option>' for s in STATUSES)
    controls = (
        '<div id="controls" hidden>'
        '<input id="filter-text" type="search" placeholder="filter by name" aria-label="filter by name">'
        f'<select id="filter-status" aria-label="status"><option value="">every status</option>{options}</select>'
        '<select id="sort" aria-label="sort by"><option value="order">benchmark order</option>'
        '<option value="name">name</option><option value="status">status</option>'
        '<option value="correct">most correct</option><option value="attempts">most attempts</option>'
        '<option value="tokens">most tokens</option><option value="lean">most Lean calls</option></select>'
        '<button id="open-all" type="button">open all</button>'
        '<button id="close-all" type="button">close all</button>'
        '<span id="shown"></span></div>\n'
    )
    page = _Page(data)
    rows = "".join(_problem(i, p, page) for i, p in enumerate(data.problems))
    return f'<h2>Problems</h2>\n{controls}<div id="problems">\n{rows}</div>\n'


def _problem(order: int, problem: ProblemRecord, page: _Page) -> str:
    pid = page.new("p-" + problem.name)
    tokens = int(problem.cost("tokens_in") + problem.cost("tokens_out"))
    lean = int(problem.cost("lean_calls"))
    seconds = problem.budget.get("wall_seconds")
    if seconds is None:
        seconds = problem.cost("generator_seconds") + problem.cost("lean_seconds")
    figs = [
        f"{problem.correct} / {len(problem.attempts)} correct",
        f"{tokens:,} tokens",
        _count(lean, "Lean call"),
        f"{seconds:.1f} s",
    ]
    if problem.budget.get("dollars") is not None:
        figs.append(f"${problem.budget['dollars']:,.4f}")
    attrs = (
        f'id="{_e(pid)}" data-name="{_e(problem.name)}" data-status="{_e(problem.status)}" '
        f'data-order="{order}" data-correct="{problem.correct}" '
        f'data-attempts="{len(problem.attempts)}" data-tokens="{tokens}" data-lean="{lean}"'
    )
    body = []
    if problem.header:
        body.append(
            f'<details class="hdr"><summary class="label">header</summary>'
            f"{_pre(problem.header, 'stmt')}</details>"
        )
    if problem.statement:
        body.append(f'<div class="label">statement</div>{_pre(problem.statement, "stmt")}')
    if problem.search_status not in (None, "proved", "failed") or problem.error:
        said = f"search: {problem.search_status or 'failed'}"
        body.append(f'<div class="label">{_e(said)}</div>')
        if problem.error:
            body.append(_pre(problem.error, "err"))
    if problem.attempts:
        items = "".join(f"<li>{_attempt(pid, a, page)}</li>\n" for a in problem.attempts)
        body.append(f'<ol class="attempts">\n{items}</ol>')
    elif problem.status == NOT_RUN:
        body.append('<p class="label">no attempt recorded</p>')
    return (
        f'<details class="problem" {attrs}><summary>{_status(problem.status)}'
        f'<span class="name">{_e(problem.name)}</span>'
        f'<span class="figs">{_e(" · ".join(figs))}</span>'
        f'</summary><div class="body">{"".join(body)}</div></details>\n'
    )


def _status(status: str) -> str:
    return f'<span class="st st-{_e(status.replace(" ", "-"))}">{_e(status)}</span>'


def _attempt(pid: str, record: AttemptRecord, page: _Page) -> str:
    a = record.attempt
    aid = page.new(f"{pid}-a{a.index}-r{a.round}")
    verdict = "accepted" if a.ok else ("error" if a.error else "rejected")
    by = f" by {a.checked_by}" if a.checked_by else ""
    meta = [
        f"{a.tokens_in:,} → {a.tokens_out:,} tokens",
        f"{a.generator_seconds:.1f} s generating",
        _count(a.lean_calls, "Lean call"),
        f"{a.lean_seconds:.1f} s Lean",
    ]
    if a.gpu_seconds:
        meta.insert(2, f"{a.gpu_seconds:.1f} GPU s")
    if a.cached:
        meta.append("verdict from cache")
    label = f"sample {a.index}" + (f", round {a.round}" if a.round else "")
    body = []
    if a.proof:
        body.append(f'<div class="label">proof</div>{_pre(a.proof, "proof")}')
    if a.error:
        body.append(f'<div class="label">error</div>{_pre(a.error, "err")}')
    if record.messages:
        body.append(
            '<div class="label">messages</div><ul class="msgs">'
            + "".join(_message(m) for m in record.messages)
            + "</ul>"
        )
    if record.tree:
        body.append(f'<div class="label">search tree</div>{_tree(aid, record.tree, page)}')
    return (
        f'<details class="attempt {"ok" if a.ok else "bad"}" id="{_e(aid)}"><summary>'
        f'{_e(label)} <span class="res">{_e(verdict + by)}</span> '
        f'<span class="meta">{_e(" · ".join(meta))}</span></summary>'
        f'<div class="body">{"".join(body)}</div></details>'
    )


def _message(m: LeanMessage) -> str:
    # Line 0: Lean placed the message outside the proof (at the statement, or no position).
    where = f" at {m.line}:{m.column}" if m.line >= 1 else ""
    goal = ""
    if m.goal and m.goal not in m.text:
        goal = f'<div class="label">goal there</div>{_pre(m.goal, "goal")}'
    return (
        f'<li><span class="sev sev-{_e(m.severity)}">{_e(m.severity + where)}</span>'
        f"{_pre(m.text, 'msg')}{goal}</li>"
    )


def _tree(aid: str, nodes: tuple[TreeNode, ...], page: _Page) -> str:
    by_id = {n.id: n for n in nodes}
    on_proof = _proof_path(by_id)
    first = sorted(nodes, key=lambda n: n.id)[: page.tree_nodes]  # ids follow the order tried
    kept = set(on_proof) | {n.id for n in first}
    children: dict[int | None, list[TreeNode]] = {}
    for node in nodes:
        if node.id in kept:
            # A node whose parent is not shown is drawn as a root rather than lost.
            parent = node.parent if node.parent in kept else None
            children.setdefault(parent, []).append(node)
    node_ids = {n: f"{aid}-n{n}" for n in kept}
    # Iterative, not recursive: a deep search tree must not hit Python's recursion limit.
    out: list[str] = ['<div class="tree">']
    stack: list[tuple[TreeNode, bool]] = [(n, False) for n in reversed(children.get(None, []))]
    while stack:
        node, closing = stack.pop()
        if closing:
            out.append("</div></details>" if node.id in children else "</details>")
            continue
        out.append(_node_open(node, node.id in on_proof, node_ids, page))
        stack.append((node, True))
        if node.id in children:
            out.append('<div class="kids">')
            stack.extend((c, False) for c in reversed(children[node.id]))
    if len(nodes) > len(kept):
        out.append(
            f'<p class="cut">{len(nodes) - len(kept):,} more nodes are in attempts.jsonl</p>'
        )
    out.append("</div>")
    return "".join(out)


def _node_open(node: TreeNode, on_proof: bool, node_ids: Mapping[int, str], page: _Page) -> str:
    nid = page.new(node_ids[node.id])
    outcome = node.outcome or "open"
    kind = "proof" if _is_proof(outcome) else ("error" if outcome.startswith("error") else "other")
    score = f"{node.score:.3f}" if node.score is not None else "–"
    tactic = node.tactic if node.tactic is not None else "(start)"
    if node.goal:
        inside = _pre(node.goal, "goal")
    elif node.target is not None and node.target in node_ids:
        target = node_ids[node.target]
        inside = f'<p class="label">the state of <a href="#{_e(target)}">node {node.target}</a></p>'
    else:
        inside = f'<p class="label">{"no goals left" if kind == "proof" else "no new state"}</p>'
    return (
        f'<details class="node{" on-proof" if on_proof else ""}" id="{_e(nid)}"'
        f"{' open' if on_proof else ''}><summary><code>{_cut(tactic)}</code> "
        f'<span class="score">score {score}</span> '
        f'<span class="out out-{kind}">{_e(outcome)}</span></summary>{inside}'
    )


def _proof_path(by_id: Mapping[int, TreeNode]) -> set[int]:
    """The nodes to open: those the search marked as the accepted proof's path, else the path
    to every node that closed the goals."""
    marked = {n.id for n in by_id.values() if n.proved}
    if marked:
        return marked
    path: set[int] = set()
    for node in by_id.values():
        if not _is_proof(node.outcome):
            continue
        current: TreeNode | None = node
        while current is not None and current.id not in path:
            path.add(current.id)
            current = by_id.get(current.parent) if current.parent is not None else None
    return path


def _is_proof(outcome: str) -> bool:
    return outcome in ("proof", "proved", "proof_found")


# --------------------------------------------------------------------------- text


class _Page:
    """What rendering one page keeps track of: the element ids given out, and how many nodes of
    each search tree are shown (``tree_nodes``: an equal share of :data:`PAGE_TREE_NODES`)."""

    def __init__(self, data: ReportData) -> None:
        self._seen: set[str] = set()
        trees = sum(1 for p in data.problems for a in p.attempts if a.tree)
        share = PAGE_TREE_NODES // max(trees, 1)
        self.tree_nodes = min(MAX_TREE_NODES, max(MIN_TREE_NODES, share))

    def new(self, wanted: str) -> str:
        """An element id from a name: letters (Lean's ``ι``, ``₁`` too), digits and ``_.:'-``
        are kept, anything else (white space, quotes, brackets) becomes ``_``; a repeated id gets
        a ``-2``, ``-3`` … suffix, so ``#id`` always names one element."""
        base = re.sub(r"[^\w.:'-]+", "_", wanted)
        candidate, n = base, 1
        while candidate in self._seen:
            n += 1
            candidate = f"{base}-{n}"
        self._seen.add(candidate)
        return candidate


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _cut(text: str) -> str:
    """Escaped ``text``, at most :data:`MAX_TEXT` characters of it, saying how many were left out."""
    if len(text) <= MAX_TEXT:
        return _e(text)
    more = len(text) - MAX_TEXT
    return f'{_e(text[:MAX_TEXT])}<span class="cut"> … {more:,} more characters in attempts.jsonl</span>'


def _pre(text: str, cls: str) -> str:
    return f'<pre class="{cls}">{_cut(text)}</pre>'


def _plain(value: object) -> str | None:
    """A summary value as table text; None for what is not a plain value."""
    if value is None or isinstance(value, (Mapping, list)):
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            return f"{value:,.3f}".rstrip("0").rstrip(".")
        return f"{int(value):,}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _pass(value: object) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{100 * value:.1f} %"
    return _plain(value) or "–"


def _k_order(k: str) -> tuple[int, str]:
    return (int(k), k) if k.isdigit() else (1 << 30, k)


def _asset(name: str) -> str:
    return (resources.files("lean_dojo_v2") / "resources" / "report_html" / name).read_text("utf-8")


def _csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")
