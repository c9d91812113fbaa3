/-
ExtractData.lean — lean-dojo-v2's tracer (trace schema 2).

Run inside a built Lake project, once per file:

    lake env lean --run ExtractData.lean FILE MODULE OUT.json [NAME TYPE VALUE]...

It re-elaborates FILE as module MODULE with info trees on and writes OUT.json (a temporary file
renamed into place, so a half-written output never exists). The optional triples are the package's
own Lean options from its Lake configuration (`leanOptions`), TYPE being `bool`, `nat` or `string`;
they apply as they did when Lake built the file. Everything else — which files to run, paths of
modules, tactic text, `<a>` marks, theorem statements, the corpus — is done in Python
(`lean_dojo_v2/lean_dojo/traced_file.py`), where it can be tested without Lean. The schema and the
Lean versions each API was checked against are in `docs/tracing.md`.

Targets Lean v4.19 – v4.29. To survive API drift it only uses names that exist across that range
(`IO.processCommands`, `PartialContextInfo.mergeIntoOuter?`, `Info.updateContext?`,
`ContextInfo.runMetaM`, `Meta.ppGoal`, `findDeclarationRanges?`, `findModuleOf?`, `findOLean`,
`FileMap.toPosition`, `Options.set`/`get` with typed values — `Options` became a structure in
v4.28 without `setNat`), never names the type of string positions (`String.Pos` became
`String.Pos.Raw`), matches source infos with `..`, and passes `mainModule` to `processHeader` only
where this Lean's `processHeader` has that parameter (`process_header%` below).

