; Python (tree-sitter-python). Run as ONE query per file by rag/parse/python.py.
; Capture naming follows aider's tags files and common.scm:
;   @name.definition.<kind> / @definition.<kind>   a named symbol and its whole node
;   @name.reference.call / @reference.call         a call and its callee
;   @reference.<what>                              nodes post-processed in Python
; Captures whose name starts with "_" only feed predicates.
; Methods, class fields, decorators (their range and routes) and settings classes are
; recognised in Python from the captured nodes' parents.

; ---- definitions -----------------------------------------------------------
(class_definition name: (identifier) @name.definition.class) @definition.class
(function_definition name: (identifier) @name.definition.function) @definition.function
(assignment left: (identifier) @name.definition.function right: (lambda)) @definition.function

; ---- imports / __all__ -----------------------------------------------------
(import_statement) @reference.import
(import_from_statement) @reference.import
(assignment left: (identifier) @_all (#eq? @_all "__all__")) @reference.all
(augmented_assignment left: (identifier) @_all (#eq? @_all "__all__")) @reference.all

; ---- calls (also getenv / environ.get, routes, Django path(), import_module) ----
(call function: (_) @name.reference.call) @reference.call

; ---- environment reads that are not calls ----------------------------------
; os.environ["X"] and "X" in os.environ (kept when the object is an os.environ alias)
(subscript value: [(identifier) (attribute)] @name.reference.subscript) @reference.subscript
(comparison_operator (_) [(identifier) (attribute)]) @reference.compare
; os.environ (or an alias) itself used as a value: Config(environ=os.environ), dict(os.environ)
((attribute attribute: (identifier) @_environ) @reference.environ (#eq? @_environ "environ"))
((identifier) @reference.environ (#eq? @reference.environ "environ"))

; ---- module-level string constants (a name an env read may use as its key) ----
(module (expression_statement (assignment left: (identifier) right: (string)) @reference.constant))

; ---- decorators (routes, property/staticmethod flags) -----------------------
(decorated_definition) @reference.decorated
