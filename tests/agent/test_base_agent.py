"""BaseAgent end to end on the bundled real sample, with a custom subclass (upstream LeanDojo-v2's way to
write an agent: override ``_get_build_deps`` and ``_setup_prover``) whose prover proposes the
recorded tactics: targets, the replay backend and its notice, the re-check, recording,
write-back into a working copy (every other byte unchanged, the diff applies with ``git apply``),
the placeholder triage, and bad input as one-line errors with nothing written."""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.agent import BaseAgent, NoRepositoryError, ProveReport
from lean_dojo_v2.data.dataset import load_theorems
from lean_dojo_v2.prover import SearchConfig

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


class OracleAgent(BaseAgent):
    """A custom agent: no tracing dependencies, the recorded-tactics generator as prover."""

    def __init__(self, data: Path, **kwargs) -> None:
        super().__init__(**kwargs)
        self.data = data

    def _get_build_deps(self) -> bool:
        return False

    def _setup_prover(self) -> None:
        from prover.pipeline_oracle import OracleGenerator

        self.prover = OracleGenerator(str(self.data))


def _git(args: list[str], cwd: Path) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_COMMITTER_EMAIL": "t@t", "PATH": os.environ["PATH"], "HOME": str(cwd)}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


@pytest.fixture
def sorry_repo(tmp_path: Path, sample: Path) -> tuple[Path, list]:
    """A git repository with the sample's first three tactic-proved theorems as ``sorry`` at
    their recorded lines (CRLF, a tab and non-ASCII text in a comment of one file), and a
    placeholder ``def`` that the third theorem's statement uses."""
    theorems = [t for t in load_theorems(sample) if t.traced_tactics][:3]
    repo = tmp_path / "user_repo"
    by_file: dict[str, list] = {}
    for t in theorems:
        by_file.setdefault(t.file_path, []).append(t)
    placeholder_user = theorems[2]
    for rel, ts in by_file.items():
        lines = ["-- \tcommentaire non-ASCII: ∀ ε > 0, ‖x‖ ≤ ε"] + [""] * (
            max(t.start.line_nb for t in ts) + 1
        )
        for t in ts:
            if t is placeholder_user:
                statement = "rate_placeholder = rate_placeholder"
                lines[t.start.line_nb - 2] = "def rate_placeholder : Nat := sorry"
            else:
                statement = "True"
            lines[t.start.line_nb - 1] = f"theorem {_short(t.full_name)} : {statement} := sorry"
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        newline = "\r\n" if rel == theorems[0].file_path else "\n"
        path.write_bytes((newline.join(lines) + newline).encode("utf-8"))
    _git(["init", "-q"], repo)
    _git(["add", "."], repo)
    _git(["commit", "-q", "-m", "sorries"], repo)
    return repo, theorems


def _agent(tmp_path: Path, sample: Path, **kwargs) -> OracleAgent:
    config = SearchConfig(num_samples=4, max_expansions=30, timeout=60)
    return OracleAgent(
        sample,
        database_path=tmp_path / "db.sqlite",
        search_config=config,
        quiet=True,
        progress=False,
        **kwargs,
    )


def test_custom_agent_proves_the_test_split_of_a_dataset_without_sorry(tmp_path, sample):
    agent = _agent(tmp_path, sample)
    info = agent.setup_traced_dataset(sample)
    assert agent.repos == [info] and info.num_sorry_theorems_unproved == 0
    report = agent.prove()
    assert isinstance(report, ProveReport)
    d = report.to_dict()
    assert d["backend"] == "replay" and "only tactics recorded" in d["backend_notice"]
    assert d["target"] == "test" and d["attempted"] >= 1 and d["left_out"] >= 0
    assert d["proved"] == d["attempted"]  # the oracle proposes the recorded tactics
    for o in report.outcomes:
        assert o.backend == "replay" and o.checked_by == "replay" and o.proof
    json.dumps(d)  # JSON-ready
    # recorded in the database (replayed proofs are recorded unverified)
    proofs = [p for t in agent.database.theorems(info) for p in agent.database.proofs(t)]
    assert len(proofs) == report.proved and all(not p.verified for p in proofs)
    assert d["recorded"]["recorded"] == report.proved and d["recorded"]["not_in_db"] == []
    # one theorem by name
    name = report.outcomes[0].theorem
    outcome = agent.prove_theorem(name)
    assert outcome.proved and outcome.theorem == name
    agent.close()


