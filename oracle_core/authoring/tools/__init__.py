"""Tools: typed Python functions the model may call, made with the ``@tool`` decorator."""
