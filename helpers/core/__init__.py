"""The ground floor: defaults (config), the seams (protocols), names that become paths, tokens, the agent registry and
small shared wording. Imports nothing of helpers above it."""