def test_sorry_theorems_are_proved_written_back_and_the_placeholder_user_is_not(
    tmp_path, sample, sorry_repo
):
    repo, theorems = sorry_repo
    before = {p: p.read_bytes() for p in repo.rglob("*.lean")}
    head = _git(["rev-parse", "HEAD"], repo)
    agent = _agent(tmp_path, sample)
    info = agent.setup_traced_dataset(sample, source_dir=repo)
    assert info.num_sorry_theorems_unproved == 3
    report = agent.prove()
    assert report.target == "sorry" and report.attempted == 3 and report.proved == 3
    dep = [o for o in report.outcomes if o.triage == "depends_on_sorry"]
    assert [o.theorem for o in dep] == [theorems[2].full_name]
    assert dep[0].depends_on == ["rate_placeholder"] and not dep[0].written_back
    assert "rate_placeholder" in dep[0].reason and "placeholder" in dep[0].reason
    written = {o.theorem for o in report.outcomes if o.written_back}
    assert written == {theorems[0].full_name, theorems[1].full_name}
    assert report.to_dict()["depends_on_sorry"] == [theorems[2].full_name]
    # the user's checkout is untouched
    assert {p: p.read_bytes() for p in repo.rglob("*.lean")} == before
    assert _git(["rev-parse", "HEAD"], repo) == head and not _git(["status", "--porcelain"], repo)
    wb = next(iter(report.write_back.values()))
    workdir = Path(wb["workdir"])
    diff = Path(wb["diff_file"]).read_bytes()
    # every other byte unchanged: only the two theorems' proofs differ, line by line
    for path, old in before.items():
        new = (workdir / path.relative_to(repo)).read_bytes()
        a, b = old.splitlines(True), new.splitlines(True)
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            # only a written theorem's own line changed (`:= sorry` → `:= by` + its proof)
            assert tag == "replace" and i2 == i1 + 1, (tag, a[i1:i2])
            assert a[i1].rstrip(b"\r\n").endswith(b": True := sorry")
        if path.read_bytes().count(b"\r\n"):
            assert new.count(b"\n") == new.count(b"\r\n")  # CRLF stays CRLF
    # the diff applies to a pristine clone with `git apply` and gives the working copy's files
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    subprocess.run(["git", "apply", "-"], input=diff, cwd=clone, check=True)
    for path in before:
        rel = path.relative_to(repo)
        assert (clone / rel).read_bytes() == (workdir / rel).read_bytes()
    # the proved sorries are sorry_proved now: the next prove() goes to the test split
    again = agent.prove(write_back=False)
    assert again.target == "test" and again.write_back == {}
    agent.close()


def test_include_depends_on_sorry_writes_the_placeholder_user(tmp_path, sample, sorry_repo):
    repo, theorems = sorry_repo
    agent = _agent(tmp_path, sample)
    agent.setup_traced_dataset(sample, source_dir=repo)
    report = agent.prove(include_depends_on_sorry=True, branch="ldv2-proofs")
    assert {o.theorem for o in report.outcomes if o.written_back} == {t.full_name for t in theorems}
    wb = next(iter(report.write_back.values()))
    assert wb["branch"] == "ldv2-proofs" and wb["commit"]
    agent.close()


def test_bad_write_back_arguments_are_refused_before_the_search(tmp_path, sample, sorry_repo):
    from lean_dojo_v2.prover.writeback import WriteBackError

    repo, _ = sorry_repo
    agent = _agent(tmp_path, sample)
    agent.setup_traced_dataset(sample, source_dir=repo)
    agent._setup_prover = lambda: pytest.fail("the prover was built")  # noqa: E731
    with pytest.raises(WriteBackError):
        agent.prove(in_place=True, branch="x")
    agent.close()


def test_calls_before_any_repository_are_one_line_errors_and_create_nothing(tmp_path, sample):
    agent = _agent(tmp_path, sample)
    for call in (agent.train, agent.prove, agent.evaluate):
        with pytest.raises(NoRepositoryError, match="setup_traced_dataset"):
            call()
    assert not (tmp_path / "db.sqlite").exists()


