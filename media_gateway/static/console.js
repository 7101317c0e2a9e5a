// Baton human-agent console: browser calls transferred to a person wait here with their ticket;
// "Take call" bridges this page's microphone and speakers to the caller
// (see media_gateway/console_routes.py). Plain modern JS, no build step, no external resources.
"use strict";

(() => {
  const POLL_MS = 1000;
  // A received frame whose RMS is over this (of full scale) counts as sound, not silence.
  const SOUND_RMS = 0.003;

  const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);
  const ui = {
    status: byTestId("status"),
    operator: byTestId("operator"),
    queue: byTestId("queue"),
    empty: byTestId("queue-empty"),
    line: byTestId("line"),
    lineCall: byTestId("line-call"),
    hangup: byTestId("hangup-button"),
  };
  const stats = { polls: 0, framesSent: 0, audioFramesReceived: 0, soundFramesReceived: 0 };
  let phase = "idle"; // idle | taking | on-line
  let callId = null;
  let ws = null;
  let media = null; // { ctx, stream, close, player } while on the line
  let refusal = null; // the last take the gateway refused, shown until the next take

  // An operator opens the page as …/console#key=OPERATOR_KEY when the gateway requires one; the
  // fragment never leaves the browser except in this header, as on the softphone.
  function authHeaders(extra) {
    const headers = { ...extra };
    const key = new URLSearchParams(location.hash.slice(1)).get("key");
    if (key) headers.Authorization = `Bearer ${key}`;
    return headers;
  }

  function setStatus(text) {
    ui.status.textContent = text;
  }

  async function errorOf(response) {
    try {
      const body = await response.json();
      if (body && typeof body.error === "string") return body.error;
    } catch {
      // not JSON: the status says enough
    }
    return `the gateway answered ${response.status}`;
  }

  // --- the queue --------------------------------------------------------------------------

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text; // never innerHTML: tickets are caller data
    return node;
  }

  function section(title, testid, body) {
    const wrap = element("div");
    wrap.dataset.testid = testid;
    // An empty list says so rather than leaving a bare heading.
    wrap.append(element("h3", "", title), body.childElementCount ? body : element("p", "ticket__none", "none"));
    return wrap;
  }

  function renderTicket(call) {
    const ticket = call.ticket || {};
    const li = element("li", "ticket");
    li.dataset.callId = call.call_id;
    li.dataset.testid = "waiting-call";
    const head = element("div", "ticket__head");
    const label = call.target && call.target.label ? ` · for ${call.target.label}` : "";
    head.append(
      element("span", "ticket__call", `${call.call_id}${label}`),
      element("span", "ticket__wait", `waiting ${Math.round(call.waiting_s)} s`),
    );
    const reason = element("p", "ticket__reason", ticket.reason || "");
    reason.dataset.testid = "ticket-reason";
    const summary = element("p", "ticket__summary", ticket.summary || "");
    summary.dataset.testid = "ticket-summary";
    li.append(head, reason, summary);

    const facts = element("ul");
    for (const fact of ticket.key_facts || []) facts.append(element("li", "", fact));
    li.append(section("Key facts", "ticket-facts", facts));
    const data = element("dl");
    for (const [name, value] of Object.entries(ticket.collected_data || {})) {
      const shown = typeof value === "string" ? value : JSON.stringify(value);
      data.append(element("dt", "", name), element("dd", "", shown));
    }
    li.append(section("Collected data", "ticket-data", data));
    const hops = element("ol");
    for (const step of ticket.handoff_history || []) {
      const why = step.reason ? `: ${step.reason}` : "";
      hops.append(element("li", "", `${step.source} → ${step.target || "?"}${why}`));
    }
    li.append(section("Handoffs", "ticket-handoffs", hops));
    const said = element("ol");
    for (const line of ticket.last_utterances || []) said.append(element("li", "", line));
    li.append(section("Last words", "ticket-utterances", said));

    if (call.state === "taken") {
      const taken = element("p", "ticket__taken", `Taken by ${call.taken_by}`);
      taken.dataset.testid = "taken-by";
      li.append(taken);
    } else {
      const take = element("button", "btn btn--call", "Take call");
      take.type = "button";
      take.dataset.testid = "take-button";
      take.disabled = phase !== "idle";
      take.addEventListener("click", () => takeCall(call.call_id));
      li.append(take);
    }
    return li;
  }

  function showQueue(calls) {
    ui.queue.replaceChildren(...calls.map(renderTicket));
    ui.empty.hidden = calls.length > 0;
  }

  async function poll() {
    try {
      const response = await fetch("/api/console/calls", { headers: authHeaders() });
      if (!response.ok) {
        setStatus(`Cannot read the queue: ${await errorOf(response)}`);
        showQueue([]);
        return;
      }
      const body = await response.json();
      stats.polls++;
      showQueue(body.calls || []);
      if (phase === "idle" && !refusal) {
        const count = (body.calls || []).filter((c) => c.state === "waiting").length;
        setStatus(count ? `${count} waiting.` : "Nobody is waiting.");
      }
    } catch (error) {
      setStatus(`Cannot reach the gateway: ${error.message || error}`);
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  // --- taking a call ----------------------------------------------------------------------

  async function takeCall(id) {
    if (phase !== "idle") return;
    phase = "taking";
    refusal = null;
    setStatus(`Taking ${id}…`);
    // Created inside the click so the browser lets it play sound.
    const ctx = new AudioContext({ latencyHint: "interactive" });
    try {
      const response = await fetch(`/api/console/calls/${encodeURIComponent(id)}/take`, {
        method: "POST",
        headers: authHeaders({ "Content-Type": "application/json" }),
        body: JSON.stringify({ operator: ui.operator.value.trim() }),
      });
      if (!response.ok) throw new Error(await errorOf(response));
      const { take } = await response.json();
      const opened = await window.BatonAudio.openMicrophone(ctx, (frame) => {
        if (phase === "on-line" && ws && ws.readyState === WebSocket.OPEN) {
          ws.send(frame);
          stats.framesSent++;
        }
      });
      media = { ...opened, player: window.BatonAudio.createPlayer(ctx) };
      await ctx.resume();
      openLine(id, take);
    } catch (error) {
      refusal = `Could not take ${id}: ${error.message || error}`;
      setStatus(refusal);
      await release();
      ctx.close().catch(() => {});
      phase = "idle";
    }
  }

  function openLine(id, take) {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/console/line?take=${encodeURIComponent(take)}`);
    socket.binaryType = "arraybuffer";
    ws = socket;
    callId = id;
    socket.onmessage = (event) => {
      if (typeof event.data !== "string") {
        hear(event.data);
        return;
      }
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      if (message.type === "bridged") {
        phase = "on-line";
        ui.line.hidden = false;
        ui.lineCall.textContent = `Talking with the caller of ${id}`;
        setStatus(`On the line with ${id}.`);
      } else if (message.type === "ended") {
        setStatus(`Call ended: ${message.reason}.`);
      }
    };
    socket.onclose = (event) => {
      if (ws !== socket) return;
      if (phase !== "on-line") setStatus(`Could not take ${id}: ${event.reason || "the line was refused"}`);
      else if (event.reason) setStatus(`Call ended: ${event.reason}.`);
      finish();
    };
  }

  function hear(data) {
    if (!media) return;
    const pcm = new Int16Array(data, 0, data.byteLength >> 1);
    let energy = 0;
    for (let i = 0; i < pcm.length; i++) energy += (pcm[i] / 32768) ** 2;
    if (pcm.length && Math.sqrt(energy / pcm.length) > SOUND_RMS) stats.soundFramesReceived++;
    if (media.player.play(data) > 0) stats.audioFramesReceived++;
  }

  function hangUp() {
    if (!ws) return;
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "hangup" }));
    ws.close(1000, "the person hung up");
    setStatus(`Call ended: you hung up.`);
    finish();
  }

  async function release() {
    const held = media;
    media = null;
    if (!held) return;
    held.player.stop();
    await held.close();
  }

  function finish() {
    ws = null;
    callId = null;
    phase = "idle";
    ui.line.hidden = true;
    release();
  }

  ui.hangup.addEventListener("click", hangUp);
  window.addEventListener("pagehide", hangUp);
  poll();

  // Read-only counters for tests and debugging; they reveal nothing the page does not show.
  const api = {};
  for (const key of Object.keys(stats)) {
    Object.defineProperty(api, key, { enumerable: true, get: () => stats[key] });
  }
  Object.defineProperties(api, {
    state: { enumerable: true, get: () => phase },
    callId: { enumerable: true, get: () => callId },
  });
  Object.defineProperty(window, "agentConsole", { value: Object.freeze(api), enumerable: true });
})();
