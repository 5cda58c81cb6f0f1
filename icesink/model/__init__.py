"""What both planes share, with no I/O: typed descriptions that the planner writes and the runtime reads."""
