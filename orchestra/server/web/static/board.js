// The board's live parts: plain JavaScript, no build step, nothing from the network.
// The run page reads the run's SSE stream (GET /v1/runs/{id}/stream) with fetch, so
// every event kind arrives and a reconnect resumes after the last seq shown
// (Last-Event-ID): no gap, no duplicate line. Other parts are re-rendered by the
// server (GET /runs/{id}/live) shortly after events arrive. What a model writes
// (model.delta events) goes to its agent's lane as it arrives, not to the list.

const $ = (sel, el = document) => el.querySelector(sel);
const TERMINAL = new Set(["run.completed", "run.failed", "run.cancelled", "run.paused"]);
const IDS = new Set(["task", "approval", "handoff", "owner"]);
const KEYS = ["role", "task", "step", "kind", "name", "tool", "attempt", "approved", "by",
  "to_role", "from", "status", "error", "cause", "owner"];

function fmtTime(at) {
  return new Date(at * 1000).toLocaleTimeString([], { hour12: false });
}

function summary(data) {
  if (data === null || typeof data !== "object") return data == null ? "" : String(data);
  const keys = KEYS.filter((k) => k in data).concat(Object.keys(data).filter((k) => !KEYS.includes(k)));
  return keys.map((k) => {
    let v = data[k];
    if (v !== null && typeof v === "object") v = JSON.stringify(v);
    v = String(v);
    if (IDS.has(k) && v.length > 8) v = v.slice(0, 6) + "…"; // ids: the page links the full ones
    if (v.length > 80) v = v.slice(0, 79) + "…";
    return `${k}=${v}`;
  }).join("  ");
}

function eventLine(ev) {
  const li = document.createElement("li");
  li.dataset.seq = ev.seq_id;
  li.dataset.kind = ev.kind;
  li.dataset.at = String(ev.at);
  li.dataset.shownAt = String(performance.timeOrigin + performance.now());
  li.className = "ev k-" + ev.kind.split(".")[0] + (TERMINAL.has(ev.kind) ? " terminal" : "");
  const parts = [["seq", "#" + ev.seq_id], ["at", fmtTime(ev.at)], ["kind", ev.kind],
    ["data", summary(ev.data)]];
  for (const [cls, text] of parts) {
    const span = document.createElement("span");
    span.className = cls;
    span.textContent = text;
    li.append(span);
  }
  return li;
}

// What each role is writing: its latest model call's text, from model.delta events (a
// role may write for several tasks at once: each task's call is kept whole). A call ends
// when its step completes, or is cut off when the same step is asked again (the process
// died mid-answer, or the adapter tried again).
const DELTA = "model.delta";
let deltasSeen = 0;

function writingOf(writing, ev) {
  const d = ev.data || {};
  if (ev.kind === "step.completed" || ev.kind === "step.failed") {
    let ended = false;
    for (const w of Object.values(writing)) {
      if (!w.done && w.task === d.task && w.step === d.step) w.done = ended = true;
    }
    return ended;
  }
  if (ev.kind !== DELTA) return false;
  const key = [d.task, d.retry, d.step, d.attempt, d.try || 1].join("/");
  const id = `${d.role}\n${d.task}`;
  let w = writing[id];
  if (!w || w.key !== key) {
    const cut = w && !w.done && w.step === d.step ?
      `attempt ${w.attempt} was interrupted; asked again:\n` : "";
    for (const [other, o] of Object.entries(writing)) {  // the role's ended calls: gone
      if (o.role === d.role && o.done) delete writing[other];
    }
    w = writing[id] = { key, role: d.role, task: d.task, step: d.step, attempt: d.attempt,
      text: "", cut, tool: null, done: false, seen: 0 };
  }
  w.seen = ++deltasSeen;
  w.text += d.text || "";
  for (const [index, name, args] of d.calls || []) {
    if (index !== w.tool) {
      w.text += (w.text && !w.text.endsWith("\n") ? "\n" : "") + `${name}(`;
      w.tool = index;
    }
    w.text += args;
  }
  if (w.text.length > 4000) w.text = w.text.slice(-4000);
  return true;
}

function paintWriting(writing) {
  const latest = {}; // role -> the call it wrote to last
  for (const w of Object.values(writing)) {
    if (!latest[w.role] || w.seen > latest[w.role].seen) latest[w.role] = w;
  }
  for (const pre of document.querySelectorAll("pre.writing[data-role]")) {
    const w = latest[pre.dataset.role];
    if (!w) continue;
    pre.hidden = false;
    pre.classList.toggle("done", w.done);
    const inner = document.createElement("span");
    if (w.cut) {
      const cut = document.createElement("span");
      cut.className = "cut";
      cut.textContent = w.cut;
      inner.append(cut);
    }
    inner.append(document.createTextNode(w.text));
    pre.replaceChildren(inner);
  }
}

function setState(text, cls) {
  const el = $("#stream-state");
  if (!el) return;
  el.textContent = text;
  el.className = "chip s-" + cls;
}

