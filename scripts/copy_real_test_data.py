"""Regenerate ``tests/data/real`` (the real Lean data the test suite reads) from ``../shared/data``.

Run from the repository root:  python scripts/copy_real_test_data.py [--shared ../shared/data] [--check]

The tests never need this script or ``../shared/data``: the trimmed copy is committed. Every file is
copied byte for byte; jsonl files keep only the listed lines (0-based line numbers, in order); the
layout under ``tests/data/real`` is the layout under ``shared/data``. The hand-written ``SOURCE``
files there (origin, commit, licence, what was kept) are not touched; keep them in step with the
lists below. ``--check`` compares the copy with the source and writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO_ROOT.parent / "shared" / "data"
DEFAULT_OUT = REPO_ROOT / "tests" / "data" / "real"

PUTNAM = "prover_benchmarks/putnambench_lean4"
KIMINA = "minif2f_proofs/kimina_prover_preview"

# Whole files.
WHOLE = [
    "leandojo_b4/random_test_records_1_100.json",
    "leandojo_b4/metadata.json",
    "minictx/derived/minif2f_test_traced_tactics.json",
    "minictx/data/v1/miniF2F_test_state_prediction.jsonl",
    f"{PUTNAM}/LICENSE",
    f"{PUTNAM}/lean-toolchain",
    f"{PUTNAM}/lake-manifest.json",
    f"{KIMINA}/LICENSE",
    f"{KIMINA}/lean-toolchain",
    f"{KIMINA}/lake-manifest.json",
]

# PutnamBench problems: every file with a helper definition, a pattern match, a string, an
# instance, a structure, an inductive, a `set_option` or a `variable`; those the tests name; every
# 8th file with a character outside the BMP; every 12th file of the sorted listing.
PUTNAM_PROBLEMS = """
1962_a1 1962_a2 1962_a5 1963_a3 1963_b5 1964_a5 1965_a5 1966_a3 1966_a5 1967_a5 1968_a5 1969_b1
1969_b5 1970_b3 1971_b3 1972_b6 1974_a4 1975_a5 1976_b1 1976_b2 1977_b5 1978_a4 1978_b6 1980_a3
1980_a4 1981_b1 1982_a3 1982_b4 1984_a3 1984_a6 1985_b1 1986_b2 1986_b4 1987_b3 1988_b3 1989_a6
1989_b2 1989_b6 1991_a3 1992_a4 1993_a5 1994_b1 1995_a2 1995_b1 1996_b4 1997_b1 1997_b5 1998_a3
1999_a1 1999_a4 2000_a6 2001_b4 2001_b6 2003_a2 2004_a3 2005_a4 2006_b1 2007_b2 2008_b1 2008_b3
2008_b6 2009_b3 2009_b4 2010_a6 2010_b4 2011_b4 2012_b5 2014_a1 2014_b1 2015_a2 2015_b5 2016_a2
2016_b2 2017_a3 2018_a6 2019_b1 2020_b4 2021_b5 2022_b3 2022_b6 2023_a5 2023_b6 2024_a6 2025_a1
2025_a3 2025_a5 2025_a6 2025_b5
""".split()

# Kimina-Prover proofs: every file with a line comment, an `open … in`, a `lemma`, several
# theorems, a preimage `⁻¹'` or no `set_option`; every 10th of the others.
KIMINA_SRC = """
aime_1983_p1 aime_1983_p3 aime_1990_p4 aime_1991_p9 aime_1997_p9 algebra_9onxpypzleqsum2onxpy
algebra_absxm1pabsxpabsxp1eqxp2_0leqxleq1 algebra_apbon2pownleqapownpbpowon2
algebra_others_exirrpowirrrat algebra_sqineq_unitcircatbpabsamblt1 amc12_2001_p21 amc12a_2002_p13
amc12a_2002_p6 amc12a_2003_p5 amc12a_2021_p9 amc12b_2020_p21 amc12b_2021_p1 amc12b_2021_p4
induction_11div10tonmn1ton mathd_algebra_137 mathd_algebra_17 mathd_algebra_170 mathd_algebra_184
mathd_algebra_196 mathd_algebra_215 mathd_algebra_276 mathd_algebra_289 mathd_algebra_332
mathd_algebra_392 mathd_algebra_412 mathd_algebra_484 mathd_numbertheory_127
mathd_numbertheory_185 mathd_numbertheory_227 mathd_numbertheory_235 mathd_numbertheory_314
mathd_numbertheory_427 mathd_numbertheory_541 mathd_numbertheory_559 mathd_numbertheory_582
mathd_numbertheory_85 numbertheory_aoddbdiv4asqpbsqmod8eq1 numbertheory_x5neqy2p4
""".split()
KIMINA_ADDED = """
aime_1995_p7 algebra_amgm_sum1toneqn_prod1tonleq1 algebra_apbmpcneq0_aeq0anbeq0anceq0
algebra_ineq_nto1onlt2m1on algebra_sum1onsqrt2to1onsqrt10000lt198 amc12_2001_p5 amc12a_2019_p12
amc12a_2021_p19 amc12a_2021_p22 imo_1965_p2 imo_1969_p2 imo_1992_p1 imo_2019_p1
induction_pord1p1on2powklt5on2 induction_sumkexp3eqsumksq mathd_algebra_320 mathd_numbertheory_552
numbertheory_2pownm1prime_nprime numbertheory_3pow2pownm1mod2pownp3eq2pownp2
numbertheory_fxeq4powxp6powxp9powx_f2powmdvdf2pown
""".split()

# miniCTX theorems in file context: 0-based line numbers kept from each jsonl.
MINICTX_LINES = {
    # Walk.isPath_of_length_eq_dist, isPathConnected_compl_of_isPathConnected_compl_zero (non-BMP),
    # the unnamed `instance (priority := 100)`, ext_iff_mulSupport, comp (a short name),
    # covolume_eq_measure_fundamentalDomain, exists_leftFraction₂.
    "minictx/data/minictx/mathlib.jsonl": [10, 13, 17, 23, 28, 37, 45],
    # Function.invFun_comp' (no namespace), SciLean.Rand.reparameterize (`sorry_proof`),
    # SciLean.Distribution.extAction_iteD' (`sorry` in `--` comments),
    # SciLean.SmoothLinearMap.indextype_sum_apply (the real `instance … := sorry`).
    "minictx/data/minictx/scilean.jsonl": [0, 2, 29, 42],
    # measureEntropy_inv (no namespace), ProbabilityTheory.kernel.entropy_inv (nested namespaces).
    "minictx/data/minictx/pfr_cross.jsonl": [0, 2],
}


def planned() -> dict[str, list[int] | None]:
    """Relative path → the jsonl lines to keep (None: the whole file)."""
    plan: dict[str, list[int] | None] = {path: None for path in WHOLE}
    plan.update({f"{PUTNAM}/src/putnam_{p}.lean": None for p in PUTNAM_PROBLEMS})
    plan.update({f"{KIMINA}/src/{p}.lean": None for p in KIMINA_SRC})
    plan.update({f"{KIMINA}/src_added_2025-07-10/{p}.lean": None for p in KIMINA_ADDED})
    plan.update(MINICTX_LINES)
    return plan


def content(src: Path, lines: list[int] | None) -> bytes:
    data = src.read_bytes()
    if lines is None:
        return data
    rows = data.splitlines(keepends=True)
    return b"".join(rows[i] for i in lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="compare only; write nothing")
    args = parser.parse_args(argv)
    if not args.shared.is_dir():
        print(f"no shared data at {args.shared}; pass --shared DIR", file=sys.stderr)
        return 2
    plan = planned()
    differ = []
    for rel, lines in plan.items():
        data = content(args.shared / rel, lines)
        dst = args.out / rel
        if args.check:
            if not dst.is_file() or dst.read_bytes() != data:
                differ.append(rel)
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
    keep = set(plan) | {"README.md"}
    extra = sorted(
        str(p.relative_to(args.out))
        for p in args.out.rglob("*")
        if p.is_file() and p.name != "SOURCE" and str(p.relative_to(args.out)) not in keep
    )
    total = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    for rel in differ:
        print(f"differs from the source: {rel}")
    for rel in extra:
        print(f"not in the plan (remove it or add it to this script): {rel}")
    print(f"{len(plan)} files planned, {total / 1024:.0f} KiB under {args.out}")
    return 1 if differ or extra else 0


if __name__ == "__main__":
    raise SystemExit(main())
