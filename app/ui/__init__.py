"""Widgets, one per module. Only the GUI thread touches them."""
