"""``solved.png``: linear in the samples per problem (n = 20,000 in under 2 s, pass@k for every
k by the unbiased estimator), and every name in it shown as written (no mathtext, no LaTeX)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from lean_dojo_v2.evaluation.attempts import ProblemOutcome
from lean_dojo_v2.evaluation.passk import ProblemSamples, pass_at_k, pass_at_table
from lean_dojo_v2.evaluation.plot import PLOT_FILE, write_plot
from lean_dojo_v2.evaluation.summary import EvalResult

PNG = b"\x89PNG\r\n\x1a\n"


def _result(n: int, correct: list[int], *, benchmark: str = "minif2f-test", model: str = "m"):
    rng = random.Random(n)
    problems = [
        ProblemOutcome(
            f"p{i}",
            "proved" if c else "failed",
            n,
            sorted(rng.sample(range(n), c)),
            to_solve={"attempts": 1.0 + i, "tokens": 100.0 * (i + 1)} if c else None,
        )
        for i, c in enumerate(correct)
    ]
    return EvalResult(benchmark, "whole", "recorded", model, n, False, problems, Path("out"))


def test_the_table_is_the_unbiased_estimator_for_every_k() -> None:
    for n in (1, 2, 5, 32, 100, 128, 257):
        for c in range(n + 1):
            table = pass_at_table([ProblemSamples("p", frozenset(range(c)))], n)
            assert list(table) == [str(k) for k in range(1, n + 1)]
            for k in range(1, n + 1):
                assert table[str(k)] == pytest.approx(pass_at_k(n, c, k), abs=1e-13), (n, c, k)
    # samples beyond n are not counted, problems are averaged
    mixed = [ProblemSamples("a", frozenset({0, 9})), ProblemSamples("b", frozenset({1, 2}))]
    table = pass_at_table(mixed, 4)
    assert table["1"] == pytest.approx((pass_at_k(4, 1, 1) + pass_at_k(4, 2, 1)) / 2)


@pytest.mark.timeout(60)
def test_a_plot_of_20000_samples_per_problem_takes_under_2_seconds(tmp_path: Path) -> None:
    write_plot(_result(4, [1, 0]), tmp_path)  # matplotlib's import is not the plot's cost
    result = _result(20_000, [0, 1, 3, 40, 700, 2_000, 10_000, 20_000, 0, 5])
    start = time.perf_counter()
    path = write_plot(result, tmp_path)
    seconds = time.perf_counter() - start
    assert path is not None and path.read_bytes().startswith(PNG)
    assert seconds < 2.0, f"{seconds:.1f} s"


@pytest.mark.parametrize(
    "benchmark, model",
    [
        ("my$\\frac{$bench.jsonl", "org/prover"),  # not mathtext: matplotlib raised
        ("minif2f-test", "$x^2$-prover"),
        ("a$b", "$"),
        ("\\textbf{x}", "50% $5 & _under_ #1"),
    ],
)
def test_names_are_shown_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, benchmark: str, model: str
) -> None:
    import matplotlib
    from matplotlib.figure import Figure

    shown: list[tuple[str, bool]] = []
    real_savefig = Figure.savefig

    def savefig(fig: Figure, *args: object, **kwargs: object) -> None:
        title = fig._suptitle
        assert title is not None
        shown.append((title.get_text(), title.get_parse_math()))
        real_savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    # a matplotlibrc that asks for LaTeX does not reach the names either (no LaTeX here)
    with matplotlib.rc_context({"text.usetex": True}):
        path = write_plot(_result(8, [1, 0, 8], benchmark=benchmark, model=model), tmp_path)
    assert path == tmp_path / PLOT_FILE and path.read_bytes().startswith(PNG)
    assert shown == [(f"{benchmark}, whole mode, {model}", False)]
