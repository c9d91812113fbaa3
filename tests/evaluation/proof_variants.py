"""Variants of a proof that Lean reads differently from the proof itself: a tab (an error), a
Unicode space (no white space to Lean: never a separator), an unterminated block comment (an
error). The recorded verifier and the verdict cache must give each its own verdict."""

from __future__ import annotations

# Every character Python calls white space besides ASCII space and line breaks, and the
# zero-width ones a model may write between tokens.
UNICODE_SPACES = (
    "\u00a0",
    "\u1680",
    *(chr(c) for c in range(0x2000, 0x200B + 1)),
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
    "\ufeff",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x85",
)


def other_proofs(proof: str) -> dict[str, str]:
    """``{what: variant}`` of a multi-line tactic ``proof`` indented with spaces, each of which
    Lean does not read as ``proof``."""
    lines = [line for line in proof.split("\n") if line.strip()]
    first_space = next(line for line in lines if " " in line.strip())
    variants = {
        "tab indentation": "\n".join("\t" + line.lstrip(" ") for line in lines),
        "a tab between tokens": proof.replace(first_space, first_space.replace(" ", "\t", 1)),
        "a trailing unterminated comment": proof + "\n  /- the rest",
        "an unterminated comment after the last tactic": proof + " /-",
    }
    for ch in UNICODE_SPACES:
        name = f"U+{ord(ch):04X}"
        variants[f"{name} between tokens"] = proof.replace(
            first_space, first_space.replace(" ", ch, 1)
        )
        variants[f"a trailing {name}"] = proof + ch
        variants[f"{name} indentation"] = "\n".join(ch + line for line in lines)
    return variants
