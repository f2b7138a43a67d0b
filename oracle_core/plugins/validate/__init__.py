"""The plugin validator: every problem of one plugin, found at once.

Assembly (:mod:`oracle_core.plugins.loader`), ``oracle plugins`` and the harness's
``check_plugin`` all go through it, so a plugin that passes ``check_plugin`` loads, and one
that fails to load fails ``check_plugin`` with the same messages. Each problem is a
sentence naming the hook, manifest field or tool at fault and how to fix it.

Two kinds of problem:

- **errors** leave the plugin out: its hooks cannot be honoured, a hook raised, hung or
  returned the wrong type, the manifest is missing or invalid, a tool name is reserved or
  repeated, a tool definition would make the provider refuse every request that shows it,
  a tool is on-demand inside an always or silent plugin (loading could never show it),
  or an example names a tool that does not exist or has arguments that do not fit it;
- **warnings** are soft limits (long manifest texts, too many lines): the plugin loads,
  and ``check_plugin`` still fails.

One module a kind of problem: :mod:`.hooks` (the hook implementations' shape, before
registration), :mod:`.results` (what the hooks returned), :mod:`.manifest`, :mod:`.tools`,
:mod:`.examples`, :mod:`.connections`; :mod:`.validation` runs them for one plugin and
:mod:`.problems` is what they report.
"""

from oracle_core.plugins.validate.hooks import hook_problems
from oracle_core.plugins.validate.problems import Problem, plugin_error
from oracle_core.plugins.validate.results import HookResults
from oracle_core.plugins.validate.tools import deep_tool_problems, tool_problems
from oracle_core.plugins.validate.validation import Trusted, Validation, validate

__all__ = [
    "HookResults",
    "Problem",
    "Trusted",
    "Validation",
    "deep_tool_problems",
    "hook_problems",
    "plugin_error",
    "tool_problems",
    "validate",
]
