"""The budget: the price table (and its typos, one line each) and the sums."""

from __future__ import annotations

from pathlib import Path

import pytest

from lean_dojo_v2.evaluation.budget import Budget, Price, load_price_table
from lean_dojo_v2.evaluation.errors import PriceTableError


def _table(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(text, "utf-8")
    return path


def test_a_price_table_prices_tokens_per_million(tmp_path: Path) -> None:
    path = _table(
        tmp_path,
        "# dollars per million tokens\n"
        "deepseek-chat: {input: 0.27, output: 1.10}\n"
        "local/free: {input: 0, output: 0}\n",
    )
    table = load_price_table(path)
    price = table.price_of("deepseek-chat")
    assert price == Price(0.27, 1.10)
    # 2M tokens in, 0.5M out: 2 * 0.27 + 0.5 * 1.10
    assert price.dollars(2_000_000, 500_000) == pytest.approx(0.54 + 0.55)
    assert table.price_of("local/free").dollars(10**9, 10**9) == 0.0


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("m: {inptu: 1, output: 2}\n", "unknown key 'inptu'"),
        ("m: {input: -1, output: 2}\n", "input is -1"),
        ("m: {input: cheap, output: 2}\n", "input is 'cheap'"),
        ("m: {input: 1}\n", "output is missing"),
        ("m: 3\n", "is not `{input"),
        ("- m\n- n\n", "is a list, not a mapping"),
        ("m: {input: 1, output: 2\n", "at line"),
        ("m: {input: .inf, output: 2}\n", "input is inf"),
    ],
)
def test_a_typo_in_the_price_table_is_one_line_naming_file_and_key(
    tmp_path: Path, text: str, says: str
) -> None:
    path = _table(tmp_path, text)
    with pytest.raises(PriceTableError) as info:
        load_price_table(path)
    message = str(info.value)
    assert "\n" not in message and says in message and str(path) in message


def test_a_model_missing_from_the_table_names_the_models_it_has(tmp_path: Path) -> None:
    table = load_price_table(_table(tmp_path, "a: {input: 1, output: 2}\n"))
    with pytest.raises(PriceTableError, match=r"no price for model 'b' \(it prices: a\)"):
        table.price_of("b")
    with pytest.raises(PriceTableError, match="cannot read the price table"):
        load_price_table(tmp_path / "absent.yaml")


def test_budgets_add_up_and_round_trip() -> None:
    a = Budget(attempts=2, tokens_in=10, tokens_out=20, lean_calls=2, lean_cpu_seconds=0.5)
    b = Budget(attempts=3, tokens_in=1, tokens_out=2, wall_seconds=1.5, dollars=0.25)
    total = Budget.total([a, b])
    assert (total.attempts, total.tokens_in, total.tokens_out) == (5, 11, 22)
    assert total.lean_calls == 2 and total.wall_seconds == 1.5 and total.dollars == 0.25
    assert Budget.total([a]).dollars is None  # nothing priced: unknown, not 0
    assert Budget.from_dict(total.to_dict()) == total
    priced = Budget(tokens_in=1_000_000, tokens_out=2_000_000).priced(Price(1.0, 3.0))
    assert priced.dollars == pytest.approx(7.0)


@pytest.mark.gpu
def test_a_local_model_on_cuda_spends_gpu_seconds(tmp_path: Path) -> None:
    """A local model's generator seconds on a CUDA device are its GPU seconds (0 on the CPU,
    which the budget tests above and the generator's own tests see)."""
    from tiny_models import build_tiny_causal

    from lean_dojo_v2.evaluation import evaluate

    result = evaluate(
        benchmark="minif2f-test",
        limit=2,
        mode="whole",
        n=2,
        generator="hf",
        model=str(build_tiny_causal(tmp_path / "tiny")),
        device="cuda",
        max_tokens=16,
        verifier="recorded",
        verdict_cache="none",
        parallel="inline",
        progress=False,
        out=str(tmp_path / "out"),
    )
    budget = result.budget
    assert budget.gpu_seconds > 0
    assert budget.gpu_seconds == pytest.approx(budget.generator_seconds, abs=1e-3)
    assert all(p.budget.gpu_seconds > 0 for p in result.problems)
