"""``eval prove --prompt FILE`` with a placeholder that is more than a bare name: one line naming
it and the valid ones, exit 1, nothing written (a format spec could have grown the prompt past
gigabytes; an attribute or an index reached into the objects behind the values)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prover._oracle_server import one_line_error
from prover.fake_openai import FakeOpenAI

from .test_cli_eval_prove import _eval, server  # noqa: F401 (a fixture)


@pytest.mark.parametrize(
    "placeholder", ["{header:>3000000000}", "{header.__class__.__name__}", "{header[0]}"]
)
def test_a_prompt_placeholder_beyond_a_name_is_one_line_before_anything_is_written(
    placeholder: str,
    server: FakeOpenAI,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    prompt = tmp_path / "prompt.toml"
    prompt.write_text(f'whole = "{placeholder}{{formal_statement}}"\n', "utf-8")
    out = tmp_path / "out"
    line = one_line_error(_eval(server, out, "--prompt", str(prompt)), capsys)
    assert f"placeholder {placeholder}" in line and str(prompt) in line, line
    assert "valid placeholders: {name}, {header}" in line, line
    assert not out.exists()
