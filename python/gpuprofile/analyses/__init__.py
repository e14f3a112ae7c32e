"""Analyses: pure functions of a Trace that return tables or frozen dataclasses."""
