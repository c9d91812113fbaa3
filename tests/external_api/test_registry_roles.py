"""A model asked for in a role it cannot play is a 400 whose one line names its role and the
asked one with their articles ("an encoder, not a generator")."""

from __future__ import annotations

import pytest

from lean_dojo_v2.external_api.errors import BadAPIRequestError
from lean_dojo_v2.external_api.registry import ModelRegistry


@pytest.fixture()
def registry() -> ModelRegistry:
    # Neither model loads anything until it is used.
    specs = {"g": {"kind": "constant", "outputs": ["simp"]}, "e": {"kind": "encoder"}}
    return ModelRegistry.from_specs(specs, defaults=False, device="cpu")


@pytest.mark.parametrize(
    ("name", "role", "words"),
    [
        ("e", "generator", "model 'e' is an encoder, not a generator; generators served: g"),
        ("g", "encoder", "model 'g' is a generator, not an encoder; encoders served: e"),
        ("g", "retriever", "model 'g' is a generator, not a retriever; retrievers served: none"),
    ],
)
def test_wrong_role_names_both_roles_with_their_articles(registry, name, role, words):
    with pytest.raises(BadAPIRequestError) as exc:
        registry.get(name, role)
    assert str(exc.value) == words
