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
    "lean_dojo_v2.trainer.premise_selector_config:PremiseSelectorConfig",
    "lean_dojo_v2.trainer.grpo_config:GRPOConfig",
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


# -- docs read up the class hierarchy ------------------------------------------------------------


def _toy_configs():
    from dataclasses import dataclass, field

    @dataclass
    class Base:
        """Parameters:
        > Parameters that control the model

        name (`str`, *optional*, defaults to `"m"`):
            The model.
        size (`int`, *optional*, defaults to `1`):
            Its size.

        > Parameters that control outputs

        out (`str`, *optional*, defaults to `"o"`):
            Where outputs go.
        """

        name: str = "m"
        size: int = 1
        out: str = "o"
        depth: int = 3

    @dataclass
    class Sub(Base):
        """Parameters:
        > Parameters that control the model

        size (`int`, *optional*, defaults to `2`):
            The sub's size.

        > Parameters that control the rewards

        weight (`float`, *optional*, defaults to `1.0`):
            How much.

        > Parameters that control outputs

        plot (`bool`, *optional*, defaults to `True`):
            Draw it.
        """

        size: int = 2
        weight: float = 1.0
        plot: bool = True
        out: str = field(default="o", init=False)  # set by the run

    return Base, Sub


def test_a_field_is_documented_once_in_the_nearest_class_that_documents_it() -> None:
    _, sub = _toy_configs()
    docs = field_docs(sub)
    assert docs["name"] == (
        "Parameters that control the model",
        '`str`, *optional*, defaults to `"m"`',
        "The model.",
    )
    assert docs["size"][2] == "The sub's size."  # the subclass's own text wins
    # Groups keep the base's order; a new group goes after the one the subclass names before it;
    # inherited fields come first in their group; a field the subclass does not take is left out.
    assert list(docs) == ["name", "size", "weight", "plot"]
    listing = describe_config(sub)
    headers = [line for line in listing.splitlines() if line and not line.startswith(" ")]
    assert headers == [
        "Parameters that control the model:",
        "Parameters that control the rewards:",
        "Parameters that control outputs:",
        "Other parameters:",  # depth: documented nowhere
    ]
    assert "  out = " not in listing


def test_the_causal_lm_configs_document_the_shared_fields_once() -> None:
    from lean_dojo_v2.config.loading import _own_field_docs
    from lean_dojo_v2.trainer.causal_lm_config import CausalLMConfig
    from lean_dojo_v2.trainer.grpo_config import GRPOConfig
    from lean_dojo_v2.trainer.sft_config import SFTConfig

    shared = set(_own_field_docs(CausalLMConfig.__doc__ or "")[1])
    assert shared == set(config_fields(CausalLMConfig))
    sft_own = set(_own_field_docs(SFTConfig.__doc__ or "")[1])
    grpo_own = set(_own_field_docs(GRPOConfig.__doc__ or "")[1])
    assert not sft_own & shared
    # GRPO documents again only the shared fields it gives another default.
    assert grpo_own & shared == {"batch_size", "output_dir", "save_steps"}
    for name in grpo_own & shared:
        assert (
            config_fields(GRPOConfig)[name].default != config_fields(CausalLMConfig)[name].default
        )


def test_help_config_lists_the_other_key_names_a_config_file_may_use() -> None:
    from lean_dojo_v2.trainer.grpo_config import GRPOConfig
    from lean_dojo_v2.trainer.premise_selector_config import PremiseSelectorConfig

    grpo = describe_config(GRPOConfig).split("Other key names a config file may use:")[1]
    assert "  base_model: model_name" in grpo and "  lora_rank: lora = true and lora_r" in grpo
    ps = describe_config(PremiseSelectorConfig).split("Other key names a config file may use:")[1]
    assert "  model: model_name" in ps and "  epochs: max_epochs" in ps


# -- field metadata: what a run may change and still resume ---------------------------------------


def test_fingerprint_exclusions_are_field_metadata() -> None:
    from lean_dojo_v2.config.loading import unfingerprinted_fields
    from lean_dojo_v2.trainer.grpo_config import GRPOConfig
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig
    from lean_dojo_v2.trainer.sft_config import SFTConfig

    outputs = {"output_dir", "overwrite_output_dir", "resume", "save_steps", "save_total_limit"}
    logging_ = {"logging_steps", "report_to", "run_name", "progress_bar", "merge_lora"}
    assert unfingerprinted_fields(SFTConfig) == outputs | logging_ | {"loss_curve"}
    assert unfingerprinted_fields(GRPOConfig) == outputs | logging_ | {
        "curves",
        "reward_envs",
        "reward_timeout",
        "reward_workers_backend",
        "ray_address",
    }
    assert unfingerprinted_fields(TrainingConfig) == {
        "output_dir",
        "overwrite_output_dir",
        "resume",
        "log_every_n_steps",
        "report_to",
        "progress_bar",
        "save_every_n_steps",
        "device",
        "eval_batch_size",
        "num_retrieved",
    }


def test_a_fingerprint_leaves_out_the_unfingerprinted_fields_only() -> None:
    from lean_dojo_v2.trainer.run_dir import config_fingerprint
    from lean_dojo_v2.trainer.sft_config import SFTConfig

    plan = {"data": "d"}
    base = config_fingerprint(SFTConfig(), plan)
    assert config_fingerprint(SFTConfig(output_dir="else", save_steps=7), plan) == base
    assert config_fingerprint(SFTConfig(lr=1e-4), plan) != base
    # A trainer whose config carries no metadata names its exclusions itself.
    without_lr = config_fingerprint(SFTConfig(), plan, exclude=["lr"])
    assert config_fingerprint(SFTConfig(lr=1e-4), plan, exclude=["lr"]) == without_lr
