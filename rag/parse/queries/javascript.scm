; JavaScript / JSX only (tree-sitter-javascript): class fields.
(field_definition property: (_) @name.definition.field) @definition.field
