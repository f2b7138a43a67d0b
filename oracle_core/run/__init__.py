"""A run: the values that flow through it, middleware, the tool executor and the loop."""
