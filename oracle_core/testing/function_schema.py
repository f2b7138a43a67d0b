"""Whether a tool's definition is one OpenAI function calling accepts.

The checks live with the plugin validator (:mod:`oracle_core.plugins.validate.function_schema`),
which assembly and :func:`~oracle_core.testing.check_plugin` share; they are re-exported
here for plugin authors' tests.
"""

from oracle_core.plugins.validate.function_schema import (
    DESCRIPTION_MAX,
    FUNCTION_NAME,
    TOP_LEVEL_FORBIDDEN,
    function_schema_problems,
    parameters_problems,
)

__all__ = [
    "DESCRIPTION_MAX",
    "FUNCTION_NAME",
    "TOP_LEVEL_FORBIDDEN",
    "function_schema_problems",
    "parameters_problems",
]