// A minimal SSE reader over fetch: frames are separated by a blank line.
async function readStream(url, lastId, onFrame, onBatch) {
  const headers = { Accept: "text/event-stream" };
  if (lastId > 0) headers["Last-Event-ID"] = String(lastId);
  const resp = await fetch(url, { headers, credentials: "same-origin", cache: "no-store" });
  if (resp.status === 401 || resp.status === 303) { location.href = "/login?next=" + encodeURIComponent(location.pathname); return; }
  if (!resp.ok || !resp.body) throw new Error("stream answered " + resp.status);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const raw = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const frame = {};
      for (const line of raw.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const key = i < 0 ? line : line.slice(0, i);
        const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        frame[key] = key === "data" && frame.data !== undefined ? frame.data + "\n" + val : val;
      }
      if (frame.event || frame.data) onFrame(frame);
    }
    onBatch();
  }
}

function runPage() {
  const body = document.body;
  const runId = body.dataset.run;
  const list = $("#events");
  const box = list; // the list scrolls, newest at the bottom
  let last = Number(body.dataset.from);
  let finished = false;
  let refreshTimer = null;

  function busy(part) {
    // never swap a part under the user's hands: focus, typed text or an open confirm
    if (part.contains(document.activeElement) && document.activeElement !== document.body) return true;
    if ([...part.querySelectorAll("input[type=text]")].some((i) => i.value)) return true;
    return [...part.querySelectorAll("details.confirm")].some((d) => d.open);
  }

  async function refresh() {
    refreshTimer = null;
    let parts;
    try {
      const resp = await fetch(`/runs/${encodeURIComponent(runId)}/live`, { credentials: "same-origin", cache: "no-store" });
      if (!resp.ok) return;
      parts = await resp.json();
    } catch {
      return; // the server is away: the stream's reconnect brings a refresh
    }
    for (const name of ["header", "lanes", "timeline", "approvals", "board"]) {
      const part = document.getElementById("part-" + name);
      if (part && !busy(part) && part.innerHTML !== parts[name]) part.innerHTML = parts[name];
    }
    paintWriting(writing); // the lanes were drawn anew: their text again
  }

  function scheduleRefresh(now) {
    if (refreshTimer !== null) return;
    refreshTimer = setTimeout(refresh, now ? 0 : 250);
  }

  let pending = document.createDocumentFragment();
  const writing = {}; // role -> its current model call's text
  let written = false;

  function add(ev) {
    if (ev.seq_id <= last) return; // already shown (a resumed stream never repeats, but be sure)
    last = ev.seq_id;
    written = writingOf(writing, ev) || written;
    if (ev.kind === DELTA) return; // in the lane, not the list
    pending.append(eventLine(ev));
    if (TERMINAL.has(ev.kind)) finished = true;
  }

  function flush() {
    // one layout per network chunk, not one per event: a long backlog renders at once
    if (written) { written = false; paintWriting(writing); }
    if (!pending.childNodes.length) return;
    const stick = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    list.append(pending);
    pending = document.createDocumentFragment();
    if (stick) box.scrollTop = box.scrollHeight;
    scheduleRefresh(finished);
  }

  function onFrame(frame) {
    if (frame.event === "stream.no_worker") {
      setState("no worker", "failed");
      return;
    }
    if (!frame.data || frame.id === undefined) return;
    let ev;
    try { ev = JSON.parse(frame.data); } catch { return; }
    setState("live", "running");
    add(ev);
  }

  async function follow() {
    const url = `/v1/runs/${encodeURIComponent(runId)}/stream?starting_after=${last}`;
    let delay = 500;
    while (!finished) {
      try {
        setState("live", "running");
        scheduleRefresh(true); // parts may have changed while disconnected
        await readStream(url, last, onFrame, flush);
        delay = 500;
        if (!finished && body.dataset.terminal === "true") finished = true;
      } catch (err) {
        setState("reconnecting", "waiting");
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 5000);
      }
    }
    setState("finished", "completed");
  }

  const older = $("#older");
  if (older) {
    older.addEventListener("click", async () => {
      const before = Number(older.dataset.before);
      const after = Math.max(0, before - 1 - 200);
      const resp = await fetch(`/runs/${encodeURIComponent(runId)}/events.json?after=${after}&limit=${before - 1 - after}`, { credentials: "same-origin" });
      if (!resp.ok) return;
      const events = await resp.json();
      const frag = document.createDocumentFragment();
      for (const ev of events) if (ev.kind !== DELTA) frag.append(eventLine(ev));
      list.prepend(frag);
      older.dataset.before = String(after + 1);
      if (after === 0) older.remove();
    });
  }
  // the newest stored events come inside the page (no round trip), the rest live
  for (const ev of JSON.parse($("#backlog").textContent || "[]")) add(ev);
  flush();
  const renderedAt = performance.now(); // navigation start -> the stored events are on screen
  window.board = { renderedAt, get last() { return last; }, get finished() { return finished; } };
  follow();
}

function runsPage() {
  const select = $("select[data-autosubmit]");
  if (select) select.addEventListener("change", () => select.form.submit());
  const table = $("table.runs");
  const rows = $("#run-rows");
  if (!table || !rows) return;
  setInterval(async () => {
    if (document.hidden) return;
    try {
      const resp = await fetch(table.dataset.live, { credentials: "same-origin", cache: "no-store" });
      if (!resp.ok) return;
      const data = await resp.json();
      if (rows.innerHTML !== data.rows) rows.innerHTML = data.rows;
    } catch {
      // the server is away for a moment: the next tick tries again
    }
  }, 2000);
}

if (document.body.dataset.page === "run") runPage();
if (document.body.dataset.page === "runs") runsPage();
