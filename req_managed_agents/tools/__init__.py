"""What users write: the handler protocols and ``ToolContext``, the ``Tools`` registry, the
JSON Schema built from type hints and the validation of a call's input against it.
Internal: the public names are re-exported at the top."""
