"""Every config dataclass documents every field the TRL way, so ``--help-config`` (and
``describe_config``) can explain each key: the trainers' configs, ``prove``'s ``SearchConfig``
and ``PantographConfig``."""

from __future__ import annotations

import importlib

import pytest

from lean_dojo_v2.config.loading import config_fields, describe_config, field_docs

CONFIGS = [
    "lean_dojo_v2.trainer.sft_config:SFTConfig",
    "lean_dojo_v2.trainer.retrieval_config:TrainingConfig",
    "lean_dojo_v2.trainer.progress_config:ProgressConfig",
    "lean_dojo_v2.trainer.premise_selector:PremiseSelectorConfig",
    "lean_dojo_v2.interaction.pantograph.config:PantographConfig",
    "lean_dojo_v2.prover.search:SearchConfig",
]


def _load(path: str) -> type:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.rpartition(":")[2])
def test_every_field_has_a_doc_with_its_default(path):
    cls = _load(path)
    docs = field_docs(cls)
    fields = list(config_fields(cls))
    undocumented = [name for name in fields if not docs.get(name, ("", "", ""))[2]]
    assert not undocumented, f"document these fields in {cls.__name__}'s docstring: {undocumented}"
    assert not set(docs) - set(fields), f"{cls.__name__} documents fields it does not have"
    for name, (group, type_text, _) in docs.items():
        assert group.startswith("Parameters that control"), (name, group)
        assert "defaults to" in type_text, name
    listing = describe_config(cls)
    assert "Other parameters" not in listing
    assert all(f"  {name} = " in listing for name in fields)


def test_describe_config_lists_each_group_once_even_when_fields_interleave_groups() -> None:
    from lean_dojo_v2.config.loading import describe_config
    from lean_dojo_v2.prover.search_config import SearchConfig

    text = describe_config(SearchConfig)
    headers = [line for line in text.splitlines() if line and not line.startswith(" ")]
    assert len(headers) == len(set(headers)), headers
    # SearchConfig declares frontier_batch after the budgets: it is still listed under generation.
    generation = text.split("Parameters that control generation:")[1].split("\n\n")[0]
    assert "frontier_batch" in generation and "num_samples" in generation
