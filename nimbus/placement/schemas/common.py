"""Patterns shared by the placement schemas (and the handlers' checks)."""

# A uuid with or without dashes, as Placement accepts it.
UUID_RE = (
    '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?'
    '[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$'
)