def test_empty_and_missing_datasets_are_refused_and_nothing_is_written(tmp_path, sample):
    from lean_dojo_v2.errors import DatasetNotFoundError, EmptyDatasetError

    empty = tmp_path / "empty"
    for strategy in ("random", "novel_premises"):
        (empty / strategy).mkdir(parents=True)
        for split in ("train", "val", "test"):
            (empty / strategy / f"{split}.json").write_text("[]")
    (empty / "corpus.jsonl").write_text("")
    agent = _agent(tmp_path, sample)
    with pytest.raises(EmptyDatasetError, match="no theorem"):
        agent.setup_traced_dataset(empty)
    with pytest.raises(DatasetNotFoundError):
        agent.setup_traced_dataset(tmp_path / "nowhere")
    assert not (tmp_path / "db.sqlite").exists() and agent.repos == []


def test_a_dataset_the_database_takes_is_taken_and_a_missing_part_is_named(tmp_path, sample):
    """One strategy's split files and the corpus are what the database needs (the bundled
    miniF2F set has no ``novel_premises``); without the corpus, the error names it and nothing
    is written."""
    import shutil

    from lean_dojo_v2.errors import IncompleteDatasetError
    from lean_dojo_v2.quickstart.minif2f import bundled_dataset_path

    agent = _agent(tmp_path, sample)
    info = agent.setup_traced_dataset(bundled_dataset_path())
    assert info.url == "https://github.com/rah4927/lean-dojo-mew"
    assert agent.database.stats()["theorems"] == 56
    agent.close()

    broken = tmp_path / "broken"
    shutil.copytree(bundled_dataset_path(), broken)
    (broken / "corpus.jsonl").unlink()
    other = _agent(tmp_path / "other", sample)
    with pytest.raises(IncompleteDatasetError, match="corpus.jsonl"):
        other.setup_traced_dataset(broken)
    assert not (tmp_path / "other" / "db.sqlite").exists() and other.repos == []


def test_nonexistent_repository_is_one_line_and_nothing_is_written(tmp_path, sample, monkeypatch):
    from lean_dojo_v2.lean_dojo.errors import RepoNotFoundError

    agent = _agent(tmp_path, sample)
    monkeypatch.setattr(
        BaseAgent, "_require_tools", lambda self, what: None
    )  # as if Lean were here
    with pytest.raises(RepoNotFoundError) as info:
        agent.setup_github_repository(str(tmp_path / "no-such-repo"), "0" * 40)
    assert "\n" not in str(info.value)
    with pytest.raises(RepoNotFoundError):
        agent.setup_local_repository(tmp_path / "no-such-dir")
    assert not (tmp_path / "db.sqlite").exists() and agent.repos == []


SEED = """
from lean_dojo_v2.agent.hf_agent import HFAgent
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer
trainer = SFTTrainer(model_name="deepseek-ai/DeepSeek-Prover-V2-7B", output_dir="outputs-deepseek",
                     epochs_per_repo=1, batch_size=2, lr=2e-5)
agent = HFAgent(trainer=trainer)
agent.setup_github_repository(url="https://github.com/durant42040/lean4-example", commit="005de00d03f1aaa32cb2923d5e3cbaf0b954a192")
agent.train()
agent.prove()
"""


def test_the_seed_snippet_without_lean_ends_in_one_line_naming_doctor(tmp_path):
    """Run as written, as a script, on a PATH without elan/lean (and no network needed): one
    line on stderr naming `lean-dojo-v2 doctor` and setup_traced_dataset, no traceback, nothing
    cloned or written."""
    script = tmp_path / "seed.py"
    script.write_text(SEED)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    git = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    if git:
        (bindir / "git").symlink_to(git)
    env = {
        "PATH": str(bindir),
        "HOME": str(tmp_path / "home"),
        "ELAN_HOME": str(tmp_path / "no-elan"),
        "RAID_DIR": str(tmp_path / "raid"),
        "LEAN_DOJO_V2_CACHE_DIR": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("lean-dojo-v2: error:")
    assert "lean-dojo-v2 doctor" in err and "setup_traced_dataset" in err and "Lean" in err
    # the next stop said at once: the snippet's 7B model is not cached here, and the way round it
    assert "DeepSeek-Prover-V2-7B is not in the Hugging Face cache" in err
    assert "model_name=None, lora_config=True" in err and "minutes on 2 CPU cores" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "seed.py"]


