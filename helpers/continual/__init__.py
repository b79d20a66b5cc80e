"""Continual mode: rules learned from a team's real signals, behind an approval gate."""
