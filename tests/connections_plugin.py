"""A plugin with connections, written to disk by the connections tests (``PLUGIN_CODE``).

Its tools never return a credential: they return a fingerprint of it, so a test can tell
which credential a call used without the value ever reaching the model. Every call is
appended to the file named by ``ORACLE_PLUGIN_VAULTED__LOG``, so a test (or another
process) can count exactly how often each tool ran.
"""

from __future__ import annotations

import hashlib

PLUGIN_CODE = '''
import hashlib, json
from oracle_core import Connection, PluginManifest, Route, ToolContext, hookimpl, tool


def fingerprint(value):
    return hashlib.sha256(value.encode()).hexdigest()[:12]


def record(ctx, name, **facts):
    log = dict(ctx.config).get("log")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"tool": name, "user": ctx.user_id, **facts}) + "\\n")


@tool(connections=["token"])
def whoami(ctx: ToolContext) -> str:
    """Say which account the user's token signs in as."""
    key = fingerprint(ctx.credential("token").reveal())
    record(ctx, "whoami", key=key)
    return "signed in with key " + key


@tool(connections=["org"])
def org_report(ctx: ToolContext) -> str:
    """Report on the organisation (one shared key)."""
    key = fingerprint(ctx.credential("org").reveal())
    record(ctx, "org_report", key=key)
    return "org key " + key


@tool(connections=["token", "org"])
def both(ctx: ToolContext) -> str:
    """Use the user's token and the organisation key."""
    keys = [fingerprint(ctx.credential(n).reveal()) for n in ("token", "org")]
    record(ctx, "both", keys=keys)
    return "keys " + " ".join(keys)


@tool(connections=["token"])
def leaky(how: str, ctx: ToolContext) -> str:
    """A careless tool: returns or raises with the credential object itself."""
    secret = ctx.credential("token")
    record(ctx, "leaky", how=how)
    if how == "raise":
        raise RuntimeError(f"the service refused {secret} ({secret!r})")
    return secret


@tool(connections=["token"])
def peek(ctx: ToolContext) -> str:
    """Reads a connection it does not list."""
    return ctx.credential("org").reveal()


@tool(connections=["token"], approval=True)
def delete_repo(repo: str, ctx: ToolContext) -> str:
    """Delete a repository (a person approves it first)."""
    key = fingerprint(ctx.credential("token").reveal())
    record(ctx, "delete_repo", key=key, repo=repo)
    return "deleted " + repo


@tool(connections=["oauth"])
def calendar(ctx: ToolContext) -> str:
    """Read the user's calendar (an OAuth token)."""
    key = fingerprint(ctx.credential("oauth").reveal())
    record(ctx, "calendar", key=key)
    return "calendar via " + key


async def oauth_callback(request):
    # A real plugin exchanges the code for a token and checks a signed `state`; the test's
    # token is derived from the code, and its state is the user id.
    code, user = request.query_params["code"], request.query_params["state"]
    oracle = request.app.state.oracle
    resumed = await oracle.supply_credential(
        "vaulted", "oauth", "oauth-token-for-" + code, user_id=user
    )
    return {"connected": True, "resumed": [r.status for r in resumed]}


@tool
def plain(text: str) -> str:
    """Needs no connection."""
    return "plain " + text


@hookimpl
def oracle_manifest():
    return PluginManifest(
        name="vaulted",
        summary="A service behind an API key.",
        when_to_use=["the user asks about their account"],
        visibility="always",
        connections=[
            Connection(name="token", help="A personal access token from Settings > Tokens."),
            Connection(name="org", per_user=False, help="The organisation's API key."),
            Connection(
                name="oauth", kind="oauth2", help="Sign in at /plugins/vaulted/oauth/start."
            ),
        ],
    )


@hookimpl
def oracle_tools():
    return [whoami, org_report, both, leaky, peek, delete_repo, calendar, plain]


@hookimpl
def oracle_routes():
    return [Route("/oauth/callback", oauth_callback, public=True)]
'''


def fingerprint(value: str) -> str:
    """What the plugin's tools report for a credential (its SHA-256, 12 hex digits)."""
    return hashlib.sha256(value.encode()).hexdigest()[:12]
