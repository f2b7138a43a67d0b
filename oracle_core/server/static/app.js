// The oracle chat page: plain JavaScript over the server's JSON and SSE API, no build step.
// Everything the server sends is put on the page with textContent, never as HTML, with one
// exception: an answer's Markdown, which POST /page/render returns already rendered and
// sanitized by the server (markdown-it-py, then nh3; see server/markdown.py).
"use strict";

const state = {
  token: localStorage.getItem("oracle.token") || "",
  thread: null,
  busy: false,
  installed: null,
};

// The parts of a model call's prompt, as the model_call event counts them.
const COST_PARTS = [
  ["tier1", "Tier-1"],
  ["meta_tools", "meta-tools"],
  ["tool_schemas", "tool schemas"],
  ["messages", "messages"],
];

// Texts per POST /page/render (the server takes up to 1000).
const RENDER_BATCH = 200;

// What rendered Markdown may hold (server/markdown.py allows no more): anything else and the
// answer stays plain text. A check, not a second sanitizer: it never rewrites, it refuses.
const MARKDOWN_TAGS = new Set([
  "P", "BR", "HR", "H1", "H2", "H3", "H4", "H5", "H6", "STRONG", "EM", "DEL", "S", "CODE",
  "PRE", "BLOCKQUOTE", "UL", "OL", "LI", "A", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD",
]);
const MARKDOWN_ATTRIBUTES = new Set(["href", "title", "rel", "target", "start"]);

const $ = (id) => document.getElementById(id);

// The path a reverse proxy serves the server under ("" when none; oracle serve --root-path):
// every API call starts with it.
const ROOT = document.querySelector('meta[name="oracle-root"]')?.content || "";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

class ApiError extends Error {}

async function api(path, options = {}) {
  const headers = { "Content-Type": "application/json", ...(options.headers || {}) };
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  const response = await fetch(ROOT + path, { ...options, headers });
  if (response.status === 401) {
    $("token-form").hidden = false;
    throw new ApiError("this server needs an API token: enter it above");
  }
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      message = (await response.json()).error.message;
    } catch (_) { /* not our error shape */ }
    throw new ApiError(message);
  }
  return response;
}

function setStatus(text) {
  $("status").textContent = text || "";
}

// -- the sidebar ---------------------------------------------------------------------------

async function loadInstalled() {
  const installed = await (await api("/plugins")).json();
  let loaded = new Set();
  if (state.thread) {
    const caps = await (await api(`/capabilities?thread_id=${encodeURIComponent(state.thread)}`)).json();
    loaded = new Set(caps.filter((c) => c.loaded).map((c) => c.name));
  }
  state.installed = installed;
  $("model").textContent = `model: ${installed.model}`;
  showWelcome();
  const list = $("plugins");
  list.replaceChildren();
  for (const plugin of installed.plugins) {
    const item = el("li", "plugin");
    item.dataset.plugin = plugin.name;
    item.append(el("strong", null, plugin.name));
    const tier = el("span", "tier", plugin.visibility);
    if (loaded.has(plugin.name)) {
      tier.classList.add("loaded");
      tier.textContent = plugin.visibility === "always" ? "always" : "loaded";
    }
    item.append(tier, el("div", "muted", plugin.summary));
    const tools = el("ul", "plugin-tools");
    for (const tool of plugin.tools) tools.append(el("li", null, tool.name));
    item.append(tools);
    list.append(item);
  }
  if (!installed.plugins.length) list.append(el("li", "muted", "no plugins installed"));
  const failures = $("failures");
  failures.replaceChildren();
  for (const failure of installed.failures) {
    failures.append(el("li", null, `${failure.plugin} failed: ${failure.error}`));
  }
}

// Each thread by its title (the first words of its first message), its id as the tooltip.
async function loadThreads() {
  const { summaries } = await (await api("/threads?limit=50")).json();
  const list = $("threads");
  list.replaceChildren();
  for (const { id, title } of summaries) {
    const item = el("li", id === state.thread ? "current" : "");
    item.dataset.thread = id;
    const button = el("button", title ? "thread-name" : "thread-name untitled", title || id);
    button.type = "button";
    button.title = id;
    button.addEventListener("click", () => openThread(id));
    item.append(button);
    list.append(item);
  }
}

