"""Hostile input at the agents' boundary: every public agent method checks the types and ranges
of its arguments before anything is written (one-line ``AgentConfigError`` naming the argument),
and a corrupt traced dataset is refused before the database file exists."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from lean_dojo_v2.agent import AgentConfigError, ExternalAgent, HFAgent, LeanAgent
from lean_dojo_v2.errors import LeanDojoError


def _sft(out: Path, model: Path | None = None):
    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

    # Constructing the trainer loads nothing: the checks below never get to a model.
    return SFTTrainer(
        model_name=str(model) if model else None,
        output_dir=out,
        epochs_per_repo=1,
        batch_size=2,
        lr=2e-5,
    )


# (argument named in the message, how to make the call); ``ready`` is an HFAgent holding the
# bundled sample, ``new`` builds an agent with the given keywords.
CONSTRUCTOR_CASES = {
    "HFAgent database_path int": ("database_path", lambda new, s: new(database_path=42)),
    "HFAgent database_path empty": ("database_path", lambda new, s: new(database_path=" ")),
    "HFAgent work_dir": ("work_dir", lambda new, s: new(work_dir=3)),
    "HFAgent quiet": ("quiet", lambda new, s: new(quiet="no")),
    "HFAgent progress": ("progress", lambda new, s: new(progress=None)),
    "HFAgent backend": ("backend", lambda new, s: new(backend=["replay"])),
    "HFAgent workers": ("workers", lambda new, s: new(workers="2")),
    "HFAgent device": ("device", lambda new, s: new(device=0)),
    "HFAgent prover_kwargs unknown": (
        "prover_kwargs",
        lambda new, s: new(prover_kwargs={"temprature": 0.7}),
    ),
    "HFAgent prover_kwargs set by agent": (
        "prover_kwargs",
        lambda new, s: new(prover_kwargs={"device": "cpu"}),
    ),
    "HFAgent prover_kwargs list": ("prover_kwargs", lambda new, s: new(prover_kwargs=[1])),
    "HFAgent prover_config": ("prover_config", lambda new, s: new(prover_config={"a": 1})),
    "ExternalAgent prover_kwargs": (
        "prover_kwargs",
        lambda new, s: ExternalAgent(prover_kwargs={"nope": 1}, database_path=s),
    ),
    "ExternalAgent prover_kwargs base_url": (
        "prover_kwargs",
        lambda new, s: ExternalAgent(prover_kwargs={"base_url": "x"}, database_path=s),
    ),
    "ExternalAgent model_name": ("model_name", lambda new, s: ExternalAgent(5, database_path=s)),
    "ExternalAgent base_url": (
        "base_url",
        lambda new, s: ExternalAgent(base_url=8000, database_path=s),
    ),
    "ExternalAgent api_key": ("api_key", lambda new, s: ExternalAgent(api_key=1, database_path=s)),
    "LeanAgent generator": ("generator", lambda new, s: LeanAgent(s, generator=5)),
    "LeanAgent num_premises negative": (
        "num_premises",
        lambda new, s: LeanAgent(s, num_premises=-1),
    ),
    "LeanAgent num_premises text": ("num_premises", lambda new, s: LeanAgent(s, num_premises="5")),
    "LeanAgent prover_kwargs": (
        "prover_kwargs",
        lambda new, s: LeanAgent(s, prover_kwargs={"retriever": "x"}),
    ),
}

METHOD_CASES = {
    "setup_traced_dataset int": ("path", lambda a, s: a.setup_traced_dataset(123)),
    "setup_traced_dataset None": ("path", lambda a, s: a.setup_traced_dataset(None)),
    "setup_traced_dataset url": ("url", lambda a, s: a.setup_traced_dataset(s, url=123)),
    "setup_traced_dataset commit": ("commit", lambda a, s: a.setup_traced_dataset(s, commit=5)),
    "setup_traced_dataset source_dir": (
        "source_dir",
        lambda a, s: a.setup_traced_dataset(s, source_dir=5),
    ),
    "setup_local_repository": ("path", lambda a, s: a.setup_local_repository(5)),
    "setup_github_repository url": ("url", lambda a, s: a.setup_github_repository(5)),
    "setup_github_repository commit": (
        "commit",
        lambda a, s: a.setup_github_repository("https://github.com/o/r", commit=5),
    ),
    "trace_repository build_deps": (
        "build_deps",
        lambda a, s: a.trace_repository("https://github.com/o/r", None, build_deps="yes"),
    ),
    "add_repository repo": ("repo", lambda a, s: a.add_repository(5)),
    "add_repository keyword": ("keywords", lambda a, s: a.add_repository(s, replce=True)),
    "add_repository dataset_dir": ("dataset_dir", lambda a, s: a.add_repository(s, dataset_dir=1)),
    "prove limit text": ("limit", lambda a, s: a.prove(limit="2")),
    "prove limit fraction": ("limit", lambda a, s: a.prove(limit=1.5)),
    "prove limit zero": ("limit", lambda a, s: a.prove(limit=0)),
    "prove limit bool": ("limit", lambda a, s: a.prove(limit=True)),
    "prove out": ("out", lambda a, s: a.prove(out=5)),
    "prove split": ("split", lambda a, s: a.prove(split=5)),
    "prove whole_proof": ("whole_proof", lambda a, s: a.prove(whole_proof="yes")),
    "prove write_back": ("write_back", lambda a, s: a.prove(write_back="no")),
    "prove in_place": ("in_place", lambda a, s: a.prove(in_place=1)),
    "prove force": ("force", lambda a, s: a.prove(force="true")),
    "prove branch": ("branch", lambda a, s: a.prove(branch=3)),
    "prove include_depends_on_sorry": (
        "include_depends_on_sorry",
        lambda a, s: a.prove(include_depends_on_sorry=None),
    ),
    "prove record": ("record", lambda a, s: a.prove(record=0)),
    "prove_theorem int": ("theorem", lambda a, s: a.prove_theorem(42)),
    "prove_theorem empty": ("theorem", lambda a, s: a.prove_theorem("")),
    "prove_theorem whole_proof": (
        "whole_proof",
        lambda a, s: a.prove_theorem("x", whole_proof="no"),
    ),
    "initialize_prover split": ("split", lambda a, s: a.initialize_prover(split=3)),
}


def _one_line(info: pytest.ExceptionInfo, name: str) -> None:
    message = str(info.value)
    assert "\n" not in message and name in message, message


@pytest.mark.parametrize("case", sorted(CONSTRUCTOR_CASES))
def test_wrong_constructor_arguments_are_one_line_and_write_nothing(tmp_path, case):
    name, call = CONSTRUCTOR_CASES[case]
    db = tmp_path / "db.sqlite"

    def new(**kwargs):
        kwargs.setdefault("database_path", db)
        kwargs.setdefault("work_dir", tmp_path / "work")
        return HFAgent(_sft(tmp_path / "out"), **kwargs)

    with pytest.raises(AgentConfigError) as info:
        call(new, db)
    _one_line(info, name)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def ready(tmp_path_factory, sample, tiny_causal):
    """An HFAgent holding the bundled sample; its work_dir (exports) is not there yet. A tiny
    model and budget: an argument that got through would cost seconds, not a real search."""
    from lean_dojo_v2.prover import SearchConfig

    root = tmp_path_factory.mktemp("ready")
    agent = HFAgent(
        _sft(root / "out", tiny_causal),
        database_path=root / "db.sqlite",
        work_dir=root / "work",
        quiet=True,
        progress=False,
        device="cpu",
        search_config=SearchConfig(num_samples=1, max_expansions=1, timeout=5),
    )
    agent.setup_traced_dataset(sample)
    yield agent
    agent.close()


@pytest.mark.parametrize("case", sorted(METHOD_CASES))
def test_wrong_method_arguments_are_one_line_before_anything_is_written(ready, sample, case):
    name, call = METHOD_CASES[case]
    before = ready.database.stats()
    with pytest.raises(AgentConfigError) as info:
        call(ready, sample)
    _one_line(info, name)
    assert not ready.work_dir.exists()  # nothing exported for a search
    assert ready.prover is None  # no model loaded
    assert ready.database.stats() == before and len(ready.repos) == 1


def test_the_url_argument_is_blamed_not_the_bundled_metadata(tmp_path, sample):
    agent = HFAgent(_sft(tmp_path / "out"), database_path=tmp_path / "db.sqlite")
    with pytest.raises(AgentConfigError) as info:
        agent.setup_traced_dataset(sample, url=123)
    assert str(info.value).startswith("url must be") and "metadata.json" not in str(info.value)
    assert not (tmp_path / "db.sqlite").exists()


def test_the_seeds_prover_config_checks_its_types():
    from lean_dojo_v2.errors import ConfigValueError
    from lean_dojo_v2.lean_agent.config import ProverConfig

    for bad in (
        {"num_workers": "4"},
        {"num_sampled_tactics": 1.5},
        {"timeout": True},
        {"max_expansions": "3"},
        {"batch_size": 0},
        {"use_vllm": "no"},
    ):
        with pytest.raises(ConfigValueError, match=next(iter(bad))):
            ProverConfig(**bad)
    assert ProverConfig(max_expansions=None, num_workers=2).num_workers == 2


def test_lean_agent_refuses_a_missing_generator_before_training_or_exporting(tmp_path, sample):
    from lean_dojo_v2.errors import ModelNotFoundError

    agent = LeanAgent(
        tmp_path / "db.sqlite", generator=tmp_path / "nonexistent", work_dir=tmp_path / "work"
    )
    agent.setup_traced_dataset(sample)
    agent.trainer.train = lambda **kw: pytest.fail("trained before the generator was checked")
    for call in (agent.train, agent.prove):
        with pytest.raises(ModelNotFoundError, match="nonexistent"):
            call()
    assert not (tmp_path / "work").exists()
    agent.close()


# ---------------------------------------------------------------- corrupt traced datasets


def _corrupt(kind: str, d: Path) -> None:
    r = d / "random"
    if kind == "missing corpus":
        (d / "corpus.jsonl").unlink()
    elif kind == "split not JSON":
        (r / "val.json").write_text("this is not json")
    elif kind == "split top-level dict":
        (r / "val.json").write_text('{"theorems": []}')
    elif kind == "corpus line a list":
        (d / "corpus.jsonl").write_text("[1, 2, 3]\n")
    elif kind == "theorem missing fields":
        (r / "val.json").write_text('[{"full_name": "x"}]')
    elif kind == "empty split file":
        (r / "test.json").write_text("")
    elif kind == "empty corpus":
        (d / "corpus.jsonl").write_text("")
    elif kind == "directory for a split file":
        (r / "val.json").unlink()
        (r / "val.json").mkdir()
    elif kind == "binary corpus":
        (d / "corpus.jsonl").write_bytes(b"\xff\xfe\x00garbage\x81\n")
    elif kind == "truncated split":
        text = (r / "train.json").read_text()
        (r / "train.json").write_text(text[: len(text) // 2])
    elif kind == "truncated corpus":
        text = (d / "corpus.jsonl").read_text()
        (d / "corpus.jsonl").write_text(text[: len(text) // 2])
    elif kind == "bad metadata":
        (d / "metadata.json").write_text("{not json")
    elif kind == "traced files garbage":
        (d / "traced_files.jsonl").write_text("garbage")
    elif kind == "duplicate theorem across splits":
        first = json.loads((r / "train.json").read_text())[:1]
        (r / "val.json").write_text(json.dumps(first))
    else:  # pragma: no cover - a typo in the parameter list
        raise AssertionError(kind)


CORRUPT = [
    "missing corpus",
    "split not JSON",
    "split top-level dict",
    "corpus line a list",
    "theorem missing fields",
    "empty split file",
    "empty corpus",
    "directory for a split file",
    "binary corpus",
    "truncated split",
    "truncated corpus",
    "bad metadata",
    "traced files garbage",
    "duplicate theorem across splits",
]


@pytest.mark.parametrize("kind", CORRUPT)
def test_a_corrupt_dataset_is_refused_before_the_database_file_exists(tmp_path, sample, kind):
    d = tmp_path / "dataset"
    shutil.copytree(sample, d, ignore=shutil.ignore_patterns("novel_premises"))
    _corrupt(kind, d)
    agent = HFAgent(_sft(tmp_path / "out"), database_path=tmp_path / "db" / "agent.sqlite")
    with pytest.raises(LeanDojoError) as info:
        agent.setup_traced_dataset(d)
    assert "\n" not in str(info.value) and not isinstance(info.value, AgentConfigError)
    assert not (tmp_path / "db").exists() and agent.repos == []


def test_a_refused_dataset_leaves_an_existing_database_as_it_was(tmp_path, sample):
    agent = HFAgent(_sft(tmp_path / "out"), database_path=tmp_path / "db.sqlite")
    agent.setup_traced_dataset(sample)
    before = agent.database.stats()
    d = tmp_path / "dataset"
    shutil.copytree(sample, d, ignore=shutil.ignore_patterns("novel_premises"))
    _corrupt("truncated corpus", d)
    with pytest.raises(LeanDojoError, match="corpus.jsonl"):
        agent.setup_traced_dataset(d, url="https://github.com/example/other", commit="c" * 40)
    assert agent.database.stats() == before and len(agent.repos) == 1
    assert os.path.getsize(tmp_path / "db.sqlite") > 0
    agent.close()


def test_a_dataset_is_read_once_when_added(tmp_path, sample, monkeypatch):
    """The checks before the database opens read only the heads of files: each split file is
    parsed once, by the database's reader (a mathlib-size dataset is gigabytes of JSON)."""
    import lean_dojo_v2.data.dataset as dataset_module
    import lean_dojo_v2.database.ingest as ingest_module

    parsed: list[str] = []
    readers = [(ingest_module, "read_json"), (dataset_module, "read_json")]
    readers += [(dataset_module, "read_theorems")]
    for module, name in readers:
        real = getattr(module, name)

        def counting(path, *args, _real=real, **kwargs):
            if Path(path).parent.name in ("random", "novel_premises"):
                parsed.append(f"{Path(path).parent.name}/{Path(path).name}")
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(module, name, counting)
    agent = HFAgent(_sft(tmp_path / "out"), database_path=tmp_path / "agent.sqlite")
    agent.setup_traced_dataset(sample)
    assert agent.database.stats()["theorems"] > 0
    assert parsed and sorted(parsed) == sorted(set(parsed)), parsed


def test_a_bad_record_deep_in_a_split_file_leaves_no_database(tmp_path, sample):
    """A record the database's reader refuses only when it gets there (the last of train.json):
    the database file this call made is removed again."""
    import json

    d = tmp_path / "dataset"
    shutil.copytree(sample, d, ignore=shutil.ignore_patterns("novel_premises"))
    train = d / "random" / "train.json"
    records = json.loads(train.read_text())
    records[-1]["traced_tactics"] = "not a list"
    train.write_text(json.dumps(records))
    agent = HFAgent(_sft(tmp_path / "out"), database_path=tmp_path / "db" / "agent.sqlite")
    with pytest.raises(LeanDojoError, match="train.json"):
        agent.setup_traced_dataset(d)
    assert not (tmp_path / "db").exists() and agent.repos == []
