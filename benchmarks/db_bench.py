"""Database benchmark: our SQLite ``DynamicDatabase`` against upstream lean-dojo-v2 1.0.9, same data.

The data: ``--repos`` repositories (default 100) of ``--theorems`` theorems each (default 1,000, so
100k in all), made by replicating the real LeanDojo Benchmark 4 records (../shared/data): each
repository gets its own url and a ``R<i>/`` prefix on every file path, and each copy of a record a
``_c<k>`` suffix on its name, so every theorem is distinct (the upstream deduplicates on file, name
and position when exporting). Goal text, tactics and premises stay real. One more repository of the
same shape is used for "add one".

Phases, each in a fresh subprocess (so its peak RSS is its own), for each side:

1. ``ingest_save``: a new database, add every repository, save (upstream: ``Repository.from_dict``
   on the dataset directory, ``add_repository``, ``to_json``; ours: ``add_repositories``, which
   reads the next dataset in one helper process while it writes the previous one, each repository
   committed on its own; the helper's peak RSS is added to ours). ``ingest_save_serial`` is ours
   with everything in one process (``add_repository`` in a loop), reported beside it.
2. ``reload``: open the saved database and list the repositories with their theorem counts
   (upstream: ``DynamicDatabase.from_json``).
3. ``add_one``: open the database, add one more repository, save.
4. ``export``: open the database and ``export_merged_data`` over every repository. The time is the
   export call; the time to open/load first is reported beside it.

Ours also adds the extra repository to an empty database (``add_one_empty``): the cost of adding a
repository depends on that repository, not on the database.

The upstream runs in its own virtual environment under the cache directory, created on first use:
``torch==2.13.0`` is installed first and pinned (any other torch spec pulls GBs of CUDA wheels), then
``lean-dojo-v2==1.0.9``. Only its ``DynamicDatabase`` is used. It raises at import unless
``GITHUB_ACCESS_TOKEN`` is set, and logs in to GitHub when the value is non-empty, so it is set to
the empty string. Prints one JSON object (also written to ``--out``).

    python benchmarks/db_bench.py [--repos 100] [--theorems 1000] [--skip-upstream]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
UPSTREAM_VERSION = "1.0.9"
TORCH_PIN = "torch==2.13.0"
TARGET_SPEEDUP = 5.0
TARGET_MEMORY = 3.0


def _peak_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# -- data -----------------------------------------------------------------------------------------


def make_data(shared: Path, work: Path, repos: int, per_repo: int) -> dict[str, object]:
    """``repos + 1`` LeanDojo dataset directories of replicated real records."""
    sys.path.insert(0, str(ROOT))
    from lean_dojo_v2.data import DatasetDir, Theorem, sample_dataset_path, write_dataset
    from lean_dojo_v2.data.jsonio import read_json

    records = read_json(shared / "leandojo_b4" / "random_test_records_1_100.json")
    corpus = list(DatasetDir(sample_dataset_path()).corpus_files())
    n_files = 0
    for r in range(repos + 1):
        url = f"https://github.com/bench-org/lean-repo-{r}"
        commit = f"{r:040x}"
        theorems = []
        for i in range(per_repo):
            d = dict(records[i % len(records)], url=url, commit=commit)
            d["file_path"] = f"R{r}/{d['file_path']}"
            d["full_name"] = f"{d['full_name']}_c{i // len(records)}"
            theorems.append(Theorem.from_dict(d))
        files = sorted({t.file_path for t in theorems})
        n_files += len(files)
        n = len(theorems)
        splits = {
            "train": theorems[: n * 8 // 10],
            "val": theorems[n * 8 // 10 : n * 9 // 10],
            "test": theorems[n * 9 // 10 :],
        }
        write_dataset(
            work / f"repo{r}",
            {"random": splits},
            corpus,
            files,
            {
                "from_repo": {"url": url, "commit": commit},
                "date_processed": f"2024-01-01T00:{r // 60:02d}:{r % 60:02d}",
            },
        )
    size = sum(p.stat().st_size for p in work.rglob("*") if p.is_file())
    return {
        "repositories": repos,
        "theorems_per_repository": per_repo,
        "theorems": repos * per_repo,
        "theorem_files_per_repository": n_files // (repos + 1),
        "premise_files_per_repository": len(corpus),
        "dataset_mib": round(size / 2**20, 1),
    }


# -- children -------------------------------------------------------------------------------------


def child_ours(phase: str, work: Path, repos: int) -> dict[str, object]:
    sys.path.insert(0, str(ROOT))
    from lean_dojo_v2.database import DynamicDatabase

    base = _peak_mib()
    db_path = work / "ours.sqlite"
    out: dict[str, object] = {"rss_after_import_mib": base}
    t0 = time.perf_counter()
    if phase in ("ingest_save", "ingest_save_serial"):
        for suffix in ("", "-wal", "-shm"):
            Path(str(db_path) + suffix).unlink(missing_ok=True)
        t0 = time.perf_counter()
        with DynamicDatabase(db_path) as db:
            # add_repositories reads the next dataset in a helper process while this one writes;
            # the serial variant reads and writes here, one repository after the other.
            db.add_repositories(
                [work / f"repo{r}" for r in range(repos)],
                workers=0 if phase == "ingest_save_serial" else None,
            )
            out["theorems"] = db.stats()["theorems"]
    elif phase == "reload":
        with DynamicDatabase(db_path) as db:
            infos = db.repositories()
            out["theorems"] = sum(i.total_theorems for i in infos)
    elif phase in ("add_one", "add_one_empty"):
        path = db_path if phase == "add_one" else work / "ours-empty.sqlite"
        with DynamicDatabase(path) as db:
            info = db.add_repository(work / f"repo{repos}")
            out["theorems_added"] = info.total_theorems
    elif phase == "export":
        with DynamicDatabase(db_path) as db:
            t_open = time.perf_counter() - t0
            t1 = time.perf_counter()
            result = db.export_merged_data(None, work / "ours-export")
            out["export_call_s"] = round(time.perf_counter() - t1, 3)
            out["open_s"] = round(t_open, 3)
            out["theorems"] = result["total_theorems"]
    out["seconds"] = round(time.perf_counter() - t0, 3)
    if phase == "export":
        out["seconds"] = out["export_call_s"]
    # Helper processes count too: their peak is added to ours (an upper bound of the total).
    children = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    out["peak_rss_mib"] = round(_peak_mib() + children, 1)
    if children:
        out["peak_rss_helper_mib"] = children
    return out


def child_upstream(phase: str, work: Path, repos: int) -> dict[str, object]:
    # Runs in the upstream venv: ``lean_dojo_v2`` here is upstream's package.
    import datetime

    from lean_dojo_v2.database.models import Repository

    from lean_dojo_v2.database import DynamicDatabase

    base = _peak_mib()
    json_path = str(work / "upstream.json")
    out: dict[str, object] = {"rss_after_import_mib": base}

    def repo(r: int) -> Repository:
        d = work / f"repo{r}"
        meta = json.loads((d / "metadata.json").read_text())
        return Repository.from_dict(
            {
                "url": meta["from_repo"]["url"],
                "name": "bench-org/" + meta["from_repo"]["url"].rsplit("/", 1)[-1],
                "commit": meta["from_repo"]["commit"],
                "lean_version": "v4.9.0",
                "lean_dojo_version": UPSTREAM_VERSION,
                "metadata": {
                    "date_processed": datetime.datetime.fromisoformat(meta["date_processed"])
                },
                "theorems_folder": str(d / "random"),
                "premise_files_corpus": str(d / "corpus.jsonl"),
                "files_traced": str(d / "traced_files.jsonl"),
            }
        )

    t0 = time.perf_counter()
    if phase == "ingest_save":
        db = DynamicDatabase(json_path=json_path)
        for r in range(repos):
            db.add_repository(repo(r))
        db.to_json(json_path)
        out["theorems"] = sum(x.total_theorems for x in db.repositories)
    elif phase == "reload":
        db = DynamicDatabase.from_json(json_path)
        out["theorems"] = sum(x.total_theorems for x in db.repositories)
    elif phase == "add_one":
        db = DynamicDatabase.from_json(json_path)
        db.add_repository(repo(repos))
        db.to_json(json_path)
        out["theorems_added"] = db.repositories[-1].total_theorems
    elif phase == "export":
        db = DynamicDatabase.from_json(json_path)
        out["open_s"] = round(time.perf_counter() - t0, 3)
        t1 = time.perf_counter()
        db.export_merged_data(db.repositories, work / "upstream-export")
        out["export_call_s"] = round(time.perf_counter() - t1, 3)
        out["theorems"] = sum(
            len(json.loads((work / "upstream-export" / "random" / f"{s}.json").read_text()))
            for s in ("train", "val", "test")
        )
        out["peak_rss_mib"] = _peak_mib()
        out["seconds"] = out["export_call_s"]
        return out
    out["seconds"] = round(time.perf_counter() - t0, 3)
    out["peak_rss_mib"] = _peak_mib()
    return out


# -- upstream environment -------------------------------------------------------------------------


def upstream_python(cache: Path) -> Path:
    """The upstream venv's interpreter, creating the venv on first use."""
    venv = cache / f"upstream-lean-dojo-v2-{UPSTREAM_VERSION}"
    py = venv / "bin" / "python"
    stamp = venv / ".installed"
    if stamp.exists() and py.exists():
        return py
    print(f"[db_bench] creating upstream venv in {venv} (once)", file=sys.stderr)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, TORCH_PIN], check=True)
    pins = venv / "constraints.txt"
    pins.write_text(TORCH_PIN + "\n")
    subprocess.run([*pip, "-c", str(pins), f"lean-dojo-v2=={UPSTREAM_VERSION}"], check=True)
    stamp.write_text(f"lean-dojo-v2=={UPSTREAM_VERSION} {TORCH_PIN}\n")
    return py