// -- the welcome: what this oracle can do, from its registry --------------------------------

function plural(count, one, many) {
  return `${count} ${count === 1 ? one : many}`;
}

function showWelcome() {
  const log = $("log");
  const present = log.querySelector(".welcome");
  if (log.querySelector(".turn") || !state.installed) {
    if (present) present.remove();
    return;
  }
  const plugins = state.installed.plugins;
  const always = plugins.filter((p) => p.visibility === "always");
  const onDemand = plugins.filter((p) => p.visibility === "on-demand");
  const box = el("li", "welcome");
  box.append(el("h2", null, "What this oracle can do"));
  if (always.length) {
    box.append(el("p", null, "Always at hand:"));
    const list = el("ul", "welcome-always");
    for (const plugin of always) {
      const item = el("li");
      item.dataset.plugin = plugin.name;
      item.append(el("strong", null, plugin.title || plugin.name), ` — ${plugin.summary}`);
      list.append(item);
    }
    box.append(list);
  }
  if (onDemand.length) {
    const names = onDemand.slice(0, 8).map((p) => p.title || p.name).join(", ");
    const more = onDemand.length > 8 ? `, and ${onDemand.length - 8} more` : "";
    const count = plural(onDemand.length, "more capability", "more capabilities");
    box.append(el("p", "welcome-on-demand", `${count} it finds and loads when a request needs them: ${names}${more}.`));
  }
  if (!always.length && !onDemand.length) {
    box.append(el("p", null, "No capabilities are installed, so it can only talk: install plugins (pip install oracle-plugin-…) to give it tools."));
  }
  box.append(el("p", "muted", "Ask in plain words. Each tool call shows here as it happens, and a bar under each model call shows what its prompt cost in tokens."));
  if (present) present.replaceWith(box);
  else log.prepend(box);
}

// -- the conversation ----------------------------------------------------------------------

function newTurn(text) {
  const turn = el("li", "turn");
  turn.append(el("div", "msg user", text));
  const log = $("log");
  const welcome = log.querySelector(".welcome");
  if (welcome) welcome.remove();
  log.append(turn);
  return { node: turn, text: null, calls: new Map(), costs: [], streamed: false };
}

function addText(turn, text) {
  if (!turn.text) {
    turn.text = el("div", "msg assistant", "");
    turn.text.dataset.markdown = "pending"; // plain text until the answer is complete
    turn.node.append(turn.text);
  }
  turn.text.textContent += text;
  turn.streamed = true;
  scrollDown();
}

// Replace the plain text of finished answers with their Markdown, rendered and sanitized by
// the server. Should that fail, the plain text stays: still readable, never unsafe.
async function renderMarkdown(root) {
  const pending = [...root.querySelectorAll('.msg.assistant[data-markdown="pending"]')];
  for (let start = 0; start < pending.length; start += RENDER_BATCH) {
    const nodes = pending.slice(start, start + RENDER_BATCH);
    try {
      const response = await api("/page/render", {
        method: "POST",
        body: JSON.stringify({ texts: nodes.map((node) => node.textContent) }),
      });
      const { html } = await response.json();
      nodes.forEach((node, i) => {
        const parsed = markdownNodes(html[i]);
        if (!parsed) {
          node.dataset.markdown = "refused"; // not what the server's sanitizer makes: text stays
          return;
        }
        node.replaceChildren(...parsed);
        node.dataset.markdown = "rendered";
      });
    } catch (_) {
      return;
    }
  }
}

