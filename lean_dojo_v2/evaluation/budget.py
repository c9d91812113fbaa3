"""Layer 4 (evaluation): what an evaluation spent, per problem and in total.

Leaderboards now quote the compute beside the count (PutnamBench's ``condensed-compute-budget``):
a :class:`Budget` is that, measured — attempts, the generator's tokens in and out, generator
seconds, GPU seconds where CUDA was used, calls that reached the verifier (a verdict served
from the cache costs none), the CPU seconds of the Lean REPL processes, wall seconds, and
dollars for a hosted model, priced by a :class:`PriceTable` the user can edit.

A price table is a YAML (or JSON) file of dollars per million tokens, one model a line::

    # dollars per million tokens (input = the prompt, output = the completion)
    deepseek-chat: {input: 0.27, output: 1.10}
    "gpt-4o-mini": {input: 0.15, output: 0.60}

A key or value it cannot use (a typo such as ``inptu``, a negative or non-numeric price, a YAML
syntax error) is a :class:`PriceTableError` naming the file, the model and the key, raised
before anything is written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from .errors import PriceTableError

__all__ = ["Budget", "Price", "PriceTable", "load_price_table"]

PRICE_KEYS = ("input", "output")


@dataclass(frozen=True)
class Price:
    """Dollars per million input (prompt) and output (completion) tokens."""

    input: float
    output: float

    def dollars(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input + tokens_out * self.output) / 1_000_000


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name, read from ``source`` (a file path, for the messages)."""

    prices: Mapping[str, Price]
    source: str = "<price table>"

    def price_of(self, model: str) -> Price:
        """The model's price; a :class:`PriceTableError` naming the models the table has when
        it has no line for ``model``."""
        price = self.prices.get(model)
        if price is None:
            known = ", ".join(sorted(self.prices)) or "none"
            raise PriceTableError(
                f"{self.source} has no price for model {model!r} (it prices: {known}); add a "
                f"line `{model}: {{input: DOLLARS, output: DOLLARS}}` (per million tokens)"
            )
        return price


def load_price_table(path: str | Path) -> PriceTable:
    """Read and check a price table (see the module docstring)."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise PriceTableError(f"cannot read the price table {path}: {why}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not YAML"
        raise PriceTableError(
            f"price table {path}{where}: {problem}; write one model a line, e.g. "
            "`my-model: {input: 0.27, output: 1.10}`"
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise PriceTableError(
            f"price table {path} is a {type(data).__name__}, not a mapping of model names to "
            "`{input: DOLLARS, output: DOLLARS}` (per million tokens)"
        )
    prices = {}
    for model, entry in data.items():
        prices[str(model)] = _price(path, str(model), entry)
    return PriceTable(prices, str(path))


def _price(path: Path, model: str, entry: object) -> Price:
    where = f"price table {path}, model {model!r}"
    if not isinstance(entry, Mapping):
        raise PriceTableError(
            f"{where}: {entry!r} is not `{{input: DOLLARS, output: DOLLARS}}` (per million tokens)"
        )
    unknown = [str(k) for k in entry if k not in PRICE_KEYS]
    if unknown:
        raise PriceTableError(
            f"{where}: unknown key {unknown[0]!r}; the keys are input and output "
            "(dollars per million tokens)"
        )
    values = {}
    for key in PRICE_KEYS:
        if key not in entry:
            raise PriceTableError(f"{where}: {key} is missing (dollars per million tokens)")
        value = entry[key]
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value < 0
        ):
            raise PriceTableError(
                f"{where}: {key} is {value!r}; write a number of dollars >= 0 per million tokens"
            )
        values[key] = float(value)
    return Price(values["input"], values["output"])


@dataclass
class Budget:
    """What was spent; the fields add up (:meth:`add`), so a total is the sum of its problems.

    ``lean_calls``: calls that reached the verifier (Lean's REPL; the recorded table under
    ``--verifier recorded``); a verdict from the cache is not one. ``lean_cpu_seconds``: CPU time
    of the Lean REPL processes while they worked on the problem. ``gpu_seconds``: generator
    seconds on a CUDA device (0 on CPU or behind a server). ``dollars``: None when the model has
    no price (a local model, or no price table given)."""

    attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    generator_seconds: float = 0.0
    gpu_seconds: float = 0.0
    lean_calls: int = 0
    lean_cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    dollars: float | None = None

    def add(self, other: Budget) -> None:
        """Add ``other`` into this budget (dollars stay None only when both are)."""
        for f in fields(self):
            if f.name == "dollars":
                continue
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        if other.dollars is not None:
            self.dollars = (self.dollars or 0.0) + other.dollars

    @classmethod
    def total(cls, parts: Iterable[Budget]) -> Budget:
        out = cls()
        for part in parts:
            out.add(part)
        return out

    def priced(self, price: Price | None) -> Budget:
        """This budget with ``dollars`` from ``price`` (None: left as it is)."""
        if price is not None:
            self.dollars = price.dollars(self.tokens_in, self.tokens_out)
        return self

    def to_dict(self) -> dict[str, float | int | None]:
        out: dict[str, float | int | None] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = round(value, 6) if isinstance(value, float) else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Budget:
        """The inverse of :meth:`to_dict`; keys it does not know are ignored, missing ones are 0."""
        out = cls()
        for f in fields(cls):
            value = data.get(f.name)
            if f.name == "dollars":
                out.dollars = float(value) if isinstance(value, (int, float)) else None
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                setattr(out, f.name, type(getattr(out, f.name))(value))
        return out
