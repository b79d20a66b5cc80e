"""Statistics: each run's outcome, paired comparisons and intervals, costs, the pre-declared selection test and its
sequential form. Imports only the floors below."""
