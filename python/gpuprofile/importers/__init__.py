"""Readers that turn trace files made by other tools into a Trace."""
