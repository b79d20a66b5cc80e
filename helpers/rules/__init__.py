"""The rules format: a ruleset's text, each agent's rules-file format and limit, the optimizer's edits applied by code,
and the floor check for instructions planted in a rule. Imports only the floors below."""
