; Java (tree-sitter-java): definitions only. Members get their class as parent by nesting.
; A declaration's node starts at its modifiers, so annotations are inside its range.
(class_declaration name: (identifier) @name.definition.class) @definition.class
(record_declaration name: (identifier) @name.definition.class) @definition.class
(interface_declaration name: (identifier) @name.definition.interface) @definition.interface
(annotation_type_declaration name: (identifier) @name.definition.interface) @definition.interface
(enum_declaration name: (identifier) @name.definition.enum) @definition.enum
(method_declaration name: (identifier) @name.definition.method) @definition.method
(constructor_declaration name: (identifier) @name.definition.method) @definition.method
