"""Tools: typed Python functions the model may call, made with the ``@tool`` decorator.

:mod:`.tool` holds the :class:`~.tool.Tool` class, :mod:`.decorator` the ``@tool``
decorator, :mod:`.schema` the lazily built argument model and JSON schema, :mod:`.signature`
the reading of a function's parameters, and :mod:`.docstrings` the reading of its docstring.
Nothing is re-exported here: a package attribute ``tool`` (the decorator) would hide the
submodule of that name.
"""
