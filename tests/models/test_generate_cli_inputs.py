"""``lean-dojo-v2 generate`` on hostile input: one line and status 1, never a traceback or a hang."""

from __future__ import annotations

import io

import pytest

from lean_dojo_v2.cli import main

STATE = "n : ℕ\n⊢ n + 0 = n"


def _one_line_error(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    # Loading a model may draw a progress bar on stderr; the error is one line of its own.
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and lines[0].startswith("lean-dojo-v2: error: "), err
    return lines[0]


def _stdin_bytes(monkeypatch, data: bytes) -> None:
    # A real stdin: text on top of a byte buffer (the command reads the bytes).
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


@pytest.mark.parametrize("data", [b"\xff\xfe\x80garbage", b"n : \xe2\x84", bytes(range(256))])
def test_binary_garbage_on_stdin_is_an_invalid_request(capsys, monkeypatch, data):
    _stdin_bytes(monkeypatch, data)
    line = _one_line_error(capsys, ["generate", "-", "--model", "no-such-model-is-loaded"])
    assert "InvalidRequestError" not in line and "not UTF-8 text" in line and "stdin" in line


def test_utf8_on_stdin_is_read_as_text(monkeypatch):
    from lean_dojo_v2.models.cli import read_state

    _stdin_bytes(monkeypatch, STATE.encode("utf-8"))
    assert read_state("-") == STATE


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["generate", "a\udcedb"], "the goal state"),
        (["generate", STATE, "--prefix", "\udcff"], "--prefix"),
        (["generate", "\ud800"], "the goal state"),
    ],
)
def test_a_lone_surrogate_in_state_or_prefix_is_an_invalid_request(capsys, argv, what):
    # Bytes that are not UTF-8 in an argument arrive as lone surrogates (surrogateescape).
    line = _one_line_error(capsys, [*argv, "--model", "no-such-model-is-loaded"])
    assert line.startswith(f"lean-dojo-v2: error: {what} is not valid text"), line


def test_the_checks_raise_invalid_request_error(monkeypatch):
    from lean_dojo_v2.interaction import InvalidRequestError
    from lean_dojo_v2.models.cli import check_input, read_state

    with pytest.raises(InvalidRequestError, match="lone surrogate"):
        check_input("x\udc80", "--prefix")
    _stdin_bytes(monkeypatch, b"\x80")
    with pytest.raises(InvalidRequestError, match="offset 0"):
        read_state("-")


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("-n", "100000", "from 1 to 1,024"),
        ("-n", "0", "from 1 to 1,024"),
        ("--num-samples", "-3", "from 1 to 1,024"),
        ("--max-new-tokens", "10000000", "from 1 to 4,096"),
        ("--max-new-tokens", "0", "from 1 to 4,096"),
        ("--seed", "-1", "from 0 to"),
        ("--seed", str(2**64), "from 0 to"),
        ("--temperature", "inf", "finite number > 0"),
        ("--temperature", "nan", "finite number > 0"),
        ("--temperature", "0", "finite number > 0"),
    ],
)
def test_numbers_out_of_bounds_are_refused_before_loading(capsys, flag, value, says):
    # -n 100000 used to decode for many minutes; every number is bounded up front.
    code = main(["generate", STATE, flag, value, "--model", "no-such-model-is-loaded"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and says in lines[0], err
    assert "see 'lean-dojo-v2 generate --help'" in lines[0]


def test_the_bounds_themselves_are_accepted():
    from lean_dojo_v2.cli import build_parser
    from lean_dojo_v2.models.cli import MAX_NEW_TOKENS, MAX_NUM_SAMPLES

    args = build_parser().parse_args(
        ["generate", STATE, "-n", str(MAX_NUM_SAMPLES), "--max-new-tokens", str(MAX_NEW_TOKENS)]
    )
    assert (args.num_samples, args.max_new_tokens) == (MAX_NUM_SAMPLES, MAX_NEW_TOKENS)


@pytest.fixture(scope="module")
def nan_model_dirs(tiny_causal_dir, tmp_path_factory):
    """Copies of the tiny model: every weight NaN (a diverged run), and one weight NaN."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    out = []
    for everywhere in (True, False):
        dst = tmp_path_factory.mktemp("nan_everywhere" if everywhere else "nan_once")
        shutil.copytree(tiny_causal_dir, dst, dirs_exist_ok=True)
        model = AutoModelForCausalLM.from_pretrained(tiny_causal_dir)
        with torch.no_grad():
            if everywhere:
                for p in model.parameters():
                    p.fill_(float("nan"))
            else:
                model.model.layers[-1].mlp.down_proj.weight[0, 0] = float("nan")
        model.save_pretrained(dst)
        out.append(dst)
    return out


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("strategy", ["sample", "greedy", "beam"])
def test_a_model_with_nan_weights_is_a_one_line_error_naming_it(
    capsys, nan_model_dirs, which, strategy
):
    # Before: sampling died in torch.multinomial with a traceback, greedy and beam printed
    # "(no candidates ...)" with status 0.
    model = str(nan_model_dirs[which])
    argv = ["generate", STATE, "--model", model, "--device", "cpu", "--strategy", strategy]
    line = _one_line_error(capsys, [*argv, "-n", "2", "--max-new-tokens", "4"])
    assert model in line and "NaN" in line, line


def test_a_healthy_model_passes_the_check(tiny_causal_dir, tiny_seq2seq_dir):
    from lean_dojo_v2.models.cli import check_finite_logits
    from lean_dojo_v2.models.generator import HFTacticGenerator

    for path in (tiny_causal_dir, tiny_seq2seq_dir):
        gen = HFTacticGenerator(str(path), device="cpu")
        check_finite_logits(gen, STATE, None)
        check_finite_logits(gen, STATE, "simp")


def test_a_state_longer_than_the_model_context_is_refused(capsys, monkeypatch, tiny_causal_dir):
    # The tiny Llama reads 1024 positions; past them it used to decode garbage (status 0).
    monkeypatch.setattr("sys.stdin", io.StringIO("⊢ a = a " * 3000))
    argv = ["generate", "-", "--model", str(tiny_causal_dir), "--device", "cpu", "-n", "1"]
    line = _one_line_error(capsys, argv)
    assert "reads at most 1,024" in line and str(tiny_causal_dir) in line, line


def test_the_context_check_counts_max_new_tokens(tiny_causal):
    from lean_dojo_v2.errors import ModelError
    from lean_dojo_v2.models.cli import check_prompt_fits
    from lean_dojo_v2.models.generator import HFTacticGenerator

    gen = HFTacticGenerator(tiny_causal)
    check_prompt_fits(gen, STATE, None, 64)
    with pytest.raises(ModelError, match="--max-new-tokens 1,024"):
        check_prompt_fits(gen, STATE, None, 1024)
