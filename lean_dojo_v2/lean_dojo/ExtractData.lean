/-
ExtractData.lean — lean-dojo-v2's tracer (trace schema 1).

Run inside a built Lake project, once per file:

    lake env lean --run ExtractData.lean FILE MODULE OUT.json

It re-elaborates FILE as module MODULE with info trees on and writes OUT.json (a temporary file
renamed into place, so a half-written output never exists). Everything else — which files to run,
paths of modules, tactic text, `<a>` marks, theorem statements, the corpus — is done in Python
(`lean_dojo_v2/lean_dojo/traced_file.py`), where it can be tested without Lean. The schema is
documented in `docs/tracing.md`.

Targets Lean v4.19 – v4.29. To survive API drift it only uses long-standing names
(`IO.processCommands`, `InfoTree.foldInfo`, `ContextInfo.runMetaM`, `Meta.ppGoal`,
`findDeclarationRanges?`, `findModuleOf?`, `findOLean`, `FileMap.toPosition`), never names the
type of string positions (`String.Pos` became `String.Pos.Raw`) and matches source infos with `..`.

Output (positions are `{"line": 1-based, "column": 0-based in code points}`):
  schema, schema_version, lean_version, module, file,
  imports:      [module name]                                      (the header's imports)
  module_files: {module name: path of its .olean}                  (imports and premise modules)
  commands:     [{kind, start, end, value_starts}]                 (top-level commands)
  declarations: [{name, private, kind, start, end, name_start, name_end}]
  tactics:      [{kind, start, end, state_before, state_after}]    (steps of tactic sequences)
  premises:     [{name, module?, start, end, def_start?, def_end?}] (constants in the source)
  messages:     [{severity, start, end?, text}]                    (warnings and errors)
-/
import Lean

open Lean Elab Meta

namespace LeanDojoV2

def schemaVersion : Nat := 1

def posJson (p : Position) : Json :=
  Json.mkObj [("line", toJson p.line), ("column", toJson p.column)]

/-- Start and end of syntax that comes from the source file itself (not from a macro). -/
def originalRange? (fm : FileMap) (stx : Syntax) : Option (Position × Position) :=
  match stx.getHeadInfo, stx.getTailInfo with
  | .original .., .original .. => do
    let s ← stx.getPos?
    let e ← stx.getTailPos?
    return (fm.toPosition s, fm.toPosition e)
  | _, _ => none

def rangeFields (r : Position × Position) : List (String × Json) :=
  [("start", posJson r.1), ("end", posJson r.2)]

/-- Steps of tactic sequences (`tac₁; tac₂`, one per line, or `{ … }`): the tactics whose
before/after goals are recorded, as LeanDojo does. -/
partial def collectSteps (fm : FileMap) (stx : Syntax)
    (acc : Array (Position × Position × SyntaxNodeKind)) :
    Array (Position × Position × SyntaxNodeKind) := Id.run do
  let mut acc := acc
  let k := stx.getKind
  let seq? : Option Syntax :=
    if k == ``Lean.Parser.Tactic.tacticSeq1Indented then stx.getArgs[0]?
    else if k == ``Lean.Parser.Tactic.tacticSeqBracketed then stx.getArgs[1]?
    else none
  if let some seq := seq? then
    for step in seq.getSepArgs do
      if let some (s, e) := originalRange? fm step then
        acc := acc.push (s, e, step.getKind)
  for arg in stx.getArgs do
    acc := collectSteps fm arg acc
  return acc

/-- The outermost nodes of one of `kinds` in `stx`, in source order (a `mutual` block has one
per declaration; nothing inside a found node is searched). -/
partial def findKinds (stx : Syntax) (kinds : List SyntaxNodeKind) (acc : Array Syntax) :
    Array Syntax :=
  if kinds.contains stx.getKind then acc.push stx
  else stx.getArgs.foldl (fun acc arg => findKinds arg kinds acc) acc

def valueKinds : List SyntaxNodeKind :=
  [``Lean.Parser.Command.declValSimple, ``Lean.Parser.Command.declValEqns,
   ``Lean.Parser.Command.whereStructInst]

def ppGoals (ctx : ContextInfo) (mctx : MetavarContext) (goals : List MVarId) : IO String := do
  if goals.isEmpty then
    return "no goals"
  let ctx := { ctx with mctx := mctx }
  ctx.runMetaM {} do
    let mut parts : Array String := #[]
    for g in goals do
      parts := parts.push (toString (← Meta.ppGoal g))
    return "\n\n".intercalate parts.toList

/-- What one pass over the info trees collects. -/
structure Found where
  tactics : Array (ContextInfo × TacticInfo) := #[]
  constants : Array (ContextInfo × Name × Position × Position) := #[]
  lastCtx? : Option ContextInfo := none

def collect (fm : FileMap) (trees : PersistentArray InfoTree) : Found :=
  trees.foldl (init := {}) fun found tree =>
    tree.foldInfo (init := found) fun ctx info found =>
      let found := { found with lastCtx? := some ctx }
      match info with
      | .ofTacticInfo ti => { found with tactics := found.tactics.push (ctx, ti) }
      | .ofTermInfo ti =>
        match ti.expr with
        | .const name _ =>
          match originalRange? fm ti.stx with
          | some (s, e) => { found with constants := found.constants.push (ctx, name, s, e) }
          | none => found
        | _ => found
      | _ => found

def severityName : MessageSeverity → String
  | .error => "error"
  | .warning => "warning"
  | _ => "information"

def constKind : ConstantInfo → String
  | .thmInfo _ => "theorem"
  | .defnInfo _ => "definition"
  | .axiomInfo _ => "axiom"
  | .opaqueInfo _ => "opaque"
  | .inductInfo _ => "inductive"
  | .ctorInfo _ => "constructor"
  | .recInfo _ => "recursor"
  | .quotInfo _ => "quotient"

def rangesJson? (r? : Option DeclarationRanges) : List (String × Json) :=
  match r? with
  | some r =>
    [("def_start", posJson r.selectionRange.pos), ("def_end", posJson r.selectionRange.endPos)]
  | none => []

unsafe def extractFile (file : System.FilePath) (mod : Name) (out : System.FilePath) : IO Unit := do
  initSearchPath (← findSysroot)
  enableInitializersExecution
  let input ← IO.FS.readFile file
  let inputCtx := Parser.mkInputContext input file.toString
  let fm := inputCtx.fileMap
  -- Info trees make elaboration allocate more; files that build must not time out here. Elaboration
  -- in parallel (`Elab.async`, newer Lean) could leave info trees incomplete; older Lean ignores it.
  let opts : Options := ({} : Options).setNat `maxHeartbeats 2000000 |>.setBool `Elab.async false
  let (header, parserState, messages) ← Parser.parseHeader inputCtx
  let (env, messages) ← processHeader header opts messages inputCtx
  if messages.hasErrors then
    let texts ← messages.toList.mapM fun m => m.toString
    throw <| IO.userError s!"cannot import the header of {file}: {texts}"
  let env := env.setMainModule mod
  let commandState := { Command.mkState env messages opts with infoState := { enabled := true } }
  let s ← IO.processCommands inputCtx parserState commandState
  let finalEnv := s.commandState.env
  let found := collect fm s.commandState.infoState.trees

  -- Commands, and the tactic steps they contain.
  let mut commands : Array Json := #[]
  let mut steps : Array (Position × Position × SyntaxNodeKind) := #[]
  for cmd in s.commands do
    if let some r := originalRange? fm cmd then
      let mut valueStarts : Array Json := #[]
      for v in findKinds cmd valueKinds #[] do
        if let some (vs, _) := originalRange? fm v then
          valueStarts := valueStarts.push (posJson vs)
      commands := commands.push <| Json.mkObj <|
        [("kind", toJson cmd.getKind.toString)] ++ rangeFields r ++
        [("value_starts", Json.arr valueStarts)]
    steps := collectSteps fm cmd steps

  -- One record per step: the outermost tactic info whose syntax is that step.
  let mut stepKeys : Std.HashSet (Nat × Nat × Nat × Nat × Name) := {}
  for (s, e, k) in steps do
    stepKeys := stepKeys.insert (s.line, s.column, e.line, e.column, k)
  let mut tactics : Array Json := #[]
  let mut done : Std.HashSet (Nat × Nat × Nat × Nat × Name) := {}
  for (ctx, ti) in found.tactics do
    if let some (s, e) := originalRange? fm ti.stx then
      let key := (s.line, s.column, e.line, e.column, ti.stx.getKind)
      if done.contains key || !stepKeys.contains key then continue
      done := done.insert key
      let before ← ppGoals ctx ti.mctxBefore ti.goalsBefore
      let after ← ppGoals ctx ti.mctxAfter ti.goalsAfter
      tactics := tactics.push <| Json.mkObj <|
        [("kind", toJson ti.stx.getKind.toString)] ++ rangeFields (s, e) ++
        [("state_before", toJson before), ("state_after", toJson after)]

  -- Constants used in the source, with the module and place that define them.
  let mut premises : Array Json := #[]
  let mut defs : Std.HashMap Name (Option Name × Option DeclarationRanges) := {}
  let mut moduleFiles : Std.HashMap Name String := {}
  for (ctx, name, s, e) in found.constants do
    let info ← match defs.get? name with
      | some i => pure i
      | none => do
        let i ← ctx.runMetaM {} do
          let m ← try findModuleOf? name catch _ => pure none
          let r ← findDeclarationRanges? name
          return (m, r)
        pure i
    defs := defs.insert name info
    let (m?, r?) := info
    let mut fields := [("name", toJson name.toString)] ++ rangeFields (s, e) ++ rangesJson? r?
    match m? with
    | some m =>
      fields := fields ++ [("module", toJson m.toString)]
      unless moduleFiles.contains m do
        let path ← try pure (toString (← findOLean m)) catch _ => pure ""
        moduleFiles := moduleFiles.insert m path
    | none => fields := fields ++ [("module", toJson mod.toString)]
    premises := premises.push (Json.mkObj fields)

  -- Declarations of this module that have a place in the source.
  let mut declarations : Array Json := #[]
  if let some ctx := found.lastCtx? then
    let ctx := { ctx with env := finalEnv }
    let localConsts := finalEnv.constants.foldStage2 (fun acc n ci => acc.push (n, ci)) #[]
    for (n, ci) in localConsts do
      let userName := (privateToUserName? n).getD n
      if userName.isInternal || userName.hasMacroScopes then continue
      let r? ← ctx.runMetaM {} (findDeclarationRanges? n)
      if let some r := r? then
        declarations := declarations.push <| Json.mkObj [
          ("name", toJson userName.toString), ("private", toJson (isPrivateName n)),
          ("kind", toJson (constKind ci)),
          ("start", posJson r.range.pos), ("end", posJson r.range.endPos),
          ("name_start", posJson r.selectionRange.pos),
          ("name_end", posJson r.selectionRange.endPos)]

  let mut imports : Array Json := #[]
  for imp in finalEnv.imports do
    imports := imports.push (toJson imp.module.toString)
    unless moduleFiles.contains imp.module do
      let path ← try pure (toString (← findOLean imp.module)) catch _ => pure ""
      moduleFiles := moduleFiles.insert imp.module path

  let mut messagesJson : Array Json := #[]
  for m in s.commandState.messages.toList do
    if m.severity matches .information then continue
    let text ← m.toString
    let mut fields := [("severity", toJson (severityName m.severity)), ("start", posJson m.pos)]
    if let some e := m.endPos then
      fields := fields ++ [("end", posJson e)]
    fields := fields ++ [("text", toJson (text.take 2000))]
    messagesJson := messagesJson.push (Json.mkObj fields)

  let files := moduleFiles.fold (fun acc k v => acc ++ [(k.toString, toJson v)]) []
  let result := Json.mkObj [
    ("schema", toJson "lean_dojo_v2.trace"), ("schema_version", toJson schemaVersion),
    ("lean_version", toJson Lean.versionString), ("module", toJson mod.toString),
    ("file", toJson file.toString), ("imports", Json.arr imports),
    ("module_files", Json.mkObj files), ("commands", Json.arr commands),
    ("declarations", Json.arr declarations), ("tactics", Json.arr tactics),
    ("premises", Json.arr premises), ("messages", Json.arr messagesJson)]
  let tmp := out.withExtension "json.tmp"
  if let some dir := out.parent then
    IO.FS.createDirAll dir
  IO.FS.writeFile tmp result.compress
  IO.FS.rename tmp out

end LeanDojoV2

unsafe def main (args : List String) : IO UInt32 := do
  match args with
  | [file, mod, out] =>
    try
      LeanDojoV2.extractFile file mod.toName out
      return 0
    catch e =>
      IO.eprintln s!"lean_dojo_v2 extract: {file}: {e}"
      return 1
  | _ =>
    IO.eprintln "usage: lake env lean --run ExtractData.lean FILE MODULE OUT.json"
    return 2
