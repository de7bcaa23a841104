; Patterns shared by the JavaScript, TypeScript and TSX grammars.
; Loaded by rag/parse.py together with javascript.scm or typescript.scm and run
; as ONE query per file (one pass over the tree).
; Capture naming follows aider's javascript-tags.scm:
;   @name.definition.<kind> / @definition.<kind>   a named symbol and its whole node
;   @name.reference.call / @reference.call         a call and its callee
;   @reference.<what>                              nodes post-processed in Python
; Captures whose name starts with "_" only feed predicates.

; ---- definitions -----------------------------------------------------------
(function_declaration name: (identifier) @name.definition.function) @definition.function
(generator_function_declaration name: (identifier) @name.definition.generator) @definition.generator
(class_declaration name: (_) @name.definition.class) @definition.class
(method_definition name: (_) @name.definition.method) @definition.method

(variable_declarator name: (identifier) @name.definition.arrow value: (arrow_function)) @definition.arrow
(variable_declarator name: (identifier) @name.definition.function value: (function_expression)) @definition.function
(variable_declarator name: (identifier) @name.definition.generator value: (generator_function)) @definition.generator
(variable_declarator name: (identifier) @name.definition.class value: (class)) @definition.class

(pair key: [(property_identifier) (string)] @name.definition.arrow value: (arrow_function)) @definition.arrow
(pair key: [(property_identifier) (string)] @name.definition.function value: (function_expression)) @definition.function
(pair key: [(property_identifier) (string)] @name.definition.generator value: (generator_function)) @definition.generator

(assignment_expression
  left: [(identifier) (member_expression property: (property_identifier))] @name.definition.arrow
  right: (arrow_function)) @definition.arrow
(assignment_expression
  left: [(identifier) (member_expression property: (property_identifier))] @name.definition.function
  right: (function_expression)) @definition.function
(assignment_expression
  left: [(identifier) (member_expression property: (property_identifier))] @name.definition.generator
  right: (generator_function)) @definition.generator

; ---- pre-class inheritance: `Child.prototype = new Base()` / `= Object.create(Base.prototype)` ----
(assignment_expression
  left: (member_expression
    object: (identifier)
    property: (property_identifier) @_prototype)
  right: [(new_expression) (call_expression)]
  (#eq? @_prototype "prototype")) @reference.prototype

; ---- imports / exports -----------------------------------------------------
(import_statement) @reference.import
(export_statement) @reference.export

(assignment_expression
  left: (member_expression
    object: (identifier) @_module
    property: (property_identifier) @_exports)
  (#eq? @_module "module")
  (#eq? @_exports "exports")) @reference.cjs_export
(assignment_expression
  left: (member_expression
    object: (member_expression
      object: (identifier) @_module
      property: (property_identifier) @_exports)
    property: (property_identifier))
  (#eq? @_module "module")
  (#eq? @_exports "exports")) @reference.cjs_export
(assignment_expression
  left: (member_expression
    object: (identifier) @_exports
    property: (property_identifier))
  (#eq? @_exports "exports")) @reference.cjs_export

; ---- calls (also require, import(), routes, path.join, startsWith/includes) ----
(call_expression function: (_) @name.reference.call) @reference.call
(new_expression constructor: (_) @name.reference.call) @reference.call

; ---- process.env (and the runtimes' twins: import.meta.env, Deno.env, Bun.env) ----
(member_expression
  object: (identifier) @_process
  property: (property_identifier) @_env
  (#match? @_process "^(process|Deno|Bun)$")
  (#eq? @_env "env")) @reference.env
(member_expression
  object: (meta_property)
  property: (property_identifier) @_env
  (#eq? @_env "env")) @reference.env

; ---- top-level constants (a name `process.env[NAME]` may use as its key) ----
(program (lexical_declaration) @reference.constant)
(program (variable_declaration) @reference.constant)

; ---- url.pathname checks ---------------------------------------------------
(binary_expression
  left: [(member_expression property: (property_identifier) @_pathname) (identifier) @_pathname]
  right: [(string) (template_string)]
  (#eq? @_pathname "pathname")) @reference.pathname
(binary_expression
  left: [(string) (template_string)]
  right: [(member_expression property: (property_identifier) @_pathname) (identifier) @_pathname]
  (#eq? @_pathname "pathname")) @reference.pathname
(switch_statement
  value: (parenthesized_expression
    [(member_expression property: (property_identifier) @_pathname) (identifier) @_pathname])
  (#eq? @_pathname "pathname")) @reference.pathname_switch
