"""Isolation: the sandbox every agent run and grading executes in, its caps (cgroups, disk, processes), the
relay out of it, and the bounded readers of whatever an agent or the code under test wrote. Imports only core."""
