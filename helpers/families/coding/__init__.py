"""The coding family: tasks, the house suite, SWE-bench, workspaces and evaluation."""
