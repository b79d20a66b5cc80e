"""What every coding agent shares: trajectories and the CLI agent base."""
