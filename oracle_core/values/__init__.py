"""Plain data and the pure rules over it: messages, tool calls and results, usage, operations,
thread and run records, events, results, limits, text, tokens and ids.

Everything here imports nothing of oracle-core but :mod:`oracle_core.errors`: every layer
stands on these values.
"""
