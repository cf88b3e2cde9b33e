"""What every layer may import: the errors a user can act on (and, in time, settings and progress)."""