// The nodes of rendered Markdown, parsed inert (DOMParser runs nothing), or null when they
// hold a tag, an attribute or a link that the server's sanitizer never lets through.
function markdownNodes(html) {
  const parsed = new DOMParser().parseFromString(html, "text/html");
  if (parsed.head.childNodes.length) return null; // <script>, <style>, <meta>, ... land there
  const body = parsed.body;
  for (const element of body.querySelectorAll("*")) {
    if (!MARKDOWN_TAGS.has(element.tagName)) return null;
    for (const attribute of element.attributes) {
      if (!MARKDOWN_ATTRIBUTES.has(attribute.name)) return null;
    }
    if (element.hasAttribute("href") && !/^(https?:|mailto:)/i.test(element.getAttribute("href"))) {
      return null;
    }
  }
  return [...body.childNodes];
}

// One model call's prompt cost, as a stacked bar: Tier-1 block, meta-tools, tool schemas and
// messages. Bars of one turn share a scale, so a call that grew shows longer.
function addCallCost(turn, step, tokens) {
  turn.text = null; // the answer after this call starts below its bar
  const total = tokens.total ?? COST_PARTS.reduce((sum, [key]) => sum + (tokens[key] || 0), 0);
  if (!turn.costs.length) {
    const legend = el("div", "cost-legend");
    for (const [key, name] of COST_PARTS) {
      const entry = el("span", `legend legend-${key}`, name);
      legend.append(entry);
    }
    turn.node.append(legend);
  }
  const row = el("div", "call-cost");
  row.dataset.step = String(step);
  const track = el("div", "track");
  const bar = el("div", "bar");
  bar.setAttribute("role", "img");
  const parts = COST_PARTS.map(([key, name]) => `${name} ${tokens[key] || 0}`);
  bar.setAttribute("aria-label", `call ${step}: ${total} tokens (${parts.join(", ")})`);
  for (const [key, name] of COST_PARTS) {
    const count = tokens[key] || 0;
    const segment = el("span", `segment segment-${key}`);
    segment.dataset.tokens = String(count);
    segment.title = `${name}: ${count} tokens`;
    segment.style.flexGrow = String(count); // CSSOM, which the page's policy allows
    bar.append(segment);
  }
  track.append(bar);
  row.append(el("span", "call-label", `call ${step}`), track, el("span", "call-total", `${total} tokens`));
  turn.node.append(row);
  turn.costs.push({ bar, total });
  const largest = Math.max(1, ...turn.costs.map((c) => c.total));
  for (const cost of turn.costs) cost.bar.style.width = `${Math.max(2, (100 * cost.total) / largest)}%`;
  scrollDown();
}

function addToolCall(turn, id, name, args) {
  turn.text = null; // text after a tool call starts a new bubble
  const call = el("details", "tool-call pending");
  call.dataset.tool = name;
  const summary = el("summary");
  const shown = (args || "").length > 120 ? `${args.slice(0, 117)}...` : args || "";
  summary.append(el("span", "label", "tool"), el("span", "call", `${name}(${shown})`));
  call.append(summary, el("h3", null, "arguments"), el("pre", "arguments", args || "{}"));
  turn.node.append(call);
  turn.calls.set(id, call);
  scrollDown();
  return call;
}

function setToolResult(turn, id, content, isError, refused) {
  const call = turn.calls.get(id);
  if (!call) return;
  call.classList.remove("pending");
  if (isError) call.classList.add("error");
  if (refused) call.classList.add("refused");
  call.append(el("h3", null, refused ? "refused" : "result"), el("pre", "result", content));
}

function addLoad(turn, names) {
  turn.text = null;
  turn.node.append(el("div", "capability-load", `⚡ capability loaded: ${names.join(", ")}`));
}

// One line a turn: a run that waited and was resumed reports the whole run's usage again
// when it ends, so its line is replaced (and moved below the resumed part), not repeated.
function addUsage(turn, usage) {
  if (!usage) return;
  const prompt = usage.prompt_tokens || 0;
  const completion = usage.completion_tokens || 0;
  const total = usage.total_tokens ?? prompt + completion;
  // "used", as `oracle threads show` and the chat name what the provider reported
  const text = `used ${total} tokens this turn (${prompt} prompt + ${completion} completion)`;
  for (const old of turn.node.querySelectorAll(".turn-usage")) old.remove();
  turn.node.append(el("div", "turn-usage", text));
}

// -- approvals: a call that waits for a person --------------------------------------------

