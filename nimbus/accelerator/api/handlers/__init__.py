"""Handlers of the accelerator API, one module per noun."""