def run_child(
    python: Path, side: str, phase: str, work: Path, repos: int, timeout: float
) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["GITHUB_ACCESS_TOKEN"] = ""  # upstream requires the variable; empty avoids a GitHub login
    env["TOKENIZERS_PARALLELISM"] = "false"
    cmd = [
        str(python),
        str(Path(__file__).resolve()),
        "--child",
        side,
        phase,
        str(work),
        str(repos),
    ]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=out, stderr=err, text=True)
        hwm = 0.0  # the child's peak RSS as the kernel reports it, in case it must be stopped
        while True:
            try:
                proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                hwm = max(hwm, _vm_hwm_mib(proc.pid))
                if time.perf_counter() - t0 > timeout:
                    proc.kill()
                    proc.wait()
                    return {
                        "error": f"did not finish within {timeout:.0f} s (stopped)",
                        "seconds_at_least": round(time.perf_counter() - t0, 1),
                        "peak_rss_mib_at_least": round(hwm, 1),
                    }
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        tail = stderr.strip().splitlines()[-15:]
        return {"error": f"exit {proc.returncode}", "stderr": tail}
    result = json.loads(stdout.strip().splitlines()[-1])
    result["process_wall_s"] = round(time.perf_counter() - t0, 3)
    return result


def _vm_hwm_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def ratio(a: object, b: object) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0:
        return round(a / b, 2)
    return None


