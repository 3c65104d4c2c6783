"""Lowering passes that turn AST2 into AST3, one module per pass."""
