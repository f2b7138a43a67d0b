"""Build catalogs of installed-looking plugins for simonw/llm, the twins of ``catalog.py``'s.

Plugin ``sealNNNN`` here holds the very functions of oracle-core's ``sealNNNN`` (the same
Seal-Tools tools: typed parameters, a docstring with ``Args:``, returning their name),
undecorated, and one hook, ``@llm.hookimpl def register_tools(register)``, registering
them. Each is a module ``llm_bench_sealNNNN.py`` plus a ``.dist-info`` whose
``entry_points.txt`` puts it in the ``llm`` group, which ``llm`` loads with pluggy's
``load_setuptools_entrypoints("llm")`` at start-up: the folder goes on ``sys.path``
(``PYTHONPATH``), as ``catalog.py``'s does for oracle-core.
"""

from __future__ import annotations

from pathlib import Path

from catalog import plan_catalog, tool_source


def write_llm_catalog(root: Path, plugins: int, tools_per_plugin: int = 4) -> list[str]:
    """Write ``plugins`` llm plugin distributions into ``root``; return their entry-point names."""
    names = []
    for name, _field, tools in plan_catalog(plugins, tools_per_plugin):
        module = f"llm_bench_{name}"
        sources = [tool_source(spec, tool_name, decorator="") for tool_name, spec in tools]
        registers = "".join(f"    register({tool_name})\n" for tool_name, _ in tools)
        code = (
            "import llm\n\n\n"
            + "\n\n".join(sources)
            + "\n\n@llm.hookimpl\ndef register_tools(register):\n"
            + registers
        )
        (root / f"{module}.py").write_text(code)
        info = root / f"{module}-1.0.dist-info"
        info.mkdir(exist_ok=True)
        dist = module.replace("_", "-")
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[llm]\n{name} = {module}\n")
        names.append(name)
    return names
