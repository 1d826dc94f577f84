"""Figures and the HTML page of `schedd report` (matplotlib, Agg canvas)."""