def _hub_cache_with(cache: Path, repo_id: str) -> None:
    """The Hugging Face cache layout holding ``repo_id`` (what ``hf download`` leaves)."""
    folder = cache / ("models--" + repo_id.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("0" * 40)
    (folder / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (folder / "snapshots" / ("0" * 40) / "config.json").write_text("{}")


def test_the_missing_lean_line_names_the_offline_model_only_when_the_snippets_is_not_cached(
    tmp_path, monkeypatch
):
    import huggingface_hub.constants

    from lean_dojo_v2.agent import HFAgent
    from lean_dojo_v2.errors import LeanNotFoundError
    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    monkeypatch.setenv("HOME", str(tmp_path))
    cache = tmp_path / "hub"
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    model = "deepseek-ai/DeepSeek-Prover-V2-7B"
    url = "https://github.com/durant42040/lean4-example"

    def message(model_name):
        trainer = SFTTrainer(model_name=model_name, output_dir=tmp_path / "out")
        agent = HFAgent(trainer=trainer, database_path=tmp_path / "db.sqlite")
        with pytest.raises(LeanNotFoundError) as info:
            agent.setup_github_repository(url=url, commit="0" * 40)
        return str(info.value)

    assert "not in the Hugging Face cache" in message(model)
    _hub_cache_with(cache, model)
    cached = message(model)
    assert "lean-dojo-v2 doctor" in cached and "Hugging Face cache" not in cached
    assert "Hugging Face cache" not in message(None)  # the bundled model needs no look-up
    assert not (tmp_path / "db.sqlite").exists()


@pytest.mark.slow  # upstream LeanDojo-v2's settings as written: a whole epoch and the default search budget
def test_the_seed_snippet_with_a_traced_dataset_trains_and_proves(tmp_path, tiny_causal):
    """The quickstart snippet with its two offline substitutions (a model that is here, the traced
    dataset instead of the GitHub repository), run as a script: it trains and proves."""
    script = SEED.replace('"deepseek-ai/DeepSeek-Prover-V2-7B"', repr(str(tiny_causal)))
    script = script.replace(
        'agent.setup_github_repository(url="https://github.com/durant42040/lean4-example", '
        'commit="005de00d03f1aaa32cb2923d5e3cbaf0b954a192")',
        "from lean_dojo_v2.data import sample_dataset_path\n"
        "agent.setup_traced_dataset(sample_dataset_path())",
    )
    script = script.replace("agent.prove()", "print(agent.prove().to_dict()['backend'])")
    assert script.count("setup_traced_dataset") == 1 and str(tiny_causal) in script
    (tmp_path / "seed.py").write_text(script)
    env = {**os.environ, "RAID_DIR": str(tmp_path / "raid"), "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "seed.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "replay"
    assert "not trained yet" not in proc.stderr  # train() ran before prove()
    assert (tmp_path / "outputs-deepseek" / "model.safetensors").is_file()  # full fine-tuning
    assert "HFAgent: proved" in proc.stderr


def test_a_script_with_a_bad_agent_argument_ends_in_one_line(tmp_path):
    """Checked in the constructor (here: a trainer without output_dir), still one line."""
    (tmp_path / "bad.py").write_text(
        "from lean_dojo_v2.agent import HFAgent\n"
        "class T:\n    def train(self):\n        pass\n"
        "HFAgent(trainer=T())\n"
    )
    env = {**os.environ, "RAID_DIR": str(tmp_path / "raid"), "PYTHONPATH": str(ROOT)}
    env.pop("LEAN_DOJO_V2_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "bad.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("lean-dojo-v2: error:") and "output_dir" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    env["LEAN_DOJO_V2_DEBUG"] = "1"  # the traceback, when asked for
    proc = subprocess.run(
        [sys.executable, "bad.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" in proc.stderr and "AgentConfigError" in proc.stderr


class ParallelOracleAgent(OracleAgent):
    """The custom agent with a picklable prover factory: it can prove in worker processes."""

    def _prover_factory(self):
        from prover.pipeline_oracle import OracleSpec

        return OracleSpec(str(self.data))


def _spy_backends(monkeypatch) -> list[tuple[str, int]]:
    import lean_dojo_v2.prover.parallel as parallel

    seen: list[tuple[str, int]] = []
    real = parallel.prove_theorems

    def spy(*args, **kwargs):
        seen.append((kwargs["backend"], kwargs["workers"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel, "prove_theorems", spy)
    return seen


def test_workers_prove_in_processes_what_one_proves_inline(tmp_path, sample, monkeypatch):
    seen = _spy_backends(monkeypatch)
    one = _agent(tmp_path / "one", sample)
    one.setup_traced_dataset(sample)
    inline = one.prove(split="train", limit=4, write_back=False)
    two = ParallelOracleAgent(
        sample,
        database_path=tmp_path / "two" / "db.sqlite",
        search_config=SearchConfig(num_samples=4, max_expansions=30, timeout=60),
        quiet=True,
        progress=False,
        workers=2,
    )
    two.setup_traced_dataset(sample)
    par = two.prove(split="train", limit=4, write_back=False)
    assert seen == [("inline", 1), ("process", 2)]
    assert two.prover is None  # the model lives in the workers only
    assert par.proved >= 2 and par.proved == inline.proved
    assert [(o.theorem, o.status, o.proof, o.checked_by) for o in par.outcomes] == [
        (o.theorem, o.status, o.proof, o.checked_by) for o in inline.outcomes
    ]
    assert par.recorded == inline.recorded  # re-checked and recorded in this process
    one.close()
    two.close()


def test_an_agent_without_a_factory_proves_inline_and_says_so(tmp_path, sample, monkeypatch):
    seen = _spy_backends(monkeypatch)
    agent = _agent(tmp_path, sample, workers=3)
    agent.setup_traced_dataset(sample)
    report = agent.prove(split="train", limit=2, write_back=False)
    assert seen == [("inline", 1)]
    assert any("workers=3 ignored" in n for n in report.notes)
    # one theorem: no processes to start, nothing to say
    seen.clear()
    one = ParallelOracleAgent(sample, database_path=tmp_path / "db.sqlite", quiet=True, workers=2)
    one.setup_traced_dataset(sample)
    single = one.prove(split="train", limit=1, write_back=False)
    assert seen == [("inline", 1)] and not single.notes
    agent.close()
    one.close()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_workers_must_be_a_whole_number_of_at_least_one(tmp_path, sample, bad):
    from lean_dojo_v2.agent import AgentConfigError

    with pytest.raises(AgentConfigError, match="workers"):
        _agent(tmp_path, sample, workers=bad)


def test_prove_dataset_proves_a_split_as_it_is_and_records_nothing(tmp_path, sample):
    """A benchmark's own test split (not the agent's export of it), through the same pipeline:
    re-checked, nothing recorded, no repository needed."""
    from lean_dojo_v2.data.dataset import DatasetDir
    from lean_dojo_v2.errors import DatasetNotFoundError

    agent = _agent(tmp_path, sample)
    report = agent.prove_dataset(sample, limit=2)
    expected = [t.full_name for t in DatasetDir(sample).theorems("random", "test")]
    startable = [t for t in DatasetDir(sample).theorems("random", "test") if t.traced_tactics]
    assert [o.theorem for o in report.outcomes] == [t.full_name for t in startable[:2]]
    assert set(report.proofs) <= set(expected) and report.proved == 2
    assert all(o.checked_by == "replay" and o.repository == str(sample) for o in report.outcomes)
    assert report.target == "test" and report.left_out == len(expected) - len(startable)
    assert report.recorded is None and report.write_back == {}
    assert not (tmp_path / "db.sqlite").exists()  # nothing recorded: the database never opened
    with pytest.raises(DatasetNotFoundError):
        agent.prove_dataset(tmp_path / "nowhere")


def test_database_repositories_become_the_agents(tmp_path, sample):
    from lean_dojo_v2.database import DynamicDatabase
    from lean_dojo_v2.database.errors import DatabaseNotFoundError
    from lean_dojo_v2.errors import EmptyDatasetError

    with pytest.raises(DatabaseNotFoundError):
        _agent(tmp_path / "none", sample).add_database_repositories()
    assert not (tmp_path / "none" / "db.sqlite").exists()
    DynamicDatabase(tmp_path / "empty.sqlite").close()
    empty = OracleAgent(sample, database_path=tmp_path / "empty.sqlite", quiet=True)
    with pytest.raises(EmptyDatasetError, match="db add"):
        empty.add_database_repositories()
    with DynamicDatabase(tmp_path / "db.sqlite") as db:
        first = db.add_repository(sample)
        second = db.add_repository(sample, url="https://github.com/example/other", commit="c" * 40)
    agent = _agent(tmp_path, sample)
    infos = agent.add_database_repositories()
    assert {(i.url, i.commit) for i in infos} == {(r.url, r.commit) for r in (first, second)}
    assert agent.repos == infos
    agent.add_database_repositories()  # again: no repository twice
    assert len(agent.repos) == 2
    agent.close()