function addApproval(turn, operation) {
  const existing = turn.node.querySelector(`.approval[data-operation="${CSS.escape(operation.id)}"]`);
  if (existing) return existing;
  turn.text = null;
  const card = el("div", "approval pending");
  card.dataset.operation = operation.id;
  card.append(
    el("div", "approval-title", `Approval needed: ${operation.plugin}.${operation.tool}`),
    el("pre", "arguments", JSON.stringify(operation.arguments ?? {}, null, 2)),
  );
  if (operation.reason) card.append(el("div", "muted", operation.reason));
  const reason = el("input", "approval-reason");
  reason.type = "text";
  reason.placeholder = "Reason (optional; a denial's reason is told to the model)";
  const approve = el("button", "approve", "Approve");
  const deny = el("button", "deny", "Deny");
  approve.type = deny.type = "button";
  const actions = el("div", "approval-actions");
  actions.append(reason, approve, deny);
  const outcome = el("div", "approval-outcome");
  card.append(actions, outcome);
  approve.addEventListener("click", () => decide(turn, card, operation.id, true, reason.value));
  deny.addEventListener("click", () => decide(turn, card, operation.id, false, reason.value));
  turn.node.append(card);
  scrollDown();
  return card;
}

async function decide(turn, card, id, approved, reason) {
  for (const button of card.querySelectorAll("button")) button.disabled = true;
  const body = { approve: approved };
  if (reason.trim()) body.reason = reason.trim();
  setStatus(approved ? "approved: running it…" : "denied: telling the model…");
  try {
    const response = await api(`/operations/${encodeURIComponent(id)}/decision`, {
      method: "POST",
      body: JSON.stringify(body),
    });
    const { operation, run } = await response.json();
    card.classList.remove("pending");
    card.classList.add(operation.status);
    card.querySelector(".approval-outcome").textContent = operation.status;
    card.querySelector(".approval-actions").remove();
    for (const note of turn.node.querySelectorAll(".turn-waiting")) note.remove();
    // The resumed run's events, as if they had streamed: its calls, costs and answer.
    turn.streamed = false;
    for (const event of run.events || []) handleEvent(turn, event.type, event);
  } catch (error) {
    card.querySelector(".approval-outcome").textContent = error.message;
    for (const button of card.querySelectorAll("button")) button.disabled = false;
  } finally {
    setStatus("");
  }
  await Promise.all([loadThreads(), loadInstalled()]).catch((e) => setStatus(e.message));
}

// The approvals a thread still waits for, each on the last turn (after a reload).
async function showPendingApprovals(turn) {
  if (!turn || !state.thread) return;
  const query = `thread_id=${encodeURIComponent(state.thread)}&status=pending`;
  const { operations } = await (await api(`/operations?${query}`)).json();
  for (const operation of operations) if (operation.kind === "approval") addApproval(turn, operation);
}

function addError(turn, message) {
  turn.node.append(el("div", "turn-error", message));
}

function scrollDown() {
  const log = $("log");
  log.scrollTop = log.scrollHeight;
}

function contentText(content) {
  // A user message's text; of content parts, the text ones, each attached image as [image].
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p) => (p && p.type === "text" ? String(p.text || "") : p && p.type === "image_url" ? "[image]" : ""))
    .filter((t) => t)
    .join("\n\n");
}

function loadedNames(content) {
  try {
    const entries = JSON.parse(content);
    return Array.isArray(entries) ? entries.filter((e) => !e.alreadyAvailable).map((e) => e.name) : [];
  } catch (_) {
    return [];
  }
}

