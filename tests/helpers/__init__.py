"""Fakes and builders shared by the tests."""
