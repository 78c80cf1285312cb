"""Pure Python: conversations, history policy, settings, paths. No Qt, no torch."""
