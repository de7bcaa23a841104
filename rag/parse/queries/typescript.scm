; TypeScript / TSX only (tree-sitter-typescript).
(public_field_definition name: (_) @name.definition.field) @definition.field
(abstract_class_declaration name: (_) @name.definition.class) @definition.class
(abstract_method_signature name: (_) @name.definition.method) @definition.method
(interface_declaration name: (_) @name.definition.interface) @definition.interface
(type_alias_declaration name: (_) @name.definition.type) @definition.type
(enum_declaration name: (_) @name.definition.enum) @definition.enum
