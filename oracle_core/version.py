"""The version of oracle-core: one place, read by the package face, the server and the start-up cache."""

__version__ = "0.1.0"

DISTRIBUTION = "oracle-core-runtime"
"""The name the core is published and installed under (``pip install oracle-core-runtime``).

``oracle-core`` on the package index is an unrelated project, so the distribution is
``oracle-core-runtime``; the import package stays ``oracle_core`` and the command ``oracle``.
Plugins depend on this name, and the scaffold writes it into every new plugin's dependencies.
"""
