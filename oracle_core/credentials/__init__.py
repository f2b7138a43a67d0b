"""Credentials at rest: the vault that seals them and the store of sealed credentials.

Imported where used, so a manifest that declares a connection never pays for
``cryptography``.
"""
