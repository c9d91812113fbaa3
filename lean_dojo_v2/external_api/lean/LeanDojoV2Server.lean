/-
Point LeanCopilot at `lean-dojo-v2 serve`.

1. Start the server (offline, the bundled SmolLM2 as `default`, MiniLM as `default-encoder`):
     lean-dojo-v2 serve                    -- listens on 127.0.0.1:23337, LeanCopilot's port
2. Add LeanCopilot to your project (see its README) and copy the lines below into a Lean file.

`ExternalGenerator` / `ExternalEncoder` are LeanCopilot's own structures
(`LeanCopilot/Models/External.lean`): they run `curl -X POST http://HOST:PORT/generate`
(and `/encode`) with a one-line JSON body, which is the protocol the server answers exactly.
`name` is a model name the server serves (`curl localhost:23337/models` lists them).
LeanCopilot's curl sends no token: keep the server on localhost without `--token` for it.
-/
import LeanCopilot

open Lean Meta LeanCopilot

/-- The server's tactic generator (`name` is a generator of its config). -/
def leanDojoV2 : ExternalGenerator := {
  name := "default"
  host := "localhost"
  port := 23337
}

/-- The server's encoder (an `encoder` or a `retriever` of its config). -/
def leanDojoV2Encoder : ExternalEncoder := {
  name := "default-encoder"
  host := "localhost"
  port := 23337
}

-- Ask the server directly: an array of (tactic, score), best first.
#eval generate leanDojoV2 "n : ℕ\n⊢ gcd n n = n" ""

-- One embedding (a FloatArray, L2-normalised).
#eval encode leanDojoV2Encoder "n : ℕ\n⊢ gcd n n = n"

-- Register the generator under a name and make `suggest_tactics` use it.
#eval registerGenerator "lean-dojo-v2" (.external leanDojoV2)

set_option LeanCopilot.suggest_tactics.model "lean-dojo-v2" in
example (a b c : Nat) : a + b + c = a + c + b := by
  suggest_tactics
  sorry

-- With a prefix: every suggestion starts with it.
set_option LeanCopilot.suggest_tactics.model "lean-dojo-v2" in
example (a b c : Nat) : a + b + c = a + c + b := by
  suggest_tactics "rw"
  sorry
