"""JSON nested 100,000 deep wherever the package reads JSON: one line naming the file, exit 1,
never a RecursionError (Python's json recurses once per level; the one reader,
``data/jsonio.loads``, refuses what orjson refuses: more than 1,024 levels)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prover._oracle_server import one_line_error

from lean_dojo_v2.config.deepspeed import read_deepspeed_config
from lean_dojo_v2.data.jsonio import MAX_DEPTH, iter_jsonl_records, loads, read_json
from lean_dojo_v2.errors import ConfigValueError, DataFormatError
from lean_dojo_v2.interaction.pantograph.client import _attach_invocations
from lean_dojo_v2.models.proof_prompt import PromptTemplateError, ProofPrompt
from lean_dojo_v2.trainer.causal_lm_trainer import pass_checkpoint
from lean_dojo_v2.trainer.lora import base_model_name, portable_adapter_config
from lean_dojo_v2.trainer.run_dir import CHECKPOINTS, STATE_FILE, pass_name, read_state

from .report_fixtures import attempt, write_out

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a": ' * 100_000 + "1" + "}" * 100_000


def test_the_one_reader_refuses_deep_nesting_and_reads_the_deepest_it_allows(tmp_path: Path):
    for text in (DEEP, DEEP_OBJECT, DEEP.encode(), "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)):
        with pytest.raises(DataFormatError, match="nested more than 1024 levels"):
            loads(text)
    # a lone surrogate sends the text to Python's parser, which would recurse
    with pytest.raises(DataFormatError, match="nested more than 1024 levels"):
        loads('["\\udcff", ' + DEEP + "]")
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP, "utf-8")
    with pytest.raises(DataFormatError, match=f"file {deep}: JSON nested"):
        read_json(deep)
    lines = tmp_path / "deep.jsonl"
    lines.write_text('{"ok": 1}\n' + DEEP + "\n", "utf-8")
    with pytest.raises(DataFormatError, match=f"file {lines}, record 1: JSON nested"):
        list(iter_jsonl_records(lines))


def test_a_deep_benchmark_line_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bench = tmp_path / "mine.jsonl"
    bench.write_text(DEEP + "\n", "utf-8")
    out = tmp_path / "out"
    argv = ["eval", "prove", "--benchmark", str(bench), "--generator", "openai", "--model", "m"]
    argv += ["--base-url", "http://127.0.0.1:9/v1", "--out", str(out), "--verdict-cache", "none"]
    line = one_line_error(argv, capsys)
    assert str(bench) in line and "line 1 is not JSON (JSON nested" in line, line
    assert not out.exists()


def _report_out(out: Path) -> Path:
    lines = [attempt("p1", 0, ok=True), attempt("p1", 1, ok=False)]
    return write_out(out, lines, problems=["p1"], n=2)


def test_a_deep_summary_under_eval_report_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    out = _report_out(tmp_path / "out")
    (out / "summary.json").write_text(DEEP, "utf-8")
    line = one_line_error(["eval", "report", str(out)], capsys)
    assert "summary.json" in line and "JSON nested" in line, line
    assert not (out / "report.html").exists()


def test_a_deep_attempt_line_under_eval_report_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    out = _report_out(tmp_path / "out")
    path = out / "attempts.jsonl"
    path.write_text(DEEP + "\n" + path.read_text("utf-8"), "utf-8")
    line = one_line_error(["eval", "report", str(out)], capsys)
    assert "attempts.jsonl" in line and "line 1 is not JSON" in line, line
    assert "JSON nested" in line, line


def test_a_deep_deepspeed_config_is_one_config_error(tmp_path: Path):
    config = tmp_path / "ds.json"
    config.write_text(DEEP, "utf-8")
    with pytest.raises(ConfigValueError, match="is not valid JSON text .*JSON nested"):
        read_deepspeed_config(config)


def test_a_deep_prompt_file_is_one_template_error(tmp_path: Path):
    prompt = tmp_path / "prompt.json"
    prompt.write_text(DEEP, "utf-8")
    with pytest.raises(PromptTemplateError, match="does not parse as json: .*JSON nested"):
        ProofPrompt.from_file(prompt)


def test_deep_training_run_files_read_as_cut_short_or_absent(tmp_path: Path):
    """A run directory's own files are read as their readers read any unreadable copy: a
    checkpoint whose trainer_state.json is too deep is passed over for the one before, a too
    deep training state is no state."""
    folder = tmp_path / CHECKPOINTS / pass_name(0)
    for step, text in ((2, "{}"), (10, DEEP)):
        (folder / f"checkpoint-{step}").mkdir(parents=True)
        (folder / f"checkpoint-{step}" / "trainer_state.json").write_text(text, "utf-8")
    assert pass_checkpoint(tmp_path, 0) == folder / "checkpoint-2"
    (tmp_path / STATE_FILE).write_text(DEEP_OBJECT, "utf-8")
    assert read_state(tmp_path) is None


def test_a_deep_adapter_config_names_no_base_and_is_left_as_it_is(tmp_path: Path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(DEEP, "utf-8")
    assert base_model_name(str(adapter)) is None
    portable_adapter_config(adapter, "smollm2")
    assert (adapter / "adapter_config.json").read_text("utf-8") == DEEP
    (adapter / "adapter_config.json").write_text("[1]", "utf-8")  # JSON, but not an object
    assert base_model_name(str(adapter)) is None


def test_deep_pantograph_invocations_leave_the_units_as_they_are(tmp_path: Path):
    side = tmp_path / "invocations.json"
    side.write_text(DEEP_OBJECT, "utf-8")
    units: list = []
    assert _attach_invocations(units, side) is units
