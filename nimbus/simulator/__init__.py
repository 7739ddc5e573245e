"""A scheduling simulator: replays an arrival trace through the real
scheduler (filters, weighers, selection) and placement's allocation
candidate engine, in process. See docs/insight.md."""
