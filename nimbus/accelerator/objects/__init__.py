"""The accelerator service's objects: one module per noun, each holding
every SQL statement of its table(s)."""
