; Rust (tree-sitter-rust): definitions only. Functions of an `impl` or a `trait` are
; methods whose parent (@owner) is the implemented type / the trait.
(function_item name: (identifier) @name.definition.function) @definition.function
(impl_item
  type: [(type_identifier) @owner.definition.method
         (generic_type type: (type_identifier) @owner.definition.method)
         (scoped_type_identifier name: (type_identifier) @owner.definition.method)]
  body: (declaration_list
    [(function_item name: (identifier) @name.definition.method)
     (function_signature_item name: (identifier) @name.definition.method)] @definition.method))
(trait_item
  name: (type_identifier) @owner.definition.method
  body: (declaration_list
    [(function_item name: (identifier) @name.definition.method)
     (function_signature_item name: (identifier) @name.definition.method)] @definition.method))
(struct_item name: (type_identifier) @name.definition.struct) @definition.struct
(union_item name: (type_identifier) @name.definition.struct) @definition.struct
(enum_item name: (type_identifier) @name.definition.enum) @definition.enum
(trait_item name: (type_identifier) @name.definition.trait) @definition.trait
(type_item name: (type_identifier) @name.definition.type) @definition.type
(mod_item name: (identifier) @name.definition.module body: (declaration_list)) @definition.module
(macro_definition name: (identifier) @name.definition.macro) @definition.macro
