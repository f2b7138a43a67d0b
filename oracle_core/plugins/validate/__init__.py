"""The plugin validator: every problem of one plugin, found at once."""
