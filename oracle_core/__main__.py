"""``python -m oracle_core`` runs the ``oracle`` command line."""

from oracle_core.cli import run

run()