Output (positions are `{"line": 1-based, "column": 0-based in code points}`):
  schema, schema_version, lean_version, module, file, lean_options,
  imports:      [module name]                                      (the header's imports)
  module_files: {module name: path of its .olean}                  (imports and premise modules)
  commands:     [{kind, start, end, value_starts}]                 (top-level commands, no end of input)
  declarations: [{name, private, kind, start, end, name_start, name_end}]
  tactics:      [{kind, seq, start, end, state_before, state_after} or {…, error}]
                (every TacticInfo whose parent is a tacticSeq1Indented / tacticSeqBracketed /
                rewriteSeq TacticInfo, in info-tree pre-order, as LeanDojo's tracer takes them)
  premises:     [{name, module?, start, end, def_start?, def_end?, error?}] (constants in the source)
  messages:     [{severity, start, end?, text}]                    (warnings and errors, bare text)
  errors:       [{what, name?, text}]                              (items that could not be read)
-/
import Lean

open Lean Elab Meta

namespace LeanDojoV2

def schemaVersion : Nat := 2

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

/-- Does a constant's type have a parameter named `n` (with or without a default)? -/
partial def hasBinder (n : Name) : Expr → Bool
  | .forallE m _ b _ => m == n || hasBinder n b
  | _ => false

/-- `Lean.Elab.processHeader hdr opts msgs ictx (mainModule := mod)` on Lean whose
`processHeader` takes `mainModule` (the module system: before lean4#12045 it checks `import all`
against the main module's root), `Lean.Elab.processHeader hdr opts msgs ictx` on older Lean,
which has no such parameter (and no `import all`). -/
elab "process_header% " hdr:term:max opts:term:max msgs:term:max ictx:term:max mod:term:max :
    term => do
  let takesMainModule :=
    match (← getEnv).find? ``Lean.Elab.processHeader with
    | some ci => hasBinder `mainModule ci.type
    | none => false
  let call ← if takesMainModule then
      `(Lean.Elab.processHeader $hdr $opts $msgs $ictx (mainModule := $mod))
    else
      `(Lean.Elab.processHeader $hdr $opts $msgs $ictx)
  Term.elabTerm call none

/-- The package's options from the command line: `NAME TYPE VALUE` triples. -/
def addOptions (opts : Options) : List String → Except String Options
  | [] => .ok opts
  | name :: "bool" :: v :: rest => addOptions (opts.set name.toName (v == "true")) rest
  | name :: "nat" :: v :: rest =>
    match v.toNat? with
    | some n => addOptions (opts.set name.toName n) rest
    | none => .error s!"option {name}: {v} is not a natural number"
  | name :: "string" :: v :: rest => addOptions (opts.set name.toName v) rest
  | args => .error s!"cannot read the options {args}: expected NAME bool|nat|string VALUE triples"

/-- Kinds of the `TacticInfo` nodes whose children are steps (LeanDojo's rule). -/
def seqKinds : List SyntaxNodeKind :=
  [``Lean.Parser.Tactic.tacticSeq1Indented, ``Lean.Parser.Tactic.tacticSeqBracketed,
   ``Lean.Parser.Tactic.rewriteSeq]

/-- A tactic step: its info, the context it ran in, and the kind of its parent sequence. -/
structure Step where
  ctx : ContextInfo
  info : TacticInfo
  seq : SyntaxNodeKind

/-- What one pass over the info trees collects. -/
structure Found where
  steps : Array Step := #[]
  constants : Array (ContextInfo × Name × Position × Position) := #[]
  lastCtx? : Option ContextInfo := none

instance : Inhabited Found := ⟨{}⟩

def visit (fm : FileMap) (ctx : ContextInfo) (parent? : Option SyntaxNodeKind) (info : Info)
    (found : Found) : Found :=
  let found := { found with lastCtx? := some ctx }
  match info with
  | .ofTacticInfo ti =>
    match parent? with
    | some k =>
      if seqKinds.contains k then
        { found with steps := found.steps.push { ctx := ctx, info := ti, seq := k } }
      else found
    | none => found
  | .ofTermInfo ti =>
    match ti.expr with
    | .const name _ =>
      match originalRange? fm ti.stx with
      | some (s, e) => { found with constants := found.constants.push (ctx, name, s, e) }
      | none => found
    | _ => found
  | _ => found

/-- Pre-order walk (the order LeanDojo's tracer visits nodes in) keeping the innermost context as
`InfoTree.foldInfo` does. `parent?` is the syntax kind of the enclosing node when that node is a
`TacticInfo` (the child of a `context` node has none). -/
partial def walk (fm : FileMap) (ctx? : Option ContextInfo) (parent? : Option SyntaxNodeKind)
    (found : Found) : InfoTree → Found
  | .context pci t => walk fm (pci.mergeIntoOuter? ctx?) none found t
  | .node info children =>
    let found := match ctx? with
      | some ctx => visit fm ctx parent? info found
      | none => found
    let kind? : Option SyntaxNodeKind := match info with
      | .ofTacticInfo ti => some ti.stx.getKind
      | _ => none
    children.foldl (init := found) (walk fm (info.updateContext? ctx?) kind?)
  | _ => found

def collect (fm : FileMap) (trees : PersistentArray InfoTree) : Found :=
  trees.foldl (init := {}) fun found tree => walk fm none none found tree

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

/-- The step's goals, or why they could not be printed (that step's failure only). -/
def statesJson (step : Step) : IO (List (String × Json)) := do
  try
    let before ← ppGoals step.ctx step.info.mctxBefore step.info.goalsBefore
    let after ← ppGoals step.ctx step.info.mctxAfter step.info.goalsAfter
    return [("state_before", toJson before), ("state_after", toJson after)]
  catch ex =>
    return [("error", toJson s!"cannot print the goals: {ex}")]

/-- Module and declaration ranges of a constant, or why they could not be found. -/
def premiseInfo (ctx : ContextInfo) (name : Name) :
    IO (Option Name × Option DeclarationRanges × Option String) := do
  try
    ctx.runMetaM {} do
      let m ← findModuleOf? name
      let r ← findDeclarationRanges? name
      return (m, r, (none : Option String))
  catch ex =>
    return (none, none, some s!"{ex}")

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

def itemError (what : String) (name : Name) (text : String) : Json :=
  Json.mkObj [("what", toJson what), ("name", toJson name.toString), ("text", toJson text)]

unsafe def extractFile (file : System.FilePath) (mod : Name) (out : System.FilePath)
    (optionArgs : List String) : IO Unit := do
  let pkgOpts ← match addOptions {} optionArgs with
    | .ok o => pure o
    | .error msg => throw <| IO.userError msg
  initSearchPath (← findSysroot)
  enableInitializersExecution
  let input ← IO.FS.readFile file
  let inputCtx := Parser.mkInputContext input file.toString
  let fm := inputCtx.fileMap
  -- Info trees make elaboration allocate more; files that build must not time out here (a package
  -- that turns the limit off keeps it off). Elaboration in parallel (`Elab.async`, newer Lean)
  -- could leave info trees incomplete; older Lean ignores the option.
  let heartbeats : Nat := pkgOpts.get `maxHeartbeats (200000 : Nat)
  let opts : Options :=
    if heartbeats == 0 then pkgOpts else pkgOpts.set `maxHeartbeats (max heartbeats 2000000)
  let opts := opts.set `Elab.async false
  -- A `module` file imports at the `exported` level unless `Elab.inServer` is set; declaration
  -- ranges (the `<a>` provenances) are exported only at the `server` level. Files without
  -- `module` import everything (`private` level) either way; older Lean ignores the option.
  let headerOpts := opts.set `Elab.inServer true
  let (header, parserState, messages) ← Parser.parseHeader inputCtx
  let (env, messages) ← process_header% header headerOpts messages inputCtx mod
  if messages.hasErrors then
    let texts ← messages.toList.mapM fun m => m.toString
    throw <| IO.userError s!"cannot import the header of {file}: {texts}"
  let env := env.setMainModule mod
  let commandState := { Command.mkState env messages opts with infoState := { enabled := true } }
  let s ← IO.processCommands inputCtx parserState commandState
  let finalEnv := s.commandState.env
  let found := collect fm s.commandState.infoState.trees
  let mut errors : Array Json := #[]

  -- Top-level commands (the end of input is not one).
  let mut commands : Array Json := #[]
  for cmd in s.commands do
    if Parser.isTerminalCommand cmd then continue
    if let some r := originalRange? fm cmd then
      let mut valueStarts : Array Json := #[]
      for v in findKinds cmd valueKinds #[] do
        if let some (vs, _) := originalRange? fm v then
          valueStarts := valueStarts.push (posJson vs)
      commands := commands.push <| Json.mkObj <|
        [("kind", toJson cmd.getKind.toString)] ++ rangeFields r ++
        [("value_starts", Json.arr valueStarts)]

  -- Every step, in pre-order; repeated runs of one step (`all_goals`, `iterate`) and the rule
  -- steps of `rw [a, b]` included. Python picks what LeanDojo's records keep.
  let mut tactics : Array Json := #[]
  for step in found.steps do
    if let some r := originalRange? fm step.info.stx then
      let states ← statesJson step
      tactics := tactics.push <| Json.mkObj <|
        [("kind", toJson step.info.stx.getKind.toString), ("seq", toJson step.seq.toString)] ++
        rangeFields r ++ states

  -- Constants used in the source, with the module and place that define them.
  let mut premises : Array Json := #[]
  let mut defs : Std.HashMap Name (Option Name × Option DeclarationRanges × Option String) := {}
  let mut moduleFiles : Std.HashMap Name String := {}
  for (ctx, name, s, e) in found.constants do
    let info ← match defs.get? name with
      | some i => pure i
      | none => premiseInfo ctx name
    defs := defs.insert name info
    let (m?, r?, err?) := info
    let mut fields := [("name", toJson name.toString)] ++ rangeFields (s, e) ++ rangesJson? r?
    match err? with
    | some err => fields := fields ++ [("error", toJson err)]
    | none =>
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
      let mut r? : Option DeclarationRanges := none
      try
        r? ← ctx.runMetaM {} (findDeclarationRanges? n)
      catch ex =>
        errors := errors.push (itemError "declaration" userName s!"{ex}")
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

  -- Messages with their bare text (no `file:line:col: severity:` prefix).
  let mut messagesJson : Array Json := #[]
  for m in s.commandState.messages.toList do
    if m.severity matches .information then continue
    let text ← try m.data.toString catch ex => pure s!"(message not printable: {ex})"
    let mut fields := [("severity", toJson (severityName m.severity)), ("start", posJson m.pos)]
    if let some e := m.endPos then
      fields := fields ++ [("end", posJson e)]
    fields := fields ++ [("text", toJson (text.take 2000))]
    messagesJson := messagesJson.push (Json.mkObj fields)

  let files := moduleFiles.fold (fun acc k v => acc ++ [(k.toString, toJson v)]) []
  let result := Json.mkObj [
    ("schema", toJson "lean_dojo_v2.trace"), ("schema_version", toJson schemaVersion),
    ("lean_version", toJson Lean.versionString), ("module", toJson mod.toString),
    ("file", toJson file.toString), ("lean_options", toJson optionArgs),
    ("imports", Json.arr imports),
    ("module_files", Json.mkObj files), ("commands", Json.arr commands),
    ("declarations", Json.arr declarations), ("tactics", Json.arr tactics),
    ("premises", Json.arr premises), ("messages", Json.arr messagesJson),
    ("errors", Json.arr errors)]
  let tmp := out.withExtension "json.tmp"
  if let some dir := out.parent then
    IO.FS.createDirAll dir
  IO.FS.writeFile tmp result.compress
  IO.FS.rename tmp out

end LeanDojoV2

unsafe def main (args : List String) : IO UInt32 := do
  match args with
  | file :: mod :: out :: optionArgs =>
    try
      LeanDojoV2.extractFile file mod.toName out optionArgs
      return 0
    catch e =>
      IO.eprintln s!"lean_dojo_v2 extract: {file}: {e}"
      return 1
  | _ =>
    IO.eprintln "usage: lake env lean --run ExtractData.lean FILE MODULE OUT.json [NAME TYPE VALUE]..."
    return 2
