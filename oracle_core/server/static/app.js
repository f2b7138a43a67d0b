// The oracle chat page: plain JavaScript over the server's JSON and SSE API, no build step.
// Everything the server sends is put on the page with textContent, never as HTML.
"use strict";

const state = {
  token: localStorage.getItem("oracle.token") || "",
  thread: null,
  busy: false,
};

const $ = (id) => document.getElementById(id);

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
  const response = await fetch(path, { ...options, headers });
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
  $("model").textContent = `model: ${installed.model}`;
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

async function loadThreads() {
  const { threads } = await (await api("/threads?limit=50")).json();
  const list = $("threads");
  list.replaceChildren();
  for (const id of threads) {
    const item = el("li", id === state.thread ? "current" : "");
    const button = el("button", null, id);
    button.type = "button";
    button.addEventListener("click", () => openThread(id));
    item.append(button);
    list.append(item);
  }
}

// -- the conversation ----------------------------------------------------------------------

function newTurn(text) {
  const turn = el("li", "turn");
  turn.append(el("div", "msg user", text));
  $("log").append(turn);
  return { node: turn, text: null, calls: new Map() };
}

function addText(turn, text) {
  if (!turn.text) {
    turn.text = el("div", "msg assistant", "");
    turn.node.append(turn.text);
  }
  turn.text.textContent += text;
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

function addUsage(turn, usage) {
  if (!usage) return;
  const prompt = usage.prompt_tokens || 0;
  const completion = usage.completion_tokens || 0;
  const total = usage.total_tokens ?? prompt + completion;
  const text = `${total} tokens this turn (${prompt} prompt, ${completion} completion)`;
  turn.node.append(el("div", "turn-usage", text));
}

function addError(turn, message) {
  turn.node.append(el("div", "turn-error", message));
}

function scrollDown() {
  const log = $("log");
  log.scrollTop = log.scrollHeight;
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
      turn = newTurn(typeof m.content === "string" ? m.content : JSON.stringify(m.content));
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
  scrollDown();
}

async function openThread(id) {
  state.thread = id;
  location.hash = `thread=${encodeURIComponent(id)}`;
  $("thread-title").textContent = `thread ${id}`;
  try {
    const response = await api(`/threads/${encodeURIComponent(id)}`);
    renderThread(await response.json());
  } catch (error) {
    $("log").replaceChildren();
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
  else if (type === "tool_call") addToolCall(turn, data.id, data.name, data.arguments);
  else if (type === "tool_result") setToolResult(turn, data.id, data.content, data.is_error, data.refused);
  else if (type === "capability_loaded") addLoad(turn, data.names);
  else if (type === "error") addError(turn, data.message);
  else if (type === "done") {
    if (data.status === "completed") {
      if (data.answer && !turn.node.querySelector(".msg.assistant")) addText(turn, data.answer);
    } else {
      addError(turn, `run ${data.status}: ${data.error || ""}`);
    }
    addUsage(turn, data.usage);
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
