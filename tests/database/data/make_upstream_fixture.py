"""Regenerate ``upstream_dynamic_database.json`` with the real upstream code (lean-dojo-v2 1.0.9).

The fixture is what upstream's ``DynamicDatabase.to_json`` writes for two small repositories made
from the real LeanDojo Benchmark 4 records (20 each; in the second, two proofs are replaced by
``sorry`` and one of them is then marked proved with ``change_sorry_to_proven``), after
``sort_repositories_by_difficulty`` has filled in ``difficulty_rating``.

    python tests/database/data/make_upstream_fixture.py --upstream-python /path/to/venv/bin/python

Stage 1 (this interpreter, our package) writes the two dataset directories; stage 2 runs in the
upstream virtual environment (which has its own ``lean_dojo_v2``, so our checkout must not be on
its path) and writes the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
# The real records bundled with the tests (a copy of shared/data/leandojo_b4).
RECORDS = ROOT / "tests" / "data" / "real" / "leandojo_b4" / "random_test_records_1_100.json"
OUT = HERE / "upstream_dynamic_database.json"

REPOS = [
    ("https://github.com/example-a/lean-a", "a" * 40, "2024-05-01T10:00:00", slice(0, 20)),
    ("https://github.com/example-b/lean-b", "b" * 40, "2024-06-01T10:00:00", slice(20, 40)),
]

STAGE2 = r"""
import datetime, json, sys
from pathlib import Path
from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.database.models import Repository

work, out = Path(sys.argv[1]), sys.argv[2]
spec = json.loads((work / "spec.json").read_text())
db = DynamicDatabase(json_path=out)
for r in spec:
    d = work / r["dir"]
    repo = Repository.from_dict({
        "url": r["url"], "name": "/".join(r["url"].split("/")[-2:]), "commit": r["commit"],
        "lean_version": "v4.9.0", "lean_dojo_version": "1.0.9",
        "metadata": {"date_processed": datetime.datetime.fromisoformat(r["date"])},
        "theorems_folder": str(d / "random"), "premise_files_corpus": str(d / "corpus.jsonl"),
        "files_traced": str(d / "traced_files.jsonl"),
    })
    if repo.sorry_theorems_unproved:
        repo.change_sorry_to_proven(repo.sorry_theorems_unproved[0], str(work / "log" / "proof_log.txt"))
    db.add_repository(repo)
db.sort_repositories_by_difficulty()
db.to_json(out)
"""


def stage1(work: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from lean_dojo_v2.data import DatasetDir, Theorem, sample_dataset_path, write_dataset

    records = json.loads(RECORDS.read_text())
    corpus = list(DatasetDir(sample_dataset_path()).corpus_files())
    for k, (url, commit, _date, part) in enumerate(REPOS):
        recs = [dict(r, url=url, commit=commit) for r in records[part]]
        if k == 1:  # two theorems whose proof is only `sorry`
            for r in [r for r in recs if r["traced_tactics"]][:2]:
                tac = dict(r["traced_tactics"][0])
                tac.update(tactic="sorry", annotated_tactic=["sorry", []], state_after="no goals")
                r["traced_tactics"] = [tac]
        theorems = [Theorem.from_dict(r) for r in recs]
        used = {a.def_path for t in theorems for a in t.annotations}
        write_dataset(
            work / f"repo{k}",
            {"random": {"train": theorems}},
            [f for f in corpus if f.path in used],
            sorted({t.file_path for t in theorems}),
            {"from_repo": {"url": url, "commit": commit}},
        )
    spec = [
        {"dir": f"repo{k}", "url": url, "commit": commit, "date": date}
        for k, (url, commit, date, _) in enumerate(REPOS)
    ]
    (work / "spec.json").write_text(json.dumps(spec))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream-python", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        stage1(work)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["GITHUB_ACCESS_TOKEN"] = ""  # upstream requires the variable; empty avoids a login
        subprocess.run(
            [args.upstream_python, "-c", STAGE2, str(work), str(OUT)],
            cwd=work,
            env=env,
            check=True,
        )
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
