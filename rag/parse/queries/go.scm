; Go (tree-sitter-go): definitions only, for symbol chunks and `slackzilla code symbols`.
; Read by rag/parse/definitions.py: @name.definition.<kind> / @definition.<kind>, and
; @owner.definition.<kind> for the receiver type of a method (its parent).
(function_declaration name: (identifier) @name.definition.function) @definition.function
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [(type_identifier) @owner.definition.method
             (pointer_type (type_identifier) @owner.definition.method)
             (generic_type type: (type_identifier) @owner.definition.method)
             (pointer_type (generic_type type: (type_identifier) @owner.definition.method))]))
  name: (field_identifier) @name.definition.method) @definition.method
(type_spec name: (type_identifier) @name.definition.struct type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name.definition.interface type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name.definition.type) @definition.type
(type_alias name: (type_identifier) @name.definition.type) @definition.type