def best(runs: list[dict[str, object]]) -> dict[str, object]:
    """The fastest of repeated runs (the least disturbed by other load on the machine), with the
    largest peak RSS seen and every time for reference."""
    ok = [r for r in runs if "seconds" in r]
    if not ok:
        return runs[-1]
    fastest = dict(min(ok, key=lambda r: r["seconds"]))  # type: ignore[arg-type,return-value]
    fastest["peak_rss_mib"] = max(r["peak_rss_mib"] for r in ok)  # type: ignore[type-var]
    fastest["all_seconds"] = [r["seconds"] for r in ok]
    return fastest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=100)
    parser.add_argument("--theorems", type=int, default=1000, help="theorems per repository")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "lean_dojo_v2"
        / "bench",
        help="where the upstream virtual environment is kept",
    )
    parser.add_argument("--upstream-python", type=Path, help="use this interpreter for upstream")
    parser.add_argument("--skip-upstream", action="store_true")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of ingest/reload/add-one per side, alternating sides; the fastest counts "
        "(upstream's export, which takes tens of minutes, runs once)",
    )
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument(
        "--no-json-check",
        action="store_true",
        help="skip importing upstream's saved JSON into ours and writing it back",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10800.0,
        help="per phase, seconds (upstream's export of 100k theorems takes over an hour: its "
        "novel_premises split is quadratic); a phase stopped at the limit is reported as a "
        "lower bound, with the peak RSS reached",
    )
    parser.add_argument("--work", type=Path, help="working directory (default: a temporary one)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        side, phase, work, repos = args.child
        fn = child_ours if side == "ours" else child_upstream
        print(json.dumps(fn(phase, Path(work), int(repos))))
        return

    sides: dict[str, Path] = {"ours": Path(sys.executable)}
    if not args.skip_upstream:
        sides["upstream"] = args.upstream_python or upstream_python(args.cache)
    tmp = None
    if args.work:
        work = args.work
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="ldv2-db-bench-")
        work = Path(tmp.name)
    report: dict[str, object] = {}
    try:
        t0 = time.perf_counter()
        report["data"] = make_data(args.shared, work, args.repos, args.theorems)
        report["data"]["made_in_s"] = round(time.perf_counter() - t0, 1)  # type: ignore[index]

        def child(side: str, phase: str) -> dict[str, object]:
            print(f"[db_bench] {side}: {phase}", file=sys.stderr, flush=True)
            return run_child(sides[side], side, phase, work, args.repos, args.timeout)

        runs: dict[str, dict[str, list[dict[str, object]]]] = {side: {} for side in sides}
        for _ in range(max(1, args.repeat)):
            for side in sides:
                if side == "ours":
                    runs[side].setdefault("ingest_save_serial", []).append(
                        child(side, "ingest_save_serial")
                    )
                for phase in ("ingest_save", "reload", "add_one"):
                    runs[side].setdefault(phase, []).append(child(side, phase))
        runs["ours"]["add_one_empty"] = []
        for _ in range(max(1, args.repeat)):
            shutil.rmtree(work / "ours-empty.sqlite", ignore_errors=True)
            for suffix in ("", "-wal", "-shm"):
                Path(str(work / "ours-empty.sqlite") + suffix).unlink(missing_ok=True)
            runs["ours"]["add_one_empty"].append(child("ours", "add_one_empty"))
        if not args.skip_export:
            for side in sides:
                n = max(1, args.repeat) if side == "ours" else 1
                runs[side]["export"] = [child(side, "export") for _ in range(n)]
        results = {side: {ph: best(rs) for ph, rs in by.items()} for side, by in runs.items()}
        report.update(results)
        if "upstream" in results:
            ratios = {}
            for phase, u in results["upstream"].items():
                o = results["ours"][phase]
                speed = ratio(u.get("seconds", u.get("seconds_at_least")), o.get("seconds"))
                memory = ratio(
                    u.get("peak_rss_mib", u.get("peak_rss_mib_at_least")), o.get("peak_rss_mib")
                )
                ratios[phase] = {
                    "speedup": speed,
                    "speedup_is_lower_bound": "seconds_at_least" in u,
                    "memory_ratio": memory,
                    "memory_ratio_is_lower_bound": "peak_rss_mib_at_least" in u,
                    "memory_ratio_above_import": ratio(
                        _minus(u.get("peak_rss_mib"), u.get("rss_after_import_mib")),
                        _minus(o.get("peak_rss_mib"), o.get("rss_after_import_mib")),
                    ),
                    "meets_targets": bool(
                        speed is not None
                        and speed >= TARGET_SPEEDUP
                        and memory is not None
                        and memory >= TARGET_MEMORY
                    ),
                }
            report["ratios"] = ratios
            if not args.no_json_check and (work / "upstream.json").exists():
                report["upstream_json_round_trip"] = json_check(work)
        if "upstream" in results:
            o = results["ours"]["ingest_save_serial"]
            u = results["upstream"]["ingest_save"]
            report["ratios"]["ingest_save_serial"] = {  # type: ignore[index]
                "speedup": ratio(u.get("seconds"), o.get("seconds")),
                "memory_ratio": ratio(u.get("peak_rss_mib"), o.get("peak_rss_mib")),
                "note": "ours reading and writing in one process (add_repository in a loop)",
            }
        report["add_one_cost_independent_of_db_size"] = {
            "into_empty_db_s": results["ours"]["add_one_empty"].get("seconds"),
            "into_db_of_all_repositories_s": results["ours"]["add_one"].get("seconds"),
        }
        report["targets"] = {"speedup": TARGET_SPEEDUP, "memory_ratio": TARGET_MEMORY}
        report["machine"] = {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "load_average_at_end": os.getloadavg(),
        }
    finally:
        if tmp is not None:
            tmp.cleanup()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


def json_check(work: Path) -> dict[str, object]:
    """Import the JSON upstream saved (all repositories) into a fresh database of ours, write it
    back in the upstream format and compare the bytes."""
    sys.path.insert(0, str(ROOT))
    from lean_dojo_v2.database import DynamicDatabase

    src = work / "upstream.json"
    dst = work / "ours-roundtrip.json"
    db_path = work / "ours-import.sqlite"
    t0 = time.perf_counter()
    with DynamicDatabase(db_path) as db:
        added = db.import_json(src)
        t1 = time.perf_counter()
        db.export_json(dst)
        t2 = time.perf_counter()
    same = src.read_bytes() == dst.read_bytes()
    return {
        "repositories": len(added),
        "theorems": sum(r.total_theorems for r in added),
        "json_mib": round(src.stat().st_size / 2**20, 1),
        "import_s": round(t1 - t0, 2),
        "export_s": round(t2 - t1, 2),
        "byte_identical": same,
    }


def _minus(a: object, b: object) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return round(a - b, 1)
    return None


if __name__ == "__main__":
    main()
