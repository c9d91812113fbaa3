"""The package's own Lean options (Lake ``leanOptions``) reach ``ExtractData.lean``, as Lake passed
them to ``lean`` when it built each file."""

from __future__ import annotations

from pathlib import Path

from lean_dojo_v2.lean_dojo.layout import CORE_DIR, ProjectLayout, lean_options

# The shape of Mathlib's lakefile.lean (options through an abbrev, linters added by `.map`).
MATHLIB_LAKEFILE = """import Lake

open Lake DSL

require "leanprover-community" / "batteries" @ git "main"

/-- Linters, prefixed by `weak` below. -/
abbrev mathlibOnlyLinters : Array LeanOption := #[
  ⟨`linter.mathlibStandardSet, true⟩,
  ⟨`linter.style.longFile, .ofNat 1500⟩,
]

/-- These options are passed as `leanOptions` to building mathlib. -/
abbrev mathlibLeanOptions := #[
    ⟨`pp.unicode.fun, true⟩, -- pretty-prints `fun a ↦ b`
    ⟨`autoImplicit, false⟩,
    ⟨`maxSynthPendingDepth, .ofNat 3⟩
  ] ++ -- options that are used in `lake build`
    mathlibOnlyLinters.map fun s ↦ { s with name := `weak ++ s.name }

package mathlib where
  testDriver := "MathlibTest"

@[default_target]
lean_lib Mathlib where
  -- Mathlib's default options.
  leanOptions := mathlibLeanOptions

lean_lib Cache where
  roots := #[`Cache]
"""

TOML = """name = "fixture"
defaultTargets = ["Fixture"]

[leanOptions]
pp.unicode.fun = true
"autoImplicit" = false
maxHeartbeats = 400000

[[lean_lib]]
name = "Fixture"

[[lean_lib]]
name = "Strict"
roots = ["Strict", "Extra.Strict"]
leanOptions = { relaxedAutoImplicit = false, "weak.linter.x" = true }
"""


def test_lakefile_toml_lean_options_reach_the_extractor(tmp_path: Path):
    (tmp_path / "lakefile.toml").write_text(TOML, encoding="utf-8")
    layout = ProjectLayout(tmp_path)
    package = [
        "autoImplicit", "bool", "false",
        "maxHeartbeats", "nat", "400000",
        "pp.unicode.fun", "bool", "true",
    ]  # fmt: skip
    assert layout.option_args("Fixture/A.lean", "Fixture.A") == package
    strict = package + ["relaxedAutoImplicit", "bool", "false"]
    assert layout.option_args("Extra/Strict/B.lean", "Extra.Strict.B") == strict
    assert layout.option_args("Strict.lean", "Strict") == strict
    assert layout.option_args("StrictNot.lean", "StrictNot") == package


def test_mathlib_lakefile_lean_options_reach_dependency_files(tmp_path: Path):
    mathlib = tmp_path / ".lake/packages/mathlib"
    mathlib.mkdir(parents=True)
    (mathlib / "lakefile.lean").write_text(MATHLIB_LAKEFILE, encoding="utf-8")
    assert lean_options(mathlib) == {
        "": {},
        "Mathlib": {"pp.unicode.fun": True, "autoImplicit": False, "maxSynthPendingDepth": 3},
    }
    layout = ProjectLayout(tmp_path)
    assert layout.option_args(".lake/packages/mathlib/Mathlib/Logic/Basic.lean", "Mathlib.Logic.Basic") == [
        "autoImplicit", "bool", "false",
        "maxSynthPendingDepth", "nat", "3",
        "pp.unicode.fun", "bool", "true",
    ]  # fmt: skip
    assert layout.option_args(".lake/packages/mathlib/Cache/IO.lean", "Cache.IO") == []
    # The root project has no lakefile here: no options; Lean's own files never get any.
    assert layout.option_args("A.lean", "A") == []
    assert layout.option_args(f"{CORE_DIR}/Init/Core.lean", "Init.Core") == []


def test_unreadable_lake_configuration_gives_no_options(tmp_path: Path):
    (tmp_path / "lakefile.toml").write_text("name = [", encoding="utf-8")
    assert lean_options(tmp_path) == {}
    assert ProjectLayout(tmp_path).option_args("A.lean", "A") == []
