"""Task families: coding tasks (house suite, SWE-bench, workspaces, evaluation) and the latent-rules pages."""
