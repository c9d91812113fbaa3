"""Proving in worker processes, the way ReProver's ``prover/evaluate.py --num-workers N`` does
(a Dojo per theorem inside each worker, ``additional_imports=[module]`` with ``module`` None,
results sent back pickled), written against LeanDojo v1's API only. The tests run it unchanged
through ``python -m lean_dojo_v2.v1 --dataset D``: the workers are told nothing, so they must get
``lean_dojo`` and the dataset from the run.

Usage: v1_workers.py THEOREM.json [--ray]

THEOREM.json: a LeanDojo theorem record plus ``"tactic"``, a tactic that proves it. Prints one
line per place the theorem was proved: the process itself, a multiprocessing *spawn* worker, a
``subprocess`` child and (``--ray``) a Ray actor, each with the result's type and the backend.
"""

import json
import multiprocessing
import subprocess
import sys

import lean_dojo
from lean_dojo import Dojo, LeanGitRepo, Theorem


def prove(record):
    repo = LeanGitRepo(record["url"], record["commit"])
    thm = Theorem(repo, record["file_path"], record["full_name"])
    with Dojo(thm, 60, additional_imports=[None]) as (dojo, init):
        return dojo.run_tac(init, record["tactic"]), dojo.backend


def show(where, outcome):
    result, backend = outcome
    # The result came back pickled: it is still one of v1's results.
    assert isinstance(result, (lean_dojo.ProofFinished, lean_dojo.TacticState)), result
    print(where, type(result).__name__, backend, flush=True)


class Prover:
    """ReProver's ``ProverActor``: proves inside a Ray actor."""

    def prove(self, record):
        return prove(record)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        record = json.load(f)
    if "--child" in sys.argv:
        show("subprocess", prove(record))
        return
    show("main", prove(record))
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        show("spawn", pool.map(prove, [record])[0])
    child = subprocess.run(
        [sys.executable, __file__, sys.argv[1], "--child"], capture_output=True, text=True
    )
    print(child.stdout.strip() or child.stderr, flush=True)
    if "--ray" in sys.argv:
        import ray

        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
        try:
            actor = ray.remote(Prover).remote()
            show("ray", ray.get(actor.prove.remote(record)))
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
