"""The accelerator REST API (Cyborg's v2 wire format)."""
