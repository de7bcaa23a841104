; Ruby (tree-sitter-ruby): definitions only. Methods get their class or module as parent
; by nesting; `def self.x` is a static method; a `def` outside any class is a function.
(class name: [(constant) (scope_resolution)] @name.definition.class) @definition.class
(module name: [(constant) (scope_resolution)] @name.definition.module) @definition.module
(method name: (_) @name.definition.method) @definition.method
(singleton_method name: (_) @name.definition.static_method) @definition.static_method
