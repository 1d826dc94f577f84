"""Clients of the schedd daemon: schedctl, the trace replay and the checkpoint agent."""