function renderThread(thread) {
  $("log").replaceChildren();
  const results = new Map();
  for (const m of thread.messages) if (m.role === "tool") results.set(m.tool_call_id, m.content);
  let turn = null;
  let index = -1;
  const finish = () => {
    if (turn && thread.runs[index]) {
      const run = thread.runs[index];
      if (run.status === "failed") addError(turn, `run failed: ${run.error}`);
      addUsage(turn, run.usage);
    }
  };
  for (const m of thread.messages) {
    if (m.role === "user") {
      finish();
      index += 1;
      turn = newTurn(contentText(m.content));
    } else if (m.role === "assistant" && turn) {
      if (m.content) addText(turn, m.content);
      for (const c of m.tool_calls || []) {
        addToolCall(turn, c.id, c.function.name, c.function.arguments);
        const result = results.get(c.id);
        if (result !== undefined) {
          setToolResult(turn, c.id, result, result.startsWith('{"error"'), false);
          if (c.function.name === "load_capability") {
            const names = loadedNames(result);
            if (names.length) addLoad(turn, names);
          }
        }
      }
    }
  }
  finish();
  showWelcome();
  scrollDown();
  renderMarkdown($("log"));
  return turn;
}

async function openThread(id) {
  state.thread = id;
  location.hash = `thread=${encodeURIComponent(id)}`;
  $("thread-title").textContent = `thread ${id}`;
  try {
    const response = await api(`/threads/${encodeURIComponent(id)}`);
    await showPendingApprovals(renderThread(await response.json()));
  } catch (error) {
    $("log").replaceChildren();
    showWelcome();
    if (!(error instanceof ApiError) || !/no thread/.test(error.message)) setStatus(error.message);
  }
  await Promise.all([loadThreads(), loadInstalled()]).catch((e) => setStatus(e.message));
}

async function newThread() {
  const { thread_id } = await (await api("/threads", { method: "POST" })).json();
  await openThread(thread_id);
}

// -- sending a message, reading the run's server-sent events ---------------------------------

function handleEvent(turn, type, data) {
  if (type === "text_delta") addText(turn, data.text);
  else if (type === "model_call") addCallCost(turn, data.step, data.tokens || {});
  else if (type === "tool_call") addToolCall(turn, data.id, data.name, data.arguments);
  else if (type === "tool_result") setToolResult(turn, data.id, data.content, data.is_error, data.refused);
  else if (type === "capability_loaded") addLoad(turn, data.names);
  else if (type === "approval_requested") addApproval(turn, data.operation);
  else if (type === "error") addError(turn, data.message);
  else if (type === "done") {
    if (data.status === "completed") {
      if (data.answer && !turn.streamed) addText(turn, data.answer);
    } else if (data.status === "waiting_for_approval") {
      turn.node.append(el("div", "turn-waiting muted", "waiting for a person's approval"));
    } else {
      addError(turn, `run ${data.status}: ${data.error || ""}`);
    }
    addUsage(turn, data.usage);
    renderMarkdown(turn.node);
  }
}

async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(type, JSON.parse(data.join("\n")));
    }
  }
}

async function send(text) {
  if (!state.thread) await newThread();
  const turn = newTurn(text);
  state.busy = true;
  $("send").disabled = true;
  setStatus("working…");
  try {
    const response = await api(`/threads/${encodeURIComponent(state.thread)}/runs`, {
      method: "POST",
      headers: { Accept: "text/event-stream" },
      body: JSON.stringify({ message: text, stream: true }),
    });
    await readEvents(response, (type, data) => handleEvent(turn, type, data));
    setStatus("");
  } catch (error) {
    addError(turn, error.message);
    setStatus("");
  } finally {
    state.busy = false;
    $("send").disabled = false;
    $("message").focus();
  }
  await Promise.all([loadThreads(), loadInstalled()]).catch((e) => setStatus(e.message));
}

// -- wiring ---------------------------------------------------------------------------------

function start() {
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("message").value.trim();
    if (!text || state.busy) return;
    $("message").value = "";
    send(text);
  });
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("new-thread").addEventListener("click", () => newThread().catch((e) => setStatus(e.message)));
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value.trim();
    localStorage.setItem("oracle.token", state.token);
    $("token-form").hidden = true;
    setStatus("");
    boot();
  });
  boot();
}

function boot() {
  const match = /thread=([^&]+)/.exec(location.hash);
  if (match) {
    openThread(decodeURIComponent(match[1]));
  } else {
    Promise.all([loadThreads(), loadInstalled()]).catch((e) => setStatus(e.message));
  }
}

start();
