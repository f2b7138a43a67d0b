"""Plugins: finding them, loading and validating them, and the registry they assemble into."""
