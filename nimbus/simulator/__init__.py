"""A scheduling simulator: replays an arrival trace through the real
scheduler (filters, weighers, selection) in process. See docs/insight.md."""
