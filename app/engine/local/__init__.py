"""The local backend: chat format, prefill and decode over a KV session (eager or compiled),
the turn planner (window + admission) and the turn runner that yields the turn's events."""
